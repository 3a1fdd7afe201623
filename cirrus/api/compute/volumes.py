"""``/os-volumes`` and ``/os-snapshots`` (2.1–2.35): Nova's deprecated proxies
to the block storage service (``nova/api/openstack/compute/volumes.py``:
``VolumeController``, ``SnapshotController``), in Nova's camelCase shapes.

They go through the compute API's :class:`~cirrus.volume.cinder.VolumeAPI`,
as Nova's go through its Cinder client: what the caller's project may see,
another project's volume a 404. Over quota is a 403 here (Nova maps Cinder's
413 so).
"""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import until
from cirrus.api.compute.parameters import bad, boolean, integer, metadata, text
from cirrus.api.wsgi import context, json_body, query_int, reply
from cirrus.exception import CirrusException, Forbidden, ValidationError
from cirrus.volume.cinder import Snapshot, Volume, VolumeAPI

LAST_VERSION = (2, 35)  # Nova's MAX_PROXY_API_SUPPORT_VERSION: 404 from 2.36
VOLUME_KEYS = {"volume_type", "metadata", "snapshot_id", "size", "availability_zone",
               "display_name", "display_description"}
SNAPSHOT_KEYS = {"volume_id", "force", "display_name", "display_description"}


def volume_view(vol: Volume) -> dict[str, Any]:
    """Nova's ``_translate_volume_summary_view`` (the detail view is the same)."""
    attached = [a for a in vol["attachments"] if a.get("server_id")]
    attachment: dict[str, Any] = {}
    if vol["status"] == "in-use" and attached:
        attachment = {"id": vol["id"], "volumeId": vol["id"],
                      "serverId": attached[0]["server_id"]}
        if attached[0].get("device"):
            attachment["device"] = attached[0]["device"]
    return {"id": vol["id"], "status": vol["status"], "size": vol["size"],
            "availabilityZone": vol["availability_zone"],
            "createdAt": vol.get("created_at", ""), "attachments": [attachment],
            "displayName": vol["name"] or None,
            "displayDescription": vol.get("description"),
            "volumeType": vol["volume_type"], "snapshotId": vol.get("snapshot_id"),
            "metadata": vol.get("metadata") or {}}


def snapshot_view(snap: Snapshot) -> dict[str, Any]:
    """Nova's ``_translate_snapshot_summary_view`` (size: the volume's)."""
    return {"id": snap["id"], "volumeId": snap["volume_id"], "status": snap["status"],
            "size": snap["size"], "createdAt": snap.get("created_at", ""),
            "displayName": snap["name"] or None,
            "displayDescription": snap.get("description")}


def _object(body: Any, name: str, allowed: set[str], required: str) -> dict[str, Any]:
    """``{name: {...}}`` with only ``allowed`` keys and ``required`` present."""
    data = body.get(name) if isinstance(body, dict) else None
    if not isinstance(data, dict) or set(body) != {name}:
        raise ValidationError(field=name, reason=f"'{name}' is a required object")
    unknown = set(data) - allowed
    if unknown:
        raise bad(name, f"Additional properties are not allowed "
                        f"({', '.join(sorted(map(str, unknown)))[:200]} were unexpected)")
    if required not in data:
        raise bad(f"{name}/{required}", f"'{required}' is a required property")
    return data


def _optional_text(data: dict[str, Any], key: str, field: str) -> str | None:
    return None if data.get(key) is None else text(data[key], f"{field}/{key}")


def parse_volume_create(body: Any) -> dict[str, Any]:
    """Nova's ``volumes.create`` schema → the VolumeAPI's create arguments."""
    data = _object(body, "volume", VOLUME_KEYS, "size")
    size = data["size"]
    if isinstance(size, str) and not size.isdigit():
        raise bad("volume/size", f"{size[:40]!r} does not match '^[0-9]+$'")
    return {"size": integer(size, "volume/size", minimum=1),
            "name": _optional_text(data, "display_name", "volume") or "",
            "description": _optional_text(data, "display_description", "volume") or "",
            "volume_type": _optional_text(data, "volume_type", "volume"),
            "snapshot_id": _optional_text(data, "snapshot_id", "volume"),
            "availability_zone": _optional_text(data, "availability_zone", "volume"),
            "metadata": metadata(data["metadata"], "volume/metadata")
            if data.get("metadata") is not None else None}


