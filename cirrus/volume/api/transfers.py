"""``/v3/{project_id}/os-volume-transfer`` and, from 3.55,
``/v3/{project_id}/volume-transfers``."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, boolean, text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.db.base import isotime
from cirrus.volume.api import schemas
from cirrus.volume.api.common import all_tenants, bs
from cirrus.volume.api.microversion import api_version, require
from cirrus.volume.api.views import base_url

Row = dict[str, Any]


def _collection(request: Request) -> str:
    return "volume-transfers" if "/volume-transfers" in request.url.path else "os-volume-transfer"


def _view(request: Request, row: Row, detail: bool = True) -> Row:
    project = request.path_params.get("project_id", "")
    href = f"{base_url(request)}/v3/{project}/{_collection(request)}/{row['id']}"
    out: Row = {"id": row["id"], "name": row["name"], "volume_id": row["volume_id"],
                "links": [{"rel": "self", "href": href}]}
    if not detail:
        return out
    out["created_at"] = isotime(row["created_at"])
    version = api_version(request)
    if version >= (3, 55):
        out["no_snapshots"] = bool(row["no_snapshots"])
    if version >= (3, 57):
        out.update({"destination_project_id": row["destination_project_id"],
                    "source_project_id": row["source_project_id"],
                    "accepted": bool(row["accepted"])})
    return out


def _new_api(request: Request) -> None:
    if _collection(request) == "volume-transfers":
        require(request, (3, 55))


async def create(request: Request) -> Response:
    _new_api(request)
    body = schemas.wrapped(await json_body(request), "transfer")
    if "volume_id" not in body:
        raise bad("volume_id", "'volume_id' is a required property")
    name = body.get("name")
    no_snapshots = boolean(body.get("no_snapshots", False), "no_snapshots")
    row = await bs(request).transfers.create(
        context(request), schemas.uuid_text(body["volume_id"], "volume_id"),
        None if name is None else text(name, "name", max_len=255), no_snapshots)
    return reply({"transfer": {**_view(request, row), "auth_key": row["auth_key"]}}, status=202)


async def _listing(request: Request, detail: bool) -> Response:
    _new_api(request)
    rows = await bs(request).transfers.list(context(request), all_tenants(request))
    return reply({"transfers": [_view(request, r, detail) for r in rows]})


async def index(request: Request) -> Response:
    return await _listing(request, detail=False)


async def detail(request: Request) -> Response:
    return await _listing(request, detail=True)


async def show(request: Request) -> Response:
    _new_api(request)
    row = await bs(request).transfers.get(context(request), request.path_params["transfer_id"])
    return reply({"transfer": _view(request, row)})


async def delete(request: Request) -> Response:
    _new_api(request)
    await bs(request).transfers.delete(context(request), request.path_params["transfer_id"])
    return Response(status_code=202)


async def accept(request: Request) -> Response:
    _new_api(request)
    body = schemas.wrapped(await json_body(request), "accept")
    if "auth_key" not in body:
        raise bad("auth_key", "'auth_key' is a required property")
    row = await bs(request).transfers.accept(context(request), request.path_params["transfer_id"],
                                             text(body["auth_key"], "auth_key", max_len=64))
    return reply({"transfer": _view(request, row, detail=False)}, status=202)
