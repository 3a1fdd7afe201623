"""``os-quota-sets`` and ``limits``: what a project may use and does use."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import MAX_INT, integer
from cirrus.api.wsgi import context, json_body, reply
from cirrus.compute import exception as exc
from cirrus.compute import quotas
from cirrus.compute.scope import require_project
from cirrus.exception import ValidationError

# Quotas cirrus does not enforce but clients expect to see (quotas.UNENFORCED).
STATIC = ("metadata_items", "injected_files", "injected_file_content_bytes",
          "injected_file_path_bytes")
# Nova-network's quotas, shown (unlimited: Nova no longer counts them) below 2.36.
LEGACY_NETWORK = ("fixed_ips", "floating_ips", "security_groups", "security_group_rules")
PERSONALITY = ("injected_files", "injected_file_content_bytes", "injected_file_path_bytes")


def _quota_keys(version: tuple[int, int]) -> frozenset[str]:
    """The quotas of a quota set at ``version`` (Nova drops nova-network's at
    2.36, the personality ones at 2.57)."""
    keys = set(quotas.ALL_RESOURCES) | set(STATIC)
    if version < (2, 36):
        keys |= set(LEGACY_NETWORK)
    if version >= (2, 57):
        keys -= set(PERSONALITY)
    return frozenset(keys)


def _quota_set(project_id: str, limits: dict[str, int], version: tuple[int, int]) -> dict[str, Any]:
    """``limits`` (every quota, :func:`quotas.limits`) as shown at ``version``."""
    return {"id": project_id, **{k: limits[k] for k in sorted(_quota_keys(version))}}


async def show(request: Request) -> Response:
    ctx = context(request)
    project_id = request.path_params["project_id"]
    policy.enforce(ctx, "compute:server:get", {"project_id": project_id})
    settings = request.app.state.settings
    limits = await request.app.state.db.read(quotas.limits, settings, project_id)
    return reply({"quota_set": _quota_set(project_id, limits, api_version(request))})


async def detail(request: Request) -> Response:
    ctx = context(request)
    project_id = request.path_params["project_id"]
    policy.enforce(ctx, "compute:server:get", {"project_id": project_id})
    settings = request.app.state.settings

    def load(conn: Any) -> tuple[dict[str, int], dict[str, int]]:
        user = ctx.user_id if project_id == ctx.project_id else None
        return quotas.limits(conn, settings, project_id), quotas.usage(conn, project_id, user)
    limits, used = await request.app.state.db.read(load)
    body = {k: ({"limit": v, "in_use": used.get(k, 0), "reserved": 0} if isinstance(v, int) else v)
            for k, v in _quota_set(project_id, limits, api_version(request)).items()}
    return reply({"quota_set": body})


async def defaults(request: Request) -> Response:
    context(request)
    limits = await request.app.state.db.read(quotas.class_limits, request.app.state.settings,
                                             quotas.DEFAULT_CLASS)
    return reply({"quota_set": _quota_set(request.path_params["project_id"], limits,
                                          api_version(request))})


async def update(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:quotas:update")
    body = await json_body(request)
    values = body.get("quota_set") if isinstance(body, dict) else None
    if not isinstance(values, dict):
        raise ValidationError(field="quota_set", reason="is a required object")
    if "force" in values and not isinstance(values["force"], (bool, str)):
        raise ValidationError(field="quota_set/force", reason="must be a boolean")
    values = {k: v for k, v in values.items() if k != "force"}
    version = api_version(request)
    # "networks" stays in the 2.1 schema, so that clients may send it, and is
    # refused there (Nova's "removed"); from 2.36 it is unknown like the others.
    allowed = _quota_keys(version) | ({"networks"} if version < (2, 36) else set())
    for key, value in values.items():
        if key not in allowed:
            raise ValidationError(field=f"quota_set/{str(key)[:64]}", reason="is not a quota")
        # Nova's _common_quota: -1 (unlimited) up to its integer columns' maximum.
        values[key] = integer(value, f"quota_set/{key}", minimum=-1, maximum=MAX_INT)
    if "networks" in values:
        raise exc.InvalidRequest(reason="The networks quota has been removed")
    project_id = _project_in_path(request)
    enforced = {k: v for k, v in values.items() if k in quotas.ALL_RESOURCES}
    await request.app.state.db.run(quotas.set_limits, project_id, enforced)
    settings = request.app.state.settings
    limits = await request.app.state.db.read(quotas.limits, settings, project_id)
    body = _quota_set(project_id, limits, version)
    body.pop("id")
    return reply({"quota_set": body})


async def revert(request: Request) -> Response:
    policy.enforce(context(request), "compute:quotas:update")
    await request.app.state.db.run(quotas.reset_limits, _project_in_path(request))
    return Response(status_code=202)  # Nova answers a quota delete with 202


def _project_in_path(request: Request) -> str:
    """The project id of a quota write: what a project id column can hold."""
    project_id = request.path_params["project_id"]
    if not 1 <= len(project_id) <= 64 or not project_id.replace("-", "").isalnum() \
            or not project_id.isascii():
        raise ValidationError(field="project_id", reason="is not a project id")
    return project_id


async def limits(request: Request) -> Response:
    ctx = context(request)
    settings = request.app.state.settings
    own_project = require_project(ctx)
    project_id = request.query_params.get("tenant_id") if ctx.is_admin else None
    project_id = project_id or own_project

    def load(conn: Any) -> tuple[dict[str, int], dict[str, int]]:
        return quotas.limits(conn, settings, project_id), quotas.usage(conn, project_id, ctx.user_id)
    lim, used = await request.app.state.db.read(load)
    absolute = {"maxTotalInstances": lim["instances"], "maxTotalCores": lim["cores"],
                "maxTotalRAMSize": lim["ram"], "maxTotalKeypairs": lim["key_pairs"],
                "maxServerMeta": lim["metadata_items"], "maxServerGroups": lim["server_groups"],
                "maxServerGroupMembers": lim["server_group_members"],
                "totalInstancesUsed": used["instances"], "totalCoresUsed": used["cores"],
                "totalRAMUsed": used["ram"], "totalServerGroupsUsed": used["server_groups"]}
    version = api_version(request)
    if version < (2, 57):
        absolute.update(maxPersonality=lim["injected_files"],
                        maxPersonalitySize=lim["injected_file_content_bytes"])
    if version < (2, 39):
        absolute["maxImageMeta"] = lim["metadata_items"]
    if version < (2, 36):
        absolute.update(maxSecurityGroups=10, maxSecurityGroupRules=20, maxTotalFloatingIps=10,
                        totalFloatingIpsUsed=0, totalSecurityGroupsUsed=0)
    return reply({"limits": {"rate": [], "absolute": absolute}})


ROUTES = [
    Route("/v2.1/os-quota-sets/{project_id}", show, methods=["GET"]),
    Route("/v2.1/os-quota-sets/{project_id}", update, methods=["PUT"]),
    Route("/v2.1/os-quota-sets/{project_id}", revert, methods=["DELETE"]),
    Route("/v2.1/os-quota-sets/{project_id}/detail", detail, methods=["GET"]),
    Route("/v2.1/os-quota-sets/{project_id}/defaults", defaults, methods=["GET"]),
    Route("/v2.1/limits", limits, methods=["GET"]),
]
