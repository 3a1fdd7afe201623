"""``/v3/{project_id}/group_types`` (3.11): group types and their specs."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, boolean, query_boolean, text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.volume.api import schemas
from cirrus.volume.api.common import bs
from cirrus.volume.api.microversion import require
from cirrus.volume.group_types import GroupTypeSpecsNotFound

Row = dict[str, Any]
V311 = (3, 11)


def _id(request: Request) -> str:
    return request.path_params["group_type_id"]


def _view(row: Row) -> Row:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "is_public": bool(row["is_public"]), "group_specs": row["group_specs"] or {}}


def _fields(body: Row, create: bool) -> Row:
    extra = sorted(set(body) - {"name", "description", "is_public", "group_specs"})
    if extra:
        raise bad("group_type", f"Additional properties are not allowed ({extra[0][:40]!r})")
    if create and "name" not in body:
        raise bad("name", "'name' is a required property")
    out: Row = {}
    if "name" in body:
        out["name"] = text(body["name"], "name", min_len=1, max_len=255)
    if "description" in body or create:
        out["description"] = schemas.nullable_text(body.get("description"), "description")
    if "is_public" in body or create:
        out["is_public"] = boolean(body.get("is_public", True), "is_public")
    if "group_specs" in body or create:
        out["group_specs"] = schemas.extra_specs(body.get("group_specs", {}), "group_specs")
    return out


async def index(request: Request) -> Response:
    require(request, V311)
    raw = request.query_params.get("is_public")
    is_public = None if raw in (None, "None", "none") else query_boolean(raw, "is_public")
    rows = await bs(request).group_types.list(context(request), True if raw is None else is_public)
    sort = request.query_params.get("sort", "")
    if sort.startswith("name"):
        rows.sort(key=lambda r: r["name"], reverse=sort.endswith(":desc"))
    return reply({"group_types": [_view(r) for r in rows]})


async def show(request: Request) -> Response:
    require(request, V311)
    return reply({"group_type": _view(await bs(request).group_types.get(context(request),
                                                                        _id(request)))})


async def create(request: Request) -> Response:
    require(request, V311)
    values = _fields(schemas.wrapped(await json_body(request), "group_type"), create=True)
    return reply({"group_type": _view(await bs(request).group_types.create(values))}, status=202)


async def update(request: Request) -> Response:
    require(request, V311)
    values = _fields(schemas.wrapped(await json_body(request), "group_type"), create=False)
    if not values:
        raise bad("group_type", "should be non-empty")
    row = await bs(request).group_types.update(context(request), _id(request), values)
    return reply({"group_type": _view(row)})


async def delete(request: Request) -> Response:
    require(request, V311)
    await bs(request).group_types.delete(context(request), _id(request))
    return Response(status_code=202)


async def specs(request: Request) -> Response:
    require(request, V311)
    row = await bs(request).group_types.get(context(request), _id(request))
    return reply({"group_specs": row["group_specs"] or {}})


async def set_specs(request: Request) -> Response:
    require(request, V311)
    body = await json_body(request)
    if not isinstance(body, dict) or "group_specs" not in body:
        raise bad("group_specs", "'group_specs' is a required property")
    new = schemas.extra_specs(body["group_specs"], "group_specs")
    await bs(request).group_types.update(context(request), _id(request), {"group_specs": new})
    return reply({"group_specs": new}, status=202)


async def spec(request: Request) -> Response:
    require(request, V311)
    row = await bs(request).group_types.get(context(request), _id(request))
    key = request.path_params["key"]
    if key not in (row["group_specs"] or {}):
        raise GroupTypeSpecsNotFound(group_type_id=row["id"], key=key[:255])
    return reply({key: row["group_specs"][key]})


async def set_spec(request: Request) -> Response:
    require(request, V311)
    key = request.path_params["key"]
    body = schemas.extra_specs(await json_body(request), "body")
    if set(body) != {key}:
        raise bad("body", "Request body and URI mismatch")
    await bs(request).group_types.update(context(request), _id(request), {"group_specs": body})
    return reply(body)


async def delete_spec(request: Request) -> Response:
    require(request, V311)
    await bs(request).group_types.update(context(request), _id(request),
                                         {"drop_spec": request.path_params["key"]})
    return Response(status_code=202)
