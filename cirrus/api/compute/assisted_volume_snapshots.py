"""``/os-assisted-volume-snapshots``: block storage asks compute to snapshot
an attached file-backed volume, and to merge a snapshot away (Nova's
``assisted_volume_snapshots.py`` and its schemas; admins only, as block
storage's service user calls it). Create answers 200 with the snapshot's
``id`` (the one in ``create_info``, else null) and ``volumeId``; delete
takes the volume in the ``delete_info`` JSON query parameter and answers 204
(the host merges afterwards). From 2.75 other query parameters are 400."""
from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import bad, text
from cirrus.api.wsgi import context, json_body, no_content, reply

CREATE_INFO_KEYS = {"snapshot_id", "type", "new_file", "id"}


def _object(value: Any, field: str, allowed: set[str], required: tuple[str, ...]) -> dict[str, Any]:
    """A JSON object of ``field`` with only ``allowed`` keys and each of ``required``."""
    if not isinstance(value, dict):
        raise bad(field, "is not an object")
    extra = sorted(set(value) - allowed)
    if extra:
        raise bad(field, f"Additional properties are not allowed ({', '.join(extra)} "
                         f"{'was' if len(extra) == 1 else 'were'} unexpected)")
    for key in required:
        if key not in value:
            raise bad(field, f"'{key}' is a required property")
    return value


def _create_body(body: Any) -> tuple[str, dict[str, Any]]:
    """Nova's ``create`` schema: the volume id and the ``create_info``."""
    root = _object(body, "snapshot", {"snapshot"}, ("snapshot",))
    snap = _object(root["snapshot"], "snapshot", {"volume_id", "create_info"},
                   ("volume_id", "create_info"))
    volume_id = text(snap["volume_id"], "snapshot/volume_id", min_len=1)
    info = _object(snap["create_info"], "snapshot/create_info", CREATE_INFO_KEYS,
                   ("snapshot_id", "type", "new_file"))
    for key in ("snapshot_id", "new_file", "id"):
        if key in info:
            text(info[key], f"snapshot/create_info/{key}", min_len=1)
    if info["type"] != "qcow2":
        raise bad("snapshot/create_info/type", f"{info['type']!r} is not one of ['qcow2']")
    return volume_id, dict(info)


def _delete_info(request: Request) -> dict[str, Any]:
    """The ``delete_info`` query parameter: JSON naming the volume."""
    if api_version(request) >= (2, 75):
        extra = sorted(set(request.query_params) - {"delete_info"})
        if extra:
            raise bad(extra[0], "Additional properties are not allowed")
    raw = request.query_params.getlist("delete_info")
    if not raw:
        raise bad("delete_info", "'delete_info' is a required query parameter")
    try:
        info = json.loads(raw[-1])
    except ValueError:
        raise bad("delete_info", "is not JSON") from None
    if not isinstance(info, dict) or not isinstance(info.get("volume_id"), str):
        raise bad("delete_info", "must be a JSON object with a 'volume_id'")
    return info


async def create(request: Request) -> Response:
    volume_id, create_info = _create_body(await json_body(request))
    snapshot = await request.app.state.compute_api.volume_snapshot_create(
        context(request), volume_id, create_info)
    return reply({"snapshot": snapshot})


async def delete(request: Request) -> Response:
    info = _delete_info(request)
    await request.app.state.compute_api.volume_snapshot_delete(
        context(request), info["volume_id"], request.path_params["snapshot_id"], info)
    return no_content()


ROUTES = [
    Route("/v2.1/os-assisted-volume-snapshots", create, methods=["POST"]),
    Route("/v2.1/os-assisted-volume-snapshots/{snapshot_id}", delete, methods=["DELETE"]),
]
