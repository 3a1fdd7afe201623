"""Image service v2 HTTP API (Glance subset)."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from cirrus.api.errors import error_response
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.image import exception as exc
from cirrus.image import patch, query
from cirrus.image.views import IMAGE_SCHEMA, image_view, member_view

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


async def tasks(request: Request) -> Response:
    """``GET /v2/images/{id}/tasks`` (Glance 2.12): the image's import tasks.
    Images come only through upload here, never by a task, so the list is
    empty; an image the caller may not see is 404 as for its record."""
    await _images(request).get(context(request), request.path_params["image_id"])
    return reply({"tasks": []})


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
    # Glance takes image data only as application/octet-stream (415 otherwise).
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/octet-stream":
        raise exc.UnsupportedMediaType(reason=f"Content type {media[:80] or None} not supported: "
                                              "expected application/octet-stream")
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


async def schema_image(request: Request) -> Response:
    return reply(IMAGE_SCHEMA)


async def schema_images(request: Request) -> Response:
    return reply({"name": "images", "properties": {"images": {"type": "array", "items": IMAGE_SCHEMA},
                                                   "schema": {"type": "string"},
                                                   "first": {"type": "string"},
                                                   "next": {"type": "string"}},
                  "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                            {"rel": "describedby", "href": "{schema}"}]})


ROUTES = [
    Route("/", versions, methods=["GET"]),
    Route("/versions", versions, methods=["GET"]),
    Route("/v2/schemas/image", schema_image, methods=["GET"]),
    Route("/v2/schemas/images", schema_images, methods=["GET"]),
    Route("/v2/images", create, methods=["POST"]),
    Route("/v2/images", index, methods=["GET"]),
    Route("/v2/images/{image_id}", show, methods=["GET"]),
    Route("/v2/images/{image_id}", update, methods=["PATCH"]),
    Route("/v2/images/{image_id}", delete, methods=["DELETE"]),
    Route("/v2/images/{image_id}/tasks", tasks, methods=["GET"]),
    Route("/v2/images/{image_id}/file", upload, methods=["PUT"]),
    Route("/v2/images/{image_id}/file", download, methods=["GET"]),
    Route("/v2/images/{image_id}/tags/{tag}", tag, methods=["PUT", "DELETE"]),
    Route("/v2/images/{image_id}/members", members, methods=["GET"]),
    Route("/v2/images/{image_id}/members", add_member, methods=["POST"]),
    Route("/v2/images/{image_id}/members/{member}", show_member, methods=["GET"]),
    Route("/v2/images/{image_id}/members/{member}", update_member, methods=["PUT"]),
    Route("/v2/images/{image_id}/members/{member}", remove_member, methods=["DELETE"]),
]
