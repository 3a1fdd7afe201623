"""``/servers/{id}/metadata``: the user's key/value pairs on a server."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.parameters import metadata
from cirrus.api.compute.views import reply_stored
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.compute.exception import MetadataNotFound
from cirrus.exception import ValidationError


def _body(data: Any, key: str) -> dict[str, str]:
    if not isinstance(data, dict) or key not in data:
        raise ValidationError(field=key, reason=f"'{key}' is a required property")
    return metadata(data[key], key)


async def index(request: Request) -> Response:
    row = await request.app.state.compute_api.get(context(request), request.path_params["server_id"])
    return reply_stored({"metadata": row["metadata"] or {}})


async def _write(request: Request, replace: bool) -> Response:
    meta = _body(await json_body(request), "metadata")
    result = await request.app.state.compute_api.update_metadata(
        context(request), request.path_params["server_id"], meta, replace=replace)
    return reply({"metadata": result})


async def merge(request: Request) -> Response:
    return await _write(request, replace=False)


async def replace_all(request: Request) -> Response:
    return await _write(request, replace=True)


async def show_item(request: Request) -> Response:
    row = await request.app.state.compute_api.get(context(request), request.path_params["server_id"])
    key = request.path_params["key"]
    if key not in (row["metadata"] or {}):
        raise MetadataNotFound(key=key)
    return reply_stored({"meta": {key: row["metadata"][key]}})


async def put_item(request: Request) -> Response:
    meta = _body(await json_body(request), "meta")
    key = request.path_params["key"]
    if list(meta) != [key]:
        raise ValidationError(field="meta", reason="the body must hold exactly the key in the URL")
    await request.app.state.compute_api.update_metadata(
        context(request), request.path_params["server_id"], meta)
    return reply({"meta": meta})


async def delete_item(request: Request) -> Response:
    await request.app.state.compute_api.update_metadata(
        context(request), request.path_params["server_id"], {},
        delete_key=request.path_params["key"])
    return no_content()


ROUTES = [
    Route("/v2.1/servers/{server_id}/metadata", index, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/metadata", merge, methods=["POST"]),
    Route("/v2.1/servers/{server_id}/metadata", replace_all, methods=["PUT"]),
    Route("/v2.1/servers/{server_id}/metadata/{key}", show_item, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/metadata/{key}", put_item, methods=["PUT"]),
    Route("/v2.1/servers/{server_id}/metadata/{key}", delete_item, methods=["DELETE"]),
]