def parse_snapshot_create(body: Any) -> dict[str, Any]:
    """Nova's ``snapshot_create`` schema → volume id, name, description, force."""
    data = _object(body, "snapshot", SNAPSHOT_KEYS, "volume_id")
    return {"volume_id": text(data["volume_id"], "snapshot/volume_id", min_len=1),
            "name": _optional_text(data, "display_name", "snapshot") or "",
            "description": _optional_text(data, "display_description", "snapshot") or "",
            "force": boolean(data.get("force", False), "snapshot/force")}


def _api(request: Request) -> VolumeAPI:
    until(request, LAST_VERSION)
    api: VolumeAPI = request.app.state.compute_api.volume_api
    return api


def _page(request: Request, items: list[Any]) -> list[Any]:
    """Nova's ``common.limited``: ``offset`` and ``limit`` (at most 1000)."""
    offset = query_int(request, "offset", 0) or 0
    limit = min(query_int(request, "limit", 0) or 1000, 1000)
    return items[offset:offset + limit]


async def _quota_forbidden(call: Any) -> Any:
    """Await ``call``; block storage's over-quota 413 becomes Nova's 403."""
    try:
        return await call
    except CirrusException as error:
        if error.code == 413:
            raise Forbidden(error.format_message()) from error
        raise


async def index(request: Request) -> Response:
    api = _api(request)
    volumes = await api.get_all(context(request))
    return reply({"volumes": [volume_view(v) for v in _page(request, volumes)]})


async def show(request: Request) -> Response:
    volume = await _api(request).get(context(request), request.path_params["volume_id"])
    return reply({"volume": volume_view(volume)})


async def create(request: Request) -> Response:
    api = _api(request)
    args = parse_volume_create(await json_body(request))
    volume = await _quota_forbidden(api.create(context(request), **args))
    return reply({"volume": volume_view(volume)},
                 headers={"Location": f"{request.url}/{volume['id']}"})


async def delete(request: Request) -> Response:
    await _api(request).delete(context(request), request.path_params["volume_id"])
    return Response(status_code=202)


async def snapshot_index(request: Request) -> Response:
    api = _api(request)
    snapshots = await api.get_all_snapshots(context(request))
    return reply({"snapshots": [snapshot_view(s) for s in _page(request, snapshots)]})


async def snapshot_show(request: Request) -> Response:
    snap = await _api(request).get_snapshot(context(request),
                                            request.path_params["snapshot_id"])
    return reply({"snapshot": snapshot_view(snap)})


async def snapshot_create(request: Request) -> Response:
    api = _api(request)
    args = parse_snapshot_create(await json_body(request))
    make = api.create_snapshot_force if args.pop("force") else api.create_snapshot
    snap = await _quota_forbidden(make(context(request), args["volume_id"], args["name"],
                                       args["description"]))
    return reply({"snapshot": snapshot_view(snap)})


async def snapshot_delete(request: Request) -> Response:
    await _api(request).delete_snapshot(context(request), request.path_params["snapshot_id"])
    return Response(status_code=202)


V, S = "/v2.1/os-volumes", "/v2.1/os-snapshots"
ROUTES = [
    Route(V, index, methods=["GET"]),
    Route(V, create, methods=["POST"]),
    Route(f"{V}/detail", index, methods=["GET"]),
    Route(f"{V}/{{volume_id}}", show, methods=["GET"]),
    Route(f"{V}/{{volume_id}}", delete, methods=["DELETE"]),
    Route(S, snapshot_index, methods=["GET"]),
    Route(S, snapshot_create, methods=["POST"]),
    Route(f"{S}/detail", snapshot_index, methods=["GET"]),
    Route(f"{S}/{{snapshot_id}}", snapshot_show, methods=["GET"]),
    Route(f"{S}/{{snapshot_id}}", snapshot_delete, methods=["DELETE"]),
]
