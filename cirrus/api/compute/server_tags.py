"""``/servers/{id}/tags`` (2.26): list, replace, clear a server's tags; check,
add, remove one."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import require
from cirrus.api.compute.parameters import bad
from cirrus.api.compute.server_schema import tag as checked_tag, tags as checked_tags
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.compute import server_tags, tags
from cirrus.compute.exception import InstanceTagNotFound
from cirrus.exception import ValidationError

TAGS = (2, 26)


async def _server(request: Request) -> dict[str, Any]:
    """The server of the path, if the caller may see it (404 otherwise)."""
    require(request, TAGS)
    return await request.app.state.compute_api.get(context(request),
                                                   request.path_params["server_id"])


def _tag_in_path(request: Request) -> str:
    tag = request.path_params["tag"]
    try:
        return checked_tag(tag, "tag")
    except ValidationError as error:  # reworded as Nova words it
        raise bad("tag", f"Tag '{tag[:80]}' is invalid. It must be a non empty string without "
                         f"characters '/' and ','. Validation error message: "
                         f"{error.kwargs.get('reason')}") from None


def parse_update_all(body: Any) -> list[str]:
    """``PUT /tags`` body (Nova's ``update_all`` schema) → the tags."""
    if not isinstance(body, dict) or "tags" not in body:
        raise bad("tags", "'tags' is a required property")
    if set(body) != {"tags"}:
        raise bad("tags", "Additional properties are not allowed")
    return checked_tags(body["tags"])


async def _no_body(request: Request) -> None:
    """Nova's ``update`` schema for one tag: no body, or JSON ``null`` (read
    within the body limit, as every body)."""
    headers = request.headers
    if headers.get("content-length", "0") == "0" and "transfer-encoding" not in headers:
        return
    if await json_body(request) is not None:
        raise bad("body", "None is the only body allowed (the tag is in the URL)")


async def index(request: Request) -> Response:
    row = await _server(request)
    found = await request.app.state.db.read(tags.instance_tag_get_by_instance_uuid, row["uuid"])
    return reply({"tags": found})


async def show(request: Request) -> Response:
    row = await _server(request)
    tag = request.path_params["tag"]
    if not await request.app.state.db.read(tags.instance_tag_exists, row["uuid"], tag):
        raise InstanceTagNotFound(instance_id=row["uuid"], tag=tag)
    return no_content()


async def update_all(request: Request) -> Response:
    row = await _server(request)
    new_tags = parse_update_all(await json_body(request))
    return reply({"tags": await server_tags.update_all(request.app.state.db, row["uuid"],
                                                       new_tags)})


async def update(request: Request) -> Response:
    row = await _server(request)
    tag = _tag_in_path(request)
    await _no_body(request)
    if not await server_tags.update(request.app.state.db, row["uuid"], tag):
        return no_content()
    base = request.app.state.settings.public_url.rstrip("/")
    # Quoted: a tag may hold any character but ',' and '/', a header only Latin-1.
    return Response(status_code=201, headers={
        "Location": f"{base}/compute/v2.1/servers/{row['uuid']}/tags/{quote(tag, safe='')}"})


async def delete(request: Request) -> Response:
    row = await _server(request)
    await server_tags.delete(request.app.state.db, row["uuid"], request.path_params["tag"])
    return no_content()


async def delete_all(request: Request) -> Response:
    row = await _server(request)
    await server_tags.delete_all(request.app.state.db, row["uuid"])
    return no_content()


ROUTES = [
    Route("/v2.1/servers/{server_id}/tags", index, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/tags", update_all, methods=["PUT"]),
    Route("/v2.1/servers/{server_id}/tags", delete_all, methods=["DELETE"]),
    Route("/v2.1/servers/{server_id}/tags/{tag}", show, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/tags/{tag}", update, methods=["PUT"]),
    Route("/v2.1/servers/{server_id}/tags/{tag}", delete, methods=["DELETE"]),
]
