"""``/v3/{project_id}/attachments`` (3.27+, complete 3.44+): what Nova
calls to attach a volume since Queens."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad
from cirrus.api.wsgi import context, json_body, reply
from cirrus.volume.api import schemas, views
from cirrus.volume.api.common import all_tenants, bs, page
from cirrus.volume.api.microversion import require


def _id(request: Request) -> str:
    return request.path_params["attachment_id"]


async def create(request: Request) -> Response:
    require(request, (3, 27))
    att = schemas.wrapped(await json_body(request), "attachment")
    extra = sorted(set(att) - {"instance_uuid", "connector", "volume_uuid", "mode"})
    if extra:
        raise bad("attachment", f"Additional properties are not allowed ({extra[0][:40]!r})")
    if "volume_uuid" not in att:
        raise bad("volume_uuid", "'volume_uuid' is a required property")
    instance = att.get("instance_uuid")
    connector = att.get("connector")
    row = await bs(request).attachments.create(
        context(request), schemas.uuid_text(att["volume_uuid"], "volume_uuid"),
        None if instance is None else schemas.uuid_text(instance, "instance_uuid"),
        None if connector is None else schemas.connector(connector),
        schemas.mode(att.get("mode", "rw")) if "mode" in att else "rw")
    return reply({"attachment": views.attachment(row)})


async def update(request: Request) -> Response:
    require(request, (3, 27))
    att = schemas.wrapped(await json_body(request), "attachment")
    if "connector" not in att:
        raise bad("connector", "'connector' is a required property")
    row = await bs(request).attachments.update(context(request), _id(request),
                                               schemas.connector(att["connector"]))
    return reply({"attachment": views.attachment(row)})


async def complete(request: Request) -> Response:
    require(request, (3, 44))
    body = await json_body(request)
    if not isinstance(body, dict) or "os-complete" not in body:
        raise bad("os-complete", "'os-complete' is a required property")
    await bs(request).attachments.complete(context(request), _id(request))
    return Response(status_code=204)


async def delete(request: Request) -> Response:
    require(request, (3, 27))
    row = await bs(request).attachments.get(context(request), _id(request))
    await bs(request).attachments.delete(context(request), _id(request))
    return reply({"attachments": [views.attachment({**row, "attach_status": "detached"},
                                                   detail=False)]})


async def show(request: Request) -> Response:
    require(request, (3, 27))
    row = await bs(request).attachments.get(context(request), _id(request))
    return reply({"attachment": views.attachment(row)})


async def _listing(request: Request, detail: bool) -> Response:
    require(request, (3, 27))
    wanted = {k: v for k, v in request.query_params.items()
              if k in ("volume_id", "instance_id", "attach_status")}
    rows = await bs(request).attachments.list(context(request), all_tenants(request), wanted)
    rows, _more = page(request, rows)
    return reply({"attachments": [views.attachment(r, detail) for r in rows]})


async def index(request: Request) -> Response:
    return await _listing(request, detail=False)


async def detail(request: Request) -> Response:
    return await _listing(request, detail=True)
