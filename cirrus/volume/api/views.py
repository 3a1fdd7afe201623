"""Response bodies of the block storage API (Cinder's ``api/v3/views``),
by microversion."""
from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request

from cirrus.db.base import isotime
from cirrus.volume.api.microversion import api_version

Row = dict[str, Any]
MESSAGE_TTL = dt.timedelta(days=30)  # Cinder's message_ttl


def base_url(request: Request) -> str:
    return request.app.state.settings.public_url.rstrip("/") + "/volume"


def links(request: Request, collection: str, item_id: str) -> list[dict[str, str]]:
    project = request.path_params.get("project_id", "")
    base = base_url(request)
    return [{"rel": "self", "href": f"{base}/v3/{project}/{collection}/{item_id}"},
            {"rel": "bookmark", "href": f"{base}/{project}/{collection}/{item_id}"}]


def attachment_ref(row: Row) -> Row:
    return {"server_id": row["instance_uuid"], "attachment_id": row["id"],
            "attached_at": isotime(row["attach_time"]), "host_name": row["attached_host"],
            "volume_id": row["volume_id"], "device": row["mountpoint"], "id": row["volume_id"]}


def _metadata(row: Row) -> dict[str, str]:
    """The volume's metadata, with the admin metadata Cinder shows in it
    (``readonly``, ``attached_mode``)."""
    admin = {k: v for k, v in (row["admin_metadata"] or {}).items()
             if k in ("readonly", "attached_mode")}
    return {**(row["metadata"] or {}), **admin}


def volume_summary(request: Request, row: Row) -> Row:
    return {"id": row["id"], "name": row["name"], "links": links(request, "volumes", row["id"])}


def volume_created(request: Request, row: Row) -> Row:
    """The body of ``POST /volumes`` (no extension attributes, as Cinder)."""
    vtype = row.get("volume_type")
    out: Row = {
        "id": row["id"], "status": row["status"], "size": row["size"],
        "availability_zone": row["availability_zone"], "created_at": isotime(row["created_at"]),
        "updated_at": isotime(row["updated_at"]), "name": row["name"],
        "description": row["description"], "volume_type": vtype["name"] if vtype else None,
        "snapshot_id": row["snapshot_id"], "source_volid": row["source_volid"],
        "metadata": _metadata(row), "links": links(request, "volumes", row["id"]),
        "user_id": row["user_id"], "bootable": "true" if row["bootable"] else "false",
        "encrypted": bool(row.get("encrypted")), "replication_status": None, "consistencygroup_id": None,
        "multiattach": bool(row["multiattach"]),
        "attachments": [attachment_ref(a) for a in row.get("attachments", [])
                        if a["attach_status"] == "attached"]}
    ctx = request.state.context
    if ctx.is_admin:
        out["migration_status"] = None
    version = api_version(request)
    if version >= (3, 13):
        out["group_id"] = None
    if version >= (3, 21) and ctx.is_admin:
        out["provider_id"] = None
    if version >= (3, 48):
        out["shared_targets"] = False
        out["service_uuid"] = None
    if version >= (3, 63):
        out["volume_type_id"] = vtype["id"] if vtype else None
    if version >= (3, 65):
        out["consumes_quota"] = True
    return out


def volume_detail(request: Request, row: Row) -> Row:
    """A volume as show and the detailed listing give it."""
    out = volume_created(request, row)
    if row["image_metadata"]:
        out["volume_image_metadata"] = row["image_metadata"]
    # Shown to whoever sees the volume (Cinder's project-reader default).
    out["os-vol-tenant-attr:tenant_id"] = row["project_id"]
    if request.state.context.is_admin:
        out["os-vol-host-attr:host"] = row["host"]
        out["os-vol-mig-status-attr:migstat"] = None
        out["os-vol-mig-status-attr:name_id"] = None
        if api_version(request) >= (3, 61):
            out["cluster_name"] = None
    return out


def snapshot(request: Request, row: Row, detail: bool = True) -> Row:
    out: Row = {"id": row["id"], "status": row["status"], "size": row["size"],
                "created_at": isotime(row["created_at"]), "updated_at": isotime(row["updated_at"]),
                "name": row["name"], "description": row["description"],
                "volume_id": row["volume_id"], "metadata": row["metadata"] or {}}
    version = api_version(request)
    if version >= (3, 14):
        out["group_snapshot_id"] = None
    if version >= (3, 41):
        out["user_id"] = row["user_id"]
    if version >= (3, 65):
        out["consumes_quota"] = True
    if detail:
        out["os-extended-snapshot-attributes:progress"] = row["progress"]
        out["os-extended-snapshot-attributes:project_id"] = row["project_id"]
    return out


def volume_type(row: Row, admin: bool) -> Row:
    out: Row = {"id": row["id"], "name": row["name"], "description": row["description"],
                "is_public": bool(row["is_public"]),
                "os-volume-type-access:is_public": bool(row["is_public"])}
    if admin:
        out["extra_specs"] = row["extra_specs"] or {}
        out["qos_specs_id"] = row.get("qos_specs_id")
    return out


def attachment(row: Row, detail: bool = True) -> Row:
    out: Row = {"id": row["id"], "status": row["attach_status"],
                "instance": row["instance_uuid"], "volume_id": row["volume_id"]}
    if detail:
        out.update({"attached_at": isotime(row["attach_time"]),
                    "detached_at": isotime(row["detach_time"]),
                    "attach_mode": row["attach_mode"],
                    "connection_info": row["connection_info"] or {}})
    return out


def message(row: Row) -> Row:
    return {"id": row["id"], "event_id": row["event_id"], "message_level": row["message_level"],
            "user_message": row["user_message"], "resource_type": row["resource_type"],
            "resource_uuid": row["resource_uuid"], "request_id": "",
            "created_at": isotime(row["created_at"]),
            "guaranteed_until": isotime(row["created_at"] + MESSAGE_TTL),
            "links": []}
