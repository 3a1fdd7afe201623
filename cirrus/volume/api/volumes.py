"""``/v3/{project_id}/volumes``: create, list, show, update, delete, metadata."""
from __future__ import annotations

import ast

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import query_boolean
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import Forbidden
from cirrus.volume.api import schemas, views
from cirrus.volume.api.common import all_tenants, bs, filters, next_link, page
from cirrus.volume.api.metadata import MetadataHandlers
from cirrus.volume.api.microversion import api_version, require

FILTERS = ("status", "name", "bootable", "availability_zone", "project_id")


def _id(request: Request) -> str:
    return request.path_params["volume_id"]


async def create(request: Request) -> Response:
    req = schemas.volume_create(await json_body(request))
    row = await bs(request).volumes.create(context(request), req)
    return reply({"volume": views.volume_created(request, row)}, status=202)


async def _listed(request: Request) -> tuple[list[dict], bool]:
    rows = await bs(request).volumes.list(context(request), filters(request, FILTERS),
                                          all_tenants(request))
    meta = request.query_params.get("metadata")
    if meta and len(meta) <= 4096:  # Cinder reads it as a Python dict literal
        try:
            wanted = ast.literal_eval(meta)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            wanted = None
        if isinstance(wanted, dict):
            rows = [r for r in rows if all((r["metadata"] or {}).get(k) == v
                                           for k, v in wanted.items())]
    return page(request, rows)


async def index(request: Request) -> Response:
    rows, more = await _listed(request)
    return _listing(request, [views.volume_summary(request, r) for r in rows], rows, more)


async def detail(request: Request) -> Response:
    rows, more = await _listed(request)
    return _listing(request, [views.volume_detail(request, r) for r in rows], rows, more)


def _listing(request: Request, body: list[dict], rows: list[dict], more: bool) -> Response:
    out: dict = {"volumes": body}
    if more and rows:
        out["volumes_links"] = next_link(request, "volumes", rows)
    if api_version(request) >= (3, 45) and query_boolean(
            request.query_params.get("with_count", "false"), "with_count"):
        out["count"] = len(body)
    return reply(out)


async def summary(request: Request) -> Response:
    """``GET /volumes/summary`` (3.12; metadata from 3.36)."""
    version = require(request, (3, 12))
    rows = await bs(request).volumes.list(context(request), filters(request, FILTERS),
                                          all_tenants(request))
    body: dict = {"total_count": len(rows), "total_size": sum(r["size"] for r in rows)}
    if version >= (3, 36):
        merged: dict[str, list[str]] = {}
        for row in rows:
            for key, value in (row["metadata"] or {}).items():
                if value not in merged.setdefault(key, []):
                    merged[key].append(value)
        body["metadata"] = merged
    return reply({"volume-summary": body})


async def show(request: Request) -> Response:
    row = await bs(request).volumes.get(context(request), _id(request))
    return reply({"volume": views.volume_detail(request, row)})


async def update(request: Request) -> Response:
    values = schemas.volume_update(await json_body(request))
    row = await bs(request).volumes.update(context(request), _id(request), values)
    return reply({"volume": views.volume_created(request, row)})


async def delete(request: Request) -> Response:
    params = request.query_params
    cascade = query_boolean(params.get("cascade", "false"), "cascade")
    force = query_boolean(params.get("force", "false"), "force")
    if force and not context(request).is_admin:
        raise Forbidden(action="volume:force_delete")
    await bs(request).volumes.delete(context(request), _id(request), cascade=cascade, force=force)
    return Response(status_code=202)


# GET/POST/PUT of ``/metadata``, GET/PUT/DELETE of ``/metadata/{key}``.
_META = MetadataHandlers(lambda b: b.volumes, "volume_id")
metadata, set_metadata = _META.metadata, _META.set_metadata
metadata_item, set_metadata_item = _META.metadata_item, _META.set_metadata_item
delete_metadata_item = _META.delete_metadata_item
