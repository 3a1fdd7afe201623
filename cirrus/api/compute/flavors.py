"""``/flavors`` and their extra specs."""
from __future__ import annotations

import math
import re
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.paging import next_link, paginate
from cirrus.api.compute.parameters import (MAX_INT, boolean, encodable, integer,
                                           text)
from cirrus.api.wsgi import context, json_body, query_int, reply
from cirrus.compute import flavors as flavor_db
from cirrus.compute.exception import FlavorExtraSpecNotFound, FlavorMissing
from cirrus.exception import ValidationError

Version = tuple[int, int]
NAME_RE = re.compile(r"^(?! )[\w .-]{1,255}(?<! )$", re.UNICODE)
SPEC_KEY_RE = re.compile(r"^[\w.:-]{1,255}$")


def _base(request: Request) -> str:
    return request.app.state.settings.public_url.rstrip("/")


def _links(base: str, flavorid: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/flavors/{flavorid}"},
            {"rel": "bookmark", "href": f"{base}/compute/flavors/{flavorid}"}]


def view(base: str, f: dict[str, Any], version: Version, detail: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f["flavorid"], "name": f["name"], "links": _links(base, f["flavorid"])}
    if version >= (2, 55):
        out["description"] = f["description"]
    if not detail:
        return out
    out.update({"ram": f["memory_mb"], "vcpus": f["vcpus"], "disk": f["root_gb"],
                "OS-FLV-EXT-DATA:ephemeral": f["ephemeral_gb"], "OS-FLV-DISABLED:disabled": f["disabled"],
                "swap": f["swap"] if (f["swap"] or version >= (2, 75)) else "",
                "rxtx_factor": f["rxtx_factor"], "os-flavor-access:is_public": f["is_public"]})
    if version >= (2, 61):
        out["extra_specs"] = f["extra_specs"] or {}
    return out


TRUE_WORDS = frozenset({"1", "t", "true", "on", "y", "yes"})
FALSE_WORDS = frozenset({"0", "f", "false", "off", "n", "no"})


def _is_public_filter(request: Request) -> bool | None:
    """Nova's ``is_public`` query for admins: absent → True, ``none`` → every
    flavor (None), else a strict boolean (400 otherwise)."""
    raw = request.query_params.get("is_public")
    if raw is None:
        return True
    word = raw.strip().lower()
    if word == "none":
        return None
    if word in TRUE_WORDS | FALSE_WORDS:
        return word in TRUE_WORDS
    raise ValidationError(field="is_public", reason=f"Invalid is_public filter [{raw[:64]}]")


def _listable(rows: list[dict[str, Any]], is_public: bool | None, open_to: set[str]
              ) -> list[dict[str, Any]]:
    """Nova's filter: True → public ones and those open to the caller's
    project; False → private ones; None → all."""
    if is_public is None:
        return rows
    if is_public:
        return [r for r in rows if r["is_public"] or r["flavorid"] in open_to]
    return [r for r in rows if not r["is_public"]]


def _flavors_and_access(conn: Any, project_id: str | None
                        ) -> tuple[list[dict[str, Any]], set[str]]:
    return flavor_db.list_flavors(conn), flavor_db.open_to(conn, project_id)


async def _list(request: Request, detail: bool) -> Response:
    ctx = context(request)
    params = request.query_params
    is_public = _is_public_filter(request) if ctx.is_admin else True
    rows, open_to = await request.app.state.db.read(_flavors_and_access, ctx.project_id)
    rows = _listable(rows, is_public, open_to)
    if not ctx.is_admin:
        rows = [r for r in rows if not r["disabled"]]
    for key, column in (("minRam", "memory_mb"), ("minDisk", "root_gb")):
        minimum = query_int(request, key, None)
        if minimum is not None:
            rows = [r for r in rows if r[column] >= minimum]
    sort_key = {"id": "flavorid", "memory_mb": "memory_mb", "ram": "memory_mb", "vcpus": "vcpus",
                "root_gb": "root_gb", "disk": "root_gb", "name": "name", "flavorid": "flavorid",
                "swap": "swap", "ephemeral_gb": "ephemeral_gb", "rxtx_factor": "rxtx_factor",
                "created_at": "created_at"}.get(params.get("sort_key", "flavorid"))
    if sort_key is None:
        raise ValidationError(field="sort_key", reason=f"{params.get('sort_key')!r} is not valid")
    sort_dir = params.get("sort_dir", "asc")
    if sort_dir not in ("asc", "desc"):
        raise ValidationError(field="sort_dir", reason="must be asc or desc")
    rows.sort(key=lambda r: (r[sort_key] is None, r[sort_key]), reverse=sort_dir == "desc")
    rows, next_marker = paginate(request, rows, "flavorid")
    body: dict[str, Any] = {}
    if next_marker is not None:
        body["flavors_links"] = next_link(request, next_marker)
    version = api_version(request)
    body["flavors"] = [view(_base(request), r, version, detail) for r in rows]
    return reply(body)


