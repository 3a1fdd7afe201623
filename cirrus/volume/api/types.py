"""``/v3/{project_id}/types``: volume types, extra specs and access (admin
writes; everyone reads the types they may see)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, query_boolean, text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.volume.api import schemas, views
from cirrus.volume.api.common import bs
from cirrus.volume.exception import VolumeTypeExtraSpecsNotFound


def _id(request: Request) -> str:
    return request.path_params["type_id"]


async def index(request: Request) -> Response:
    ctx = context(request)
    raw = request.query_params.get("is_public")
    is_public = None if raw in (None, "None", "none") else query_boolean(raw, "is_public")
    rows = await bs(request).types.list(ctx, True if raw is None else is_public)
    return reply({"volume_types": [views.volume_type(r, ctx.is_admin) for r in rows]})


async def show(request: Request) -> Response:
    ctx = context(request)
    row = await (bs(request).types.default(ctx) if _id(request) == "default"
                 else bs(request).types.get(ctx, _id(request)))
    return reply({"volume_type": views.volume_type(row, ctx.is_admin)})


async def create(request: Request) -> Response:
    args = schemas.volume_type_create(await json_body(request))
    row = await bs(request).types.create(context(request), **args)
    view = views.volume_type(row, True)
    view.pop("qos_specs_id")
    return reply({"volume_type": view})


async def update(request: Request) -> Response:
    values = schemas.volume_type_update(await json_body(request))
    row = await bs(request).types.update(context(request), _id(request), values)
    view = views.volume_type(row, True)
    view.pop("extra_specs")
    view.pop("qos_specs_id")
    view.pop("os-volume-type-access:is_public")
    return reply({"volume_type": view})


async def delete(request: Request) -> Response:
    await bs(request).types.delete(context(request), _id(request))
    return Response(status_code=202)


async def specs(request: Request) -> Response:
    row = await bs(request).types.get(context(request), _id(request))
    return reply({"extra_specs": row["extra_specs"] or {}})


async def set_specs(request: Request) -> Response:
    body = await json_body(request)
    if not isinstance(body, dict) or "extra_specs" not in body:
        raise bad("extra_specs", "'extra_specs' is a required property")
    new = schemas.extra_specs(body["extra_specs"])
    await bs(request).types.set_specs(context(request), _id(request), new)
    return reply({"extra_specs": new})


async def spec(request: Request) -> Response:
    row = await bs(request).types.get(context(request), _id(request))
    key = request.path_params["key"]
    if key not in (row["extra_specs"] or {}):
        raise VolumeTypeExtraSpecsNotFound(volume_type_id=row["id"], extra_specs_key=key[:255])
    return reply({key: row["extra_specs"][key]})


async def set_spec(request: Request) -> Response:
    key = request.path_params["key"]
    body = schemas.extra_specs(await json_body(request), "body")
    if len(body) != 1:
        raise bad("body", "Request body contains too many items")
    if key not in body:
        raise bad("body", "Request body and URI mismatch")
    await bs(request).types.set_specs(context(request), _id(request), body)
    return reply(body)


async def delete_spec(request: Request) -> Response:
    await bs(request).types.delete_spec(context(request), _id(request), request.path_params["key"])
    return Response(status_code=202)


async def access(request: Request) -> Response:
    projects = await bs(request).types.access(context(request), _id(request))
    return reply({"volume_type_access": [{"volume_type_id": _id(request), "project_id": p}
                                         for p in projects]})


async def action(request: Request) -> Response:
    body = await json_body(request)
    if not isinstance(body, dict) or len(body) != 1:
        raise bad("action", "the body must be an object with exactly one action")
    name, arg = next(iter(body.items()))
    if name not in ("addProjectAccess", "removeProjectAccess"):
        raise bad("action", f"There is no such action: {name[:64]}")
    if not isinstance(arg, dict) or "project" not in arg:
        raise bad("project", "'project' is a required property")
    project = text(arg["project"], "project", min_len=1, max_len=64)
    await bs(request).types.set_access(context(request), _id(request), project,
                                       grant=name == "addProjectAccess")
    return Response(status_code=202)
