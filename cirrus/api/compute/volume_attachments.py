"""``/servers/{id}/os-volume_attachments``: list, show, attach, update and
detach a server's volumes (Nova's ``volumes.py`` ``VolumeAttachmentController``
and its schemas: ``tag`` at 2.49, ``delete_on_termination`` at 2.79, the
update of 2.85; in the view ``tag`` from 2.70, ``delete_on_termination`` from
2.79, ``attachment_id`` and ``bdm_uuid`` in place of ``id`` from 2.89)."""
from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.bdm_schema import boolean, tag
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import bad, text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import ValidationError

Version = tuple[int, int]
# Nova's device pattern (match_device() of nova/block_device.py).
DEVICE = re.compile(r"(^/dev/x{0,1}[a-z]{0,1}d{0,1})([a-z]+)[0-9]*$")
UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                  r"[0-9a-fA-F]{12}")
SWAP_RULE = "compute:volume_attachments:swap"


def view(bdm: dict[str, Any], version: Version) -> dict[str, Any]:
    """Nova's ``_translate_attachment_detail_view``."""
    out: dict[str, Any] = {} if version >= (2, 89) else {"id": bdm["volume_id"]}
    out.update({"volumeId": bdm["volume_id"], "serverId": bdm["instance_uuid"]})
    if bdm.get("device_name"):
        out["device"] = bdm["device_name"]
    if version >= (2, 70):
        out["tag"] = bdm.get("tag")
    if version >= (2, 79):
        out["delete_on_termination"] = bool(bdm["delete_on_termination"])
    if version >= (2, 89):
        out["attachment_id"] = bdm.get("attachment_id")
        out["bdm_uuid"] = bdm.get("uuid")
    return out


def _volume_id(value: Any, field: str) -> str:
    checked = text(value, field, min_len=1, max_len=36)
    if not UUID.fullmatch(checked):
        raise bad(field, f"{checked!r} is not a 'uuid'")
    return checked


def _device(value: Any, field: str) -> str | None:
    if value is None:
        return None
    checked = text(value, field, min_len=1)
    if not DEVICE.match(checked):
        raise bad(field, f"{checked!r} does not match '{DEVICE.pattern}'")
    return checked


def _attachment(body: Any, allowed: set[str]) -> dict[str, Any]:
    data = body.get("volumeAttachment") if isinstance(body, dict) else None
    if not isinstance(data, dict) or set(body) != {"volumeAttachment"}:
        raise ValidationError(field="volumeAttachment",
                              reason="'volumeAttachment' is a required object")
    unknown = set(data) - allowed
    if unknown:
        raise bad("volumeAttachment", f"Additional properties are not allowed "
                                      f"({', '.join(sorted(map(str, unknown)))[:200]} were "
                                      f"unexpected)")
    if "volumeId" not in data:
        raise bad("volumeAttachment/volumeId", "'volumeId' is a required property")
    return data


def parse_create(body: Any, version: Version) -> dict[str, Any]:
    """``POST`` body → volume_id, device, tag, delete_on_termination."""
    allowed = {"volumeId", "device"} | ({"tag"} if version >= (2, 49) else set()) \
        | ({"delete_on_termination"} if version >= (2, 79) else set())
    data = _attachment(body, allowed)
    return {"volume_id": _volume_id(data["volumeId"], "volumeAttachment/volumeId"),
            "device": _device(data.get("device"), "volumeAttachment/device"),
            "tag": tag(data["tag"], "volumeAttachment/tag") if data.get("tag") else None,
            "delete_on_termination": boolean(data.get("delete_on_termination", False),
                                           "volumeAttachment/delete_on_termination")}


def parse_update(body: Any, version: Version) -> dict[str, Any]:
    """``PUT`` body: the (new) volume id and, from 2.85, the other fields of
    the view, of which only ``delete_on_termination`` may change."""
    allowed = {"volumeId"} | ({"device", "tag", "delete_on_termination", "serverId", "id"}
                              if version >= (2, 85) else set())
    data = _attachment(body, allowed)
    out = dict(data)
    out["volumeId"] = _volume_id(data["volumeId"], "volumeAttachment/volumeId")
    if "delete_on_termination" in data:
        out["delete_on_termination"] = boolean(data["delete_on_termination"],
                                             "volumeAttachment/delete_on_termination")
    return out


def _check_unchanged(data: dict[str, Any], bdm: dict[str, Any], volume_id: str) -> None:
    """2.85: the fields besides delete_on_termination must be the current ones."""
    current = {"id": volume_id, "serverId": bdm["instance_uuid"],
               "device": bdm.get("device_name"), "tag": bdm.get("tag")}
    for key, value in current.items():
        if key in data and data[key] != value:
            raise bad(f"volumeAttachment/{key}", f"The {key} property is not mutable")


async def index(request: Request) -> Response:
    bdms = await request.app.state.compute_api.volume_attachments(
        context(request), request.path_params["server_id"])
    version = api_version(request)
    return reply({"volumeAttachments": [view(b, version) for b in bdms]})


async def show(request: Request) -> Response:
    bdm = await request.app.state.compute_api.volume_attachment(
        context(request), request.path_params["server_id"], request.path_params["volume_id"])
    return reply({"volumeAttachment": view(bdm, api_version(request))})


async def create(request: Request) -> Response:
    version = api_version(request)
    args = parse_create(await json_body(request), version)
    bdm = await request.app.state.compute_api.attach_volume(
        context(request), request.path_params["server_id"], **args)
    # Nova's create view: tag from 2.70, delete_on_termination from 2.79, the id always.
    return reply({"volumeAttachment": view(bdm, min(version, (2, 88)))})


async def update(request: Request) -> Response:
    ctx, version = context(request), api_version(request)
    server_id, volume_id = request.path_params["server_id"], request.path_params["volume_id"]
    api = request.app.state.compute_api
    # The attachment first: another project's server is a 404 whatever the body.
    bdm = await api.volume_attachment(ctx, server_id, volume_id)
    data = parse_update(await json_body(request), version)
    if version < (2, 85) or data["volumeId"] != volume_id:
        # Swapping to another volume: admins only, as Nova's swap rule.
        policy.enforce(ctx, SWAP_RULE)
        if data["volumeId"] == volume_id:
            raise bad("volumeAttachment/volumeId", "a volume cannot be swapped for itself")
        await api.swap_volume(ctx, server_id, volume_id, data["volumeId"])
        return Response(status_code=202)
    _check_unchanged(data, bdm, volume_id)
    if "delete_on_termination" in data:
        await api.update_volume_attachment(ctx, server_id, volume_id,
                                           data["delete_on_termination"])
    return Response(status_code=202)


async def delete(request: Request) -> Response:
    await request.app.state.compute_api.detach_volume(
        context(request), request.path_params["server_id"], request.path_params["volume_id"])
    return Response(status_code=202)


A = "/v2.1/servers/{server_id}/os-volume_attachments"
ROUTES = [
    Route(A, index, methods=["GET"]),
    Route(A, create, methods=["POST"]),
    Route(f"{A}/{{volume_id}}", show, methods=["GET"]),
    Route(f"{A}/{{volume_id}}", update, methods=["PUT"]),
    Route(f"{A}/{{volume_id}}", delete, methods=["DELETE"]),
]
