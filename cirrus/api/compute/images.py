"""``/images`` (2.1–2.35) and ``/images/{id}/metadata`` (2.1–2.38): Nova's proxy
to the image service, in Nova's shapes (``nova/api/openstack/compute/images.py``,
``image_metadata.py``). Reads and writes go through the image API, so visibility,
ownership and property rules are the image service's own."""
from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.paging import next_link, paginate
from cirrus.api.compute.parameters import metadata as metadata_param
from cirrus.api.wsgi import context, json_body, query_int, reply
from cirrus.db.base import isotime
from cirrus.exception import NotFound, ValidationError
from cirrus.image import schema as image_schema
from cirrus.image.patch import Change
from cirrus.image.query import MAX_LIMIT, ListQuery

Version = tuple[int, int]
# Nova's glance status → compute status, and the progress it shows for each.
STATUS = {"queued": "SAVING", "saving": "SAVING", "uploading": "SAVING", "importing": "SAVING",
          "active": "ACTIVE", "killed": "ERROR", "deleted": "DELETED",
          "pending_delete": "DELETED", "deactivated": "ERROR"}
PROGRESS = {"queued": 25, "saving": 50, "active": 100}


class VersionNotFound(NotFound):
    """A route this microversion no longer has (Nova's plain 404)."""

    msg_fmt = "The resource could not be found."


class ImageMetadataNotFound(NotFound):
    msg_fmt = "Image %(image_id)s has no metadata with key %(key)s."


def _base(request: Request) -> str:
    return str(request.app.state.settings.public_url).rstrip("/")


def _links(base: str, image_id: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/images/{image_id}"},
            {"rel": "bookmark", "href": f"{base}/compute/images/{image_id}"},
            {"rel": "alternate", "type": "application/vnd.openstack.image",
             "href": f"{base}/image/v2/images/{image_id}"}]


def basic_view(base: str, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "links": _links(base, row["id"])}


def detail_view(base: str, row: dict[str, Any]) -> dict[str, Any]:
    props = dict(row["properties"] or {})
    out = {**basic_view(base, row), "minRam": row["min_ram"], "minDisk": row["min_disk"],
           "metadata": props, "created": isotime(row["created_at"]),
           "updated": isotime(row["updated_at"] or row["created_at"]),
           "status": STATUS.get(row["status"], "UNKNOWN"),
           "progress": PROGRESS.get(row["status"], 0), "OS-EXT-IMG-SIZE:size": row["size"]}
    server = props.get("instance_uuid")
    if isinstance(server, str):
        out["server"] = {"id": server, "links": [
            {"rel": "self", "href": f"{base}/compute/v2.1/servers/{server}"},
            {"rel": "bookmark", "href": f"{base}/compute/servers/{server}"}]}
    return out


def _until(request: Request, last: Version) -> None:
    if api_version(request) > last:
        raise VersionNotFound()


def _since(params: Any) -> dt.datetime | None:
    """``?changes-since=`` as a naive UTC time (the database's); 400 if no time."""
    value = params.get("changes-since")
    if value is None:
        return None
    try:
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(field="changes-since", reason="is not an ISO 8601 time") from None
    return when.astimezone(dt.timezone.utc).replace(tzinfo=None) if when.tzinfo else when


def _matches(row: dict[str, Any], params: Any, since: dt.datetime | None) -> bool:
    """Nova's list filters: name, status, server (an id or its URL), type, changes-since."""
    props = row["properties"] or {}
    shown = {"name": row["name"], "status": STATUS.get(row["status"], "UNKNOWN"),
             "server": props.get("instance_uuid"), "type": props.get("image_type")}
    wanted = {k: params[k] for k in shown if k in params}
    if "status" in wanted:
        wanted["status"] = wanted["status"].upper()
    if "server" in wanted:
        wanted["server"] = wanted["server"].rsplit("/", 1)[-1]
    if any(shown[k] != v for k, v in wanted.items()):
        return False
    return since is None or (row["updated_at"] or row["created_at"]) >= since


