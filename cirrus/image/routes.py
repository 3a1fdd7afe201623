"""Image service v2 HTTP API (Glance): images, members, tags, actions, schemas;
staging, import, tasks and ``/v2/info`` in :mod:`cirrus.image.import_routes`,
metadata definitions in :mod:`cirrus.image.metadefs.routes`."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from cirrus.api.errors import error_response
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.image import exception as exc
from cirrus.image import actions, import_routes, patch, query
from cirrus.image.metadefs.routes import ROUTES as METADEF_ROUTES
from cirrus.image.metadefs.schemas import SCHEMAS as METADEF_SCHEMAS
from cirrus.image.views import (IMAGE_SCHEMA, MEMBER_SCHEMA, TASK_LISTED, TASK_SCHEMA,
                                collection_schema, image_view, member_view)

VERSIONS = ("2.16", "2.15", "2.14", "2.13", "2.12", "2.11", "2.10", "2.9", "2.8", "2.7", "2.6",
            "2.5", "2.4", "2.3", "2.2", "2.1", "2.0")


def _images(request: Request) -> Any:
    return request.app.state.images


async def versions(request: Request) -> Response:
    base = request.app.state.settings.public_url.rstrip("/") + "/image"
    values = [{"id": f"v{v}", "status": "CURRENT" if i == 0 else "SUPPORTED",
               "links": [{"rel": "self", "href": f"{base}/v2/"}]} for i, v in enumerate(VERSIONS)]
    return reply({"versions": values}, status=300 if request.url.path.endswith("/image/") else 200)


async def create(request: Request) -> Response:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise exc.InvalidImage(reason="The request body must be a JSON object.")
    row = await _images(request).create(context(request), body)
    return reply(image_view(row), status=201,
                 headers={"Location": f"{request.url}/{row['id']}"})


async def index(request: Request) -> Response:
    params = request.query_params
    wanted = query.parse(params)
    rows = await _images(request).list(context(request), wanted)
    body: dict[str, Any] = {"images": [image_view(r) for r in rows], "schema": "/v2/schemas/images",
                            "first": "/v2/images"}
    if len(rows) == wanted.limit and rows:
        rest = urlencode([(k, v) for k, v in params.multi_items() if k != "marker"])
        body["next"] = f"/v2/images?{rest}&marker={rows[-1]['id']}".replace("?&", "?")
    return reply(body)


async def show(request: Request) -> Response:
    return reply(image_view(await _images(request).get(context(request), request.path_params["image_id"])))


async def update(request: Request) -> Response:
    try:
        draft = patch.draft_of(request.headers.get("content-type"))
    except exc.UnsupportedMediaType as e:
        return error_response(e.code, e.format_message(), "image",
                              headers={"Accept-Patch": patch.ACCEPT_PATCH})
    changes = patch.parse(await json_body(request), draft)
    row = await _images(request).update(context(request), request.path_params["image_id"], changes)
    return reply(image_view(row))


async def delete(request: Request) -> Response:
    await _images(request).delete(context(request), request.path_params["image_id"])
    return no_content()


async def upload(request: Request) -> Response:
    import_routes.octet_stream(request)
    await _images(request).upload(context(request), request.path_params["image_id"],
                                  request.stream())
    return no_content()


async def download(request: Request) -> Response:
    row, chunks = await _images(request).download(context(request), request.path_params["image_id"])
    if chunks is None:
        return no_content()
    headers = {"Content-Length": str(row["size"])}
    if row["checksum"]:
        headers["Content-MD5"] = row["checksum"]
    return StreamingResponse(chunks, media_type="application/octet-stream", headers=headers)


async def deactivate(request: Request) -> Response:
    await actions.deactivate(_images(request), context(request), request.path_params["image_id"])
    return no_content()


async def reactivate(request: Request) -> Response:
    await actions.reactivate(_images(request), context(request), request.path_params["image_id"])
    return no_content()


async def tag(request: Request) -> Response:
    await _images(request).set_tag(context(request), request.path_params["image_id"],
                                   request.path_params["tag"], request.method == "PUT")
    return no_content()


async def members(request: Request) -> Response:
    rows = await _images(request).members(context(request), request.path_params["image_id"])
    return reply({"members": [member_view(r) for r in rows], "schema": "/v2/schemas/members"})


async def add_member(request: Request) -> Response:
    body = await json_body(request)
    if not isinstance(body, dict) or "member" not in body:
        raise exc.InvalidImage(reason='Expected a member in the form: {"member": "project_id"}')
    member = body["member"]
    row = await _images(request).add_member(context(request), request.path_params["image_id"], member)
    return reply(member_view(row))


async def show_member(request: Request) -> Response:
    row = await _images(request).member(context(request), request.path_params["image_id"],
                                        request.path_params["member"])
    return reply(member_view(row))


async def update_member(request: Request) -> Response:
    body = await json_body(request)
    if not isinstance(body, dict) or "status" not in body:
        raise exc.InvalidImage(reason='Expected a status in the form: {"status": "status"}')
    status = body["status"]
    row = await _images(request).set_member_status(
        context(request), request.path_params["image_id"], request.path_params["member"], status)
    return reply(member_view(row))


async def remove_member(request: Request) -> Response:
    await _images(request).remove_member(context(request), request.path_params["image_id"],
                                         request.path_params["member"])
    return no_content()


def _schema(document: dict[str, Any]) -> Any:
    async def show(request: Request) -> Response:
        return reply(document)
    return show


SCHEMAS = {"image": IMAGE_SCHEMA, "images": collection_schema("images", IMAGE_SCHEMA),
           "member": MEMBER_SCHEMA, "members": collection_schema("members", MEMBER_SCHEMA),
           "task": TASK_SCHEMA, "tasks": collection_schema("tasks", TASK_LISTED),
           **METADEF_SCHEMAS}


ROUTES = [
    Route("/", versions, methods=["GET"]),
    Route("/versions", versions, methods=["GET"]),
    *[Route(f"/v2/schemas/{name}", _schema(doc), methods=["GET"]) for name, doc in SCHEMAS.items()],
    Route("/v2/images", create, methods=["POST"]),
    Route("/v2/images", index, methods=["GET"]),
    Route("/v2/images/{image_id}", show, methods=["GET"]),
    Route("/v2/images/{image_id}", update, methods=["PATCH"]),
    Route("/v2/images/{image_id}", delete, methods=["DELETE"]),
    Route("/v2/images/{image_id}/file", upload, methods=["PUT"]),
    Route("/v2/images/{image_id}/file", download, methods=["GET"]),
    Route("/v2/images/{image_id}/tags/{tag}", tag, methods=["PUT", "DELETE"]),
    Route("/v2/images/{image_id}/members", members, methods=["GET"]),
    Route("/v2/images/{image_id}/members", add_member, methods=["POST"]),
    Route("/v2/images/{image_id}/members/{member}", show_member, methods=["GET"]),
    Route("/v2/images/{image_id}/members/{member}", update_member, methods=["PUT"]),
    Route("/v2/images/{image_id}/members/{member}", remove_member, methods=["DELETE"]),
    Route("/v2/images/{image_id}/actions/deactivate", deactivate, methods=["POST"]),
    Route("/v2/images/{image_id}/actions/reactivate", reactivate, methods=["POST"]),
    *import_routes.ROUTES,
    *METADEF_ROUTES,
]
