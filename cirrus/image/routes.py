"""Image service v2 HTTP API (Glance subset)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, query_int, reply
from cirrus.image import exception as exc
from cirrus.image.views import IMAGE_SCHEMA, image_view, member_view

PATCH_TYPE = "application/openstack-images-v2.1-json-patch"
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
    filters: dict[str, Any] = {k: params.get(k) for k in (
        "name", "status", "visibility", "owner", "disk_format", "container_format", "member_status")}
    filters["tag"] = params.getlist("tag")
    limit = query_int(request, "limit", 25, minimum=0) or 25
    sort: list[tuple[str, str]] = []
    if params.get("sort"):
        for part in params["sort"].split(","):
            key, _, direction = part.strip().partition(":")
            sort.append((key, direction or "desc"))
    else:
        sort = [(params.get("sort_key", "created_at"), params.get("sort_dir", "desc"))]
    for key, direction in sort:
        if key not in ("name", "status", "created_at", "updated_at", "size", "id", "owner",
                       "disk_format", "container_format", "visibility", "min_disk", "min_ram"):
            raise exc.InvalidImage(reason=f"Invalid sort key: {key}")
        if direction not in ("asc", "desc"):
            raise exc.InvalidImage(reason=f"Invalid sort direction: {direction}")
    rows = await _images(request).list(context(request), {k: v for k, v in filters.items() if v},
                                       limit, params.get("marker"), sort)
    body: dict[str, Any] = {"images": [image_view(r) for r in rows], "schema": "/v2/schemas/images",
                            "first": "/v2/images"}
    if len(rows) == limit and rows:
        query = "&".join(f"{k}={v}" for k, v in params.items() if k != "marker")
        body["next"] = f"/v2/images?{query}&marker={rows[-1]['id']}".replace("?&", "?")
    return reply(body)


async def show(request: Request) -> Response:
    return reply(image_view(await _images(request).get(context(request), request.path_params["image_id"])))


def _parse_patch(ops: Any) -> tuple[dict[str, Any], list[str]]:
    if not isinstance(ops, list):
        raise exc.InvalidImage(reason="A JSON patch must be a list of operations.")
    changes: dict[str, Any] = {}
    removals: list[str] = []
    for op in ops:
        if not isinstance(op, dict) or op.get("op") not in ("add", "replace", "remove") \
                or not isinstance(op.get("path"), str) or not op["path"].startswith("/"):
            raise exc.InvalidImage(reason=f"Invalid JSON patch operation: {op!r}")
        key = op["path"][1:].replace("~1", "/").replace("~0", "~")
        if op["op"] == "remove":
            removals.append(key)
        else:
            if "value" not in op:
                raise exc.InvalidImage(reason=f"Operation {op['op']} on {key} needs a value")
            changes[key] = op["value"]
    return changes, removals


async def update(request: Request) -> Response:
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type != PATCH_TYPE:
        return Response(status_code=415, headers={"Accept-Patch": PATCH_TYPE})
    changes, removals = _parse_patch(await json_body(request))
    row = await _images(request).update(context(request), request.path_params["image_id"],
                                        changes, removals)
    return reply(image_view(row))


async def delete(request: Request) -> Response:
    await _images(request).delete(context(request), request.path_params["image_id"])
    return no_content()


async def upload(request: Request) -> Response:
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
    member = body.get("member") if isinstance(body, dict) else None
    if not isinstance(member, str) or not member:
        raise exc.InvalidImage(reason="'member' is required")
    row = await _images(request).add_member(context(request), request.path_params["image_id"], member)
    return reply(member_view(row))


async def show_member(request: Request) -> Response:
    rows = await _images(request).members(context(request), request.path_params["image_id"])
    for row in rows:
        if row["member_id"] == request.path_params["member"]:
            return reply(member_view(row))
    raise exc.MemberNotFound(member=request.path_params["member"],
                             image_id=request.path_params["image_id"])


async def update_member(request: Request) -> Response:
    body = await json_body(request)
    status = body.get("status") if isinstance(body, dict) else None
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
    Route("/v2/images/{image_id}/file", upload, methods=["PUT"]),
    Route("/v2/images/{image_id}/file", download, methods=["GET"]),
    Route("/v2/images/{image_id}/tags/{tag}", tag, methods=["PUT", "DELETE"]),
    Route("/v2/images/{image_id}/members", members, methods=["GET"]),
    Route("/v2/images/{image_id}/members", add_member, methods=["POST"]),
    Route("/v2/images/{image_id}/members/{member}", show_member, methods=["GET"]),
    Route("/v2/images/{image_id}/members/{member}", update_member, methods=["PUT"]),
    Route("/v2/images/{image_id}/members/{member}", remove_member, methods=["DELETE"]),
]