async def index(request: Request) -> Response:
    return await _list(request, detail=False)


async def detail(request: Request) -> Response:
    return await _list(request, detail=True)


def _get_visible(conn: Any, flavorid: str, project_id: str | None, is_admin: bool
                 ) -> dict[str, Any] | None:
    return flavor_db.visible(conn, flavor_db.get_flavor(conn, flavorid), project_id, is_admin)


async def flavor_in_path(request: Request) -> dict[str, Any]:
    """The flavor in the path, as the caller may see it (404 otherwise)."""
    ctx = context(request)
    flavorid = request.path_params["flavor_id"]
    row = await request.app.state.db.read(_get_visible, flavorid, ctx.project_id, ctx.is_admin)
    if row is None:
        raise FlavorMissing(flavor_id=flavorid)
    return row


async def show(request: Request) -> Response:
    context(request)
    row = await flavor_in_path(request)
    return reply({"flavor": view(_base(request), row, api_version(request))})


def _int_field(data: dict[str, Any], key: str, default: int | None, minimum: int,
               maximum: int = MAX_INT) -> int:
    value = data.get(key, default)
    if value is None:
        raise ValidationError(field=key, reason=f"'{key}' is a required property")
    return integer(value, key, minimum=minimum, maximum=maximum)


# Nova's rxtx_factor: a number above 0, at most what a float column holds.
MAX_RXTX_FACTOR = 3.40282e38


