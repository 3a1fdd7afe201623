"""``os-quota-class-sets`` (admin): named sets of limits. The class
"default" holds the defaults of every project without its own limit, so
updating it changes what ``os-quota-sets`` shows and what creates may use
(Nova's legacy quota driver); another class is kept and shown, unused."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import MAX_INT, bad, integer
from cirrus.api.wsgi import context, json_body, reply
from cirrus.compute import quotas
from cirrus.exception import Invalid

Version = tuple[int, int]
NETWORK = ("fixed_ips", "floating_ips", "security_groups", "security_group_rules")
PERSONALITY = ("injected_files", "injected_file_content_bytes", "injected_file_path_bytes")
SERVER_GROUPS = ("server_groups", "server_group_members")
# Every quota a class may set: Nova's quota resources ("networks" is taken
# below 2.50 and kept nowhere: it names no resource any more).
RESOURCES = (*quotas.ALL_RESOURCES, *quotas.UNENFORCED)


def shown(version: Version) -> tuple[str, ...]:
    """The quotas a class set shows: no server group ones below 2.50, no
    nova-network ones from 2.50, no personality ones from 2.57."""
    hidden: tuple[str, ...]
    if version < (2, 50):
        hidden = SERVER_GROUPS
    else:
        hidden = NETWORK + PERSONALITY if version >= (2, 57) else NETWORK
    return tuple(r for r in RESOURCES if r not in hidden)


def settable(version: Version) -> frozenset[str]:
    """The keys an update may carry at ``version`` (Nova's update schemas)."""
    if version < (2, 50):
        return frozenset((*RESOURCES, "networks"))
    return frozenset(shown(version))


def _class_name(request: Request) -> str:
    name = request.path_params["class_name"]
    if not 1 <= len(name) <= 255:  # Nova's check_string_length of quota_class_name
        raise Invalid("quota_class_name has a maximum length of 255 characters.")
    return name


def _updates(body: Any, version: Version) -> dict[str, int]:
    """``{"quota_class_set": {quota: limit}}`` checked: known quotas, each an
    integer from -1 (unlimited) to the database's maximum."""
    if not isinstance(body, dict) or set(body) != {"quota_class_set"}:
        raise bad("quota_class_set", "is a required property (and the only one)")
    values = body["quota_class_set"]
    if not isinstance(values, dict):
        raise bad("quota_class_set", "is not of type 'object'")
    allowed = settable(version)
    out = {}
    for key, value in values.items():
        if key not in allowed:
            raise bad(f"quota_class_set/{str(key)[:64]}", "is not a quota")
        out[key] = integer(value, f"quota_class_set/{key}", minimum=-1, maximum=MAX_INT)
    out.pop("networks", None)
    return out


def _view(limits: dict[str, int], version: Version) -> dict[str, int]:
    return {k: limits[k] for k in shown(version)}


async def show(request: Request) -> Response:
    context(request)
    name = request.path_params["class_name"]
    limits = await request.app.state.db.read(quotas.class_limits, request.app.state.settings,
                                             name)
    return reply({"quota_class_set": {"id": name, **_view(limits, api_version(request))}})


async def update(request: Request) -> Response:
    context(request)
    name = _class_name(request)
    version = api_version(request)
    values = _updates(await json_body(request), version)
    db, settings = request.app.state.db, request.app.state.settings
    await db.run(quotas.set_class_limits, name, values)
    limits = await db.read(quotas.class_limits, settings, name)
    return reply({"quota_class_set": _view(limits, version)})  # Nova's answer has no id


ROUTES = [
    Route("/v2.1/os-quota-class-sets/{class_name}", show, methods=["GET"]),
    Route("/v2.1/os-quota-class-sets/{class_name}", update, methods=["PUT"]),
]
