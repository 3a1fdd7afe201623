"""``/v3/{project_id}/snapshots``: create, list, show, update, delete,
metadata, and the admin actions."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import Forbidden
from cirrus.volume.api import schemas, views
from cirrus.volume.api.common import all_tenants, bs, filters, next_link, page
from cirrus.volume.api.metadata import MetadataHandlers
from cirrus.volume.api.microversion import api_version

FILTERS = ("status", "name", "volume_id", "project_id")
SNAPSHOT_STATUSES = ("available", "error", "creating", "deleting", "error_deleting")


def _id(request: Request) -> str:
    return request.path_params["snapshot_id"]


async def create(request: Request) -> Response:
    args = schemas.snapshot_create(await json_body(request))
    force = args["force"] or api_version(request) >= (3, 66)
    row = await bs(request).snapshots.create(context(request), args["volume_id"], args["name"],
                                             args["description"], force, args["metadata"])
    return reply({"snapshot": views.snapshot(request, row, detail=False)}, status=202)


async def _listing(request: Request, detail: bool) -> Response:
    rows = await bs(request).snapshots.list(context(request), filters(request, FILTERS),
                                            all_tenants(request))
    rows, more = page(request, rows)
    out: dict = {"snapshots": [views.snapshot(request, r, detail) for r in rows]}
    if more and rows:
        out["snapshots_links"] = next_link(request, "snapshots", rows)
    return reply(out)


async def index(request: Request) -> Response:
    return await _listing(request, detail=False)


async def detail(request: Request) -> Response:
    return await _listing(request, detail=True)


async def show(request: Request) -> Response:
    row = await bs(request).snapshots.get(context(request), _id(request))
    return reply({"snapshot": views.snapshot(request, row)})


async def update(request: Request) -> Response:
    values = schemas.snapshot_update(await json_body(request))
    row = await bs(request).snapshots.update(context(request), _id(request), values)
    return reply({"snapshot": views.snapshot(request, row, detail=False)})


async def delete(request: Request) -> Response:
    await bs(request).snapshots.delete(context(request), _id(request))
    return Response(status_code=202)


# GET/POST/PUT of ``/metadata``, GET/PUT/DELETE of ``/metadata/{key}``.
_META = MetadataHandlers(lambda b: b.snapshots, "snapshot_id")
metadata, set_metadata = _META.metadata, _META.set_metadata
metadata_item, set_metadata_item = _META.metadata_item, _META.set_metadata_item
delete_metadata_item = _META.delete_metadata_item


async def action(request: Request) -> Response:
    """``os-reset_status``, ``os-force_delete`` (admin) and
    ``os-update_snapshot_status`` (Nova's assisted snapshots; a member's)."""
    body = await json_body(request)
    if not isinstance(body, dict) or len(body) != 1:
        raise bad("action", "the body must be an object with exactly one action")
    name, arg = next(iter(body.items()))
    ctx, snaps = context(request), bs(request).snapshots
    if name not in ("os-reset_status", "os-force_delete", "os-update_snapshot_status"):
        raise bad("action", f"There is no such action: {name[:64]}")
    if name != "os-update_snapshot_status" and not ctx.is_admin:
        raise Forbidden(action=f"volume_extension:snapshot_admin_actions:{name[3:]}")
    if name == "os-force_delete":
        await snaps.delete(ctx, _id(request), force=True)
        return Response(status_code=202)
    if not isinstance(arg, dict) or "status" not in arg:
        raise bad("status", "'status' is a required property")
    status = schemas.status(arg["status"], "status", SNAPSHOT_STATUSES)
    if name == "os-reset_status":
        await snaps.reset_status(ctx, _id(request), status)
    else:
        progress = arg.get("progress")
        if progress is not None and not (isinstance(progress, str) and len(progress) <= 16):
            raise bad("progress", "must be a string of at most 16 characters")
        await snaps.update_status(ctx, _id(request), status, progress)
    return Response(status_code=202)