def _rxtx_factor(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not (isinstance(value, int) or math.isfinite(value)) or \
            not 0 < value <= MAX_RXTX_FACTOR:
        raise ValidationError(field="rxtx_factor",
                              reason=f"must be a number above 0 and at most {MAX_RXTX_FACTOR}")
    return float(value)


def _description(value: Any) -> str | None:
    return None if value is None else text(value, "description", max_len=65535)


async def create(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:flavor:manage")
    body = await json_body(request)
    data = body.get("flavor") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise ValidationError(field="flavor", reason="'flavor' is a required object")
    allowed = {"name", "ram", "vcpus", "disk", "id", "OS-FLV-EXT-DATA:ephemeral", "swap",
               "rxtx_factor", "os-flavor-access:is_public", "description"}
    unknown = set(data) - allowed
    if unknown:
        raise ValidationError(field="flavor", reason=f"unexpected {', '.join(sorted(unknown))}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name.strip() and name or " "):
        raise ValidationError(field="name", reason=f"{name!r} is not a valid flavor name")
    flavorid = data.get("id")
    if flavorid is None:
        flavorid = str(uuid.uuid4())
    elif not isinstance(flavorid, (str, int)) or isinstance(flavorid, bool) or \
            not re.match(r"^(?! )[\w.-]{1,255}(?<! )$", str(flavorid)):
        raise ValidationError(field="id", reason=f"{flavorid!r} is not a valid flavor id")
    is_public = boolean(data.get("os-flavor-access:is_public", True), "os-flavor-access:is_public")
    rxtx = _rxtx_factor(data.get("rxtx_factor", 1.0))
    if "description" in data and api_version(request) < (2, 55):
        raise ValidationError(field="description", reason="is not allowed before 2.55")
    description = _description(data.get("description"))
    values = {"flavorid": str(flavorid), "name": name, "memory_mb": _int_field(data, "ram", None, 1),
              "vcpus": _int_field(data, "vcpus", None, 1), "root_gb": _int_field(data, "disk", None, 0),
              "ephemeral_gb": _int_field(data, "OS-FLV-EXT-DATA:ephemeral", 0, 0),
              "swap": _int_field(data, "swap", 0, 0), "rxtx_factor": rxtx,
              "is_public": is_public, "description": description, "extra_specs": {}}
    row = await request.app.state.db.run(flavor_db.create_flavor, values)
    return reply({"flavor": view(_base(request), row, api_version(request))})


async def update(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:flavor:manage")
    if api_version(request) < (2, 55):
        return reply({"badMethod": {"code": 405, "message": "Method not allowed"}}, status=405)
    body = await json_body(request)
    data = body.get("flavor") if isinstance(body, dict) else None
    if not isinstance(data, dict) or set(data) != {"description"}:
        raise ValidationError(field="flavor", reason="only 'description' can be updated")
    data = {"description": _description(data["description"])}
    row = await flavor_in_path(request)
    await request.app.state.db.run(flavor_db.update_flavor, row["flavorid"], data)
    row = await flavor_in_path(request)
    return reply({"flavor": view(_base(request), row, api_version(request))})


async def delete(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:flavor:manage")
    row = await flavor_in_path(request)
    await request.app.state.db.run(flavor_db.delete_flavor, row["flavorid"])
    return Response(status_code=202)


# -- extra specs ---------------------------------------------------------------
def _specs(data: Any, key: str) -> dict[str, str]:
    specs = data.get(key) if isinstance(data, dict) else None
    if not isinstance(specs, dict):
        raise ValidationError(field=key, reason=f"'{key}' is a required object")
    for k, v in specs.items():
        if not SPEC_KEY_RE.match(k):
            raise ValidationError(field=key, reason=f"invalid key {k!r}")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)) or len(str(v)) > 255:
            raise ValidationError(field=f"{key}/{k}", reason="must be a string of at most 255")
        if isinstance(v, str):
            encodable(v, f"{key}/{k}")
    return {k: str(v) for k, v in specs.items()}


async def list_specs(request: Request) -> Response:
    context(request)
    return reply({"extra_specs": (await flavor_in_path(request))["extra_specs"] or {}})


async def add_specs(request: Request) -> Response:
    policy.enforce(context(request), "compute:flavor:manage")
    specs = _specs(await json_body(request), "extra_specs")
    row = await flavor_in_path(request)
    merged = {**(row["extra_specs"] or {}), **specs}
    await request.app.state.db.run(flavor_db.update_flavor, row["flavorid"], {"extra_specs": merged})
    return reply({"extra_specs": specs})


async def show_spec(request: Request) -> Response:
    context(request)
    row = await flavor_in_path(request)
    key = request.path_params["key"]
    if key not in (row["extra_specs"] or {}):
        raise FlavorExtraSpecNotFound(flavor_id=row["flavorid"], key=key)
    return reply({key: row["extra_specs"][key]})


async def put_spec(request: Request) -> Response:
    policy.enforce(context(request), "compute:flavor:manage")
    body = await json_body(request)
    key = request.path_params["key"]
    if not isinstance(body, dict) or list(body) != [key]:
        raise ValidationError(field="body", reason="must hold exactly the key in the URL")
    spec = _specs({"spec": body}, "spec")
    row = await flavor_in_path(request)
    merged = {**(row["extra_specs"] or {}), **spec}
    await request.app.state.db.run(flavor_db.update_flavor, row["flavorid"], {"extra_specs": merged})
    return reply(spec)


async def delete_spec(request: Request) -> Response:
    policy.enforce(context(request), "compute:flavor:manage")
    row = await flavor_in_path(request)
    key = request.path_params["key"]
    specs = dict(row["extra_specs"] or {})
    if key not in specs:
        raise FlavorExtraSpecNotFound(flavor_id=row["flavorid"], key=key)
    specs.pop(key)
    await request.app.state.db.run(flavor_db.update_flavor, row["flavorid"], {"extra_specs": specs})
    return Response(status_code=200)  # Nova's: 200 with no body, not 204


ROUTES = [
    Route("/v2.1/flavors", index, methods=["GET"]),
    Route("/v2.1/flavors", create, methods=["POST"]),
    Route("/v2.1/flavors/detail", detail, methods=["GET"]),
    Route("/v2.1/flavors/{flavor_id}", show, methods=["GET"]),
    Route("/v2.1/flavors/{flavor_id}", update, methods=["PUT"]),
    Route("/v2.1/flavors/{flavor_id}", delete, methods=["DELETE"]),
    Route("/v2.1/flavors/{flavor_id}/os-extra_specs", list_specs, methods=["GET"]),
    Route("/v2.1/flavors/{flavor_id}/os-extra_specs", add_specs, methods=["POST"]),
    Route("/v2.1/flavors/{flavor_id}/os-extra_specs/{key}", show_spec, methods=["GET"]),
    Route("/v2.1/flavors/{flavor_id}/os-extra_specs/{key}", put_spec, methods=["PUT"]),
    Route("/v2.1/flavors/{flavor_id}/os-extra_specs/{key}", delete_spec, methods=["DELETE"]),
]