async def _list(request: Request, detail: bool) -> Response:
    _until(request, (2, 35))
    ctx = context(request)
    rows = await request.app.state.images.list(ctx, ListQuery(limit=MAX_LIMIT))
    params = request.query_params
    since = _since(params)
    minimums = {"min_ram": query_int(request, "minRam", None),
                "min_disk": query_int(request, "minDisk", None)}
    rows = [r for r in rows if _matches(r, params, since) and
            all(m is None or r[k] >= m for k, m in minimums.items())]
    rows, next_marker = paginate(request, rows, "id")
    body: dict[str, Any] = {}
    if next_marker is not None:
        body["images_links"] = next_link(request, next_marker)
    view = detail_view if detail else basic_view
    body["images"] = [view(_base(request), r) for r in rows]
    return reply(body)


async def index(request: Request) -> Response:
    return await _list(request, detail=False)


async def detail(request: Request) -> Response:
    return await _list(request, detail=True)


async def show(request: Request) -> Response:
    _until(request, (2, 35))
    row = await request.app.state.images.get(context(request), request.path_params["image_id"])
    return reply({"image": detail_view(_base(request), row)})


async def delete(request: Request) -> Response:
    _until(request, (2, 35))
    await request.app.state.images.delete(context(request), request.path_params["image_id"])
    return Response(status_code=204)


# -- metadata: the image's properties ----------------------------------------------
async def _properties(request: Request) -> dict[str, Any]:
    _until(request, (2, 38))
    row = await request.app.state.images.get(context(request), request.path_params["image_id"])
    return dict(row["properties"] or {})


def _checked(value: Any) -> dict[str, str]:
    """Nova's metadata object, whose keys must name properties, not image attributes."""
    found = metadata_param(value)
    core = sorted(set(found) & set(image_schema.CORE))
    if core:
        raise ValidationError(field="metadata", reason=f"{core[0]} is an image attribute")
    return found


async def _write(request: Request, changes: list[Change]) -> dict[str, Any]:
    row = await request.app.state.images.update(context(request),
                                                request.path_params["image_id"], changes)
    return dict(row["properties"] or {})


async def list_metadata(request: Request) -> Response:
    return reply({"metadata": await _properties(request)})


async def show_metadata(request: Request) -> Response:
    key = request.path_params["key"]
    props = await _properties(request)
    if key not in props:
        raise ImageMetadataNotFound(image_id=request.path_params["image_id"], key=key[:255])
    return reply({"meta": {key: props[key]}})


def _body(body: Any, key: str) -> Any:
    if not isinstance(body, dict) or set(body) != {key}:
        raise ValidationError(field=key, reason=f"the body must be {{'{key}': {{…}}}}")
    return body[key]


async def update_metadata(request: Request) -> Response:
    """POST: merge the given keys into the properties."""
    await _properties(request)
    given = _checked(_body(await json_body(request), "metadata"))
    props = await _write(request, [Change("add", k, v) for k, v in given.items()])
    return reply({"metadata": props})


async def replace_metadata(request: Request) -> Response:
    """PUT: the properties become exactly the given keys."""
    current = await _properties(request)
    given = _checked(_body(await json_body(request), "metadata"))
    changes = [Change("remove", k) for k in current if k not in given]
    props = await _write(request, changes + [Change("add", k, v) for k, v in given.items()])
    return reply({"metadata": props})


async def set_metadata_item(request: Request) -> Response:
    await _properties(request)
    key = request.path_params["key"]
    meta = _checked(_body(await json_body(request), "meta"))
    if list(meta) != [key]:
        raise ValidationError(field="meta", reason="Request body and URI mismatch")
    await _write(request, [Change("add", key, meta[key])])
    return reply({"meta": meta})


async def delete_metadata_item(request: Request) -> Response:
    key = request.path_params["key"]
    if key not in await _properties(request):
        raise ImageMetadataNotFound(image_id=request.path_params["image_id"], key=key[:255])
    await _write(request, [Change("remove", key)])
    return Response(status_code=204)


M = "/v2.1/images/{image_id}/metadata"
ROUTES = [
    Route("/v2.1/images", index, methods=["GET"]),
    Route("/v2.1/images/detail", detail, methods=["GET"]),
    Route("/v2.1/images/{image_id}", show, methods=["GET"]),
    Route("/v2.1/images/{image_id}", delete, methods=["DELETE"]),
    Route(M, list_metadata, methods=["GET"]),
    Route(M, update_metadata, methods=["POST"]),
    Route(M, replace_metadata, methods=["PUT"]),
    Route(M + "/{key}", show_metadata, methods=["GET"]),
    Route(M + "/{key}", set_metadata_item, methods=["PUT"]),
    Route(M + "/{key}", delete_metadata_item, methods=["DELETE"]),
]
