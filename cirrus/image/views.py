"""The JSON of an image as Glance shows it."""
from __future__ import annotations

import math
from typing import Any

from cirrus import text
from cirrus.db.base import isotime

# Deeper than any property a client could store; cut so a view cannot recurse away.
_MAX_DEPTH = 32


def presentable(value: Any, depth: int = 0) -> Any:
    """``value`` as a JSON reply can carry it. Input checks keep junk out, but a
    row stored before them may hold lone surrogates (shown as U+FFFD), NaN or
    ±Infinity (shown as null), integers too long to print or nesting without
    end: a listing must still answer, so they are shown, not raised on."""
    if isinstance(value, str):
        return text.presentable(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if value.bit_length() < 10_000 else None
    if depth >= _MAX_DEPTH:
        return None
    if isinstance(value, dict):
        return {presentable(str(k)): presentable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [presentable(v, depth + 1) for v in value]
    return None


def image_view(row: dict[str, Any]) -> dict[str, Any]:
    """An image record as Glance's image schema shows it; never raises on what
    a row holds (see :func:`presentable`)."""
    props = row["properties"] if isinstance(row["properties"], dict) else {}
    out: dict[str, Any] = {
        "id": row["id"], "name": presentable(row["name"]), "status": row["status"],
        "visibility": row["visibility"], "protected": row["protected"],
        "checksum": row["checksum"], "os_hash_algo": row["os_hash_algo"],
        "os_hash_value": row["os_hash_value"], "size": row["size"],
        "virtual_size": row["virtual_size"], "min_disk": row["min_disk"], "min_ram": row["min_ram"],
        "disk_format": row["disk_format"], "container_format": row["container_format"],
        "owner": row["owner"], "created_at": isotime(row["created_at"]),
        "updated_at": isotime(row["updated_at"] or row["created_at"]),
        "tags": presentable(row["tags"] or []), "os_hidden": props.get("os_hidden") is True,
        "self": f"/v2/images/{row['id']}", "file": f"/v2/images/{row['id']}/file",
        "schema": "/v2/schemas/image",
    }
    for key, value in presentable(props).items():
        out.setdefault(key, value)
    return out


def member_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"image_id": row["image_id"], "member_id": row["member_id"], "status": row["status"],
            "created_at": isotime(row["created_at"]),
            "updated_at": isotime(row["updated_at"] or row["created_at"]),
            "schema": "/v2/schemas/member"}


IMAGE_SCHEMA = {
    "name": "image",
    "additionalProperties": {"type": "string"},
    "properties": {
        "id": {"type": "string", "pattern": "^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}"
                                            "-([0-9a-fA-F]){4}-([0-9a-fA-F]){12}$"},
        "name": {"type": ["null", "string"], "maxLength": 255},
        "status": {"type": "string", "readOnly": True,
                   "enum": ["queued", "saving", "active", "killed", "deleted", "pending_delete",
                            "deactivated", "uploading", "importing"]},
        "visibility": {"type": "string", "enum": ["public", "private", "shared", "community"]},
        "protected": {"type": "boolean"},
        "checksum": {"type": ["null", "string"], "readOnly": True},
        "os_hash_algo": {"type": ["null", "string"], "readOnly": True},
        "os_hash_value": {"type": ["null", "string"], "readOnly": True},
        "owner": {"type": ["null", "string"]},
        "size": {"type": ["null", "integer"], "readOnly": True},
        "virtual_size": {"type": ["null", "integer"], "readOnly": True},
        "container_format": {"type": ["null", "string"],
                             "enum": [None, "ami", "ari", "aki", "bare", "ovf", "ova", "docker",
                                      "compressed"]},
        "disk_format": {"type": ["null", "string"],
                        "enum": [None, "ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2",
                                 "vdi", "iso", "ploop"]},
        "created_at": {"type": "string", "readOnly": True},
        "updated_at": {"type": "string", "readOnly": True},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 255}},
        "min_ram": {"type": "integer"},
        "min_disk": {"type": "integer"},
        "self": {"type": "string", "readOnly": True},
        "file": {"type": "string", "readOnly": True},
        "schema": {"type": "string", "readOnly": True},
        "os_hidden": {"type": "boolean"},
        "kernel_id": {"type": ["null", "string"]},
        "ramdisk_id": {"type": ["null", "string"]},
    },
    "links": [{"rel": "self", "href": "{self}"}, {"rel": "enclosure", "href": "{file}"},
              {"rel": "describedby", "href": "{schema}"}],
}


def collection_schema(name: str, item: dict[str, Any]) -> dict[str, Any]:
    """Glance's schema of a list of ``item`` (``/v2/schemas/images`` and the like)."""
    return {"name": name,
            "properties": {name: {"type": "array", "items": item},
                           "schema": {"type": "string"}, "first": {"type": "string"},
                           "next": {"type": "string"}},
            "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                      {"rel": "describedby", "href": "{schema}"}]}


_UUID_PATTERN = IMAGE_SCHEMA["properties"]["id"]["pattern"]  # type: ignore[index]
_TIME = {"type": "string", "readOnly": True}

MEMBER_SCHEMA: dict[str, Any] = {
    "name": "member",
    "properties": {
        "member_id": {"type": "string", "description": "The project the image is shared with"},
        "image_id": {"type": "string", "pattern": _UUID_PATTERN},
        "created_at": _TIME, "updated_at": _TIME,
        "status": {"type": "string", "enum": ["pending", "accepted", "rejected"]},
        "schema": {"type": "string", "readOnly": True},
    },
}

TASK_SCHEMA: dict[str, Any] = {
    "name": "task",
    "properties": {
        "id": {"type": "string", "pattern": _UUID_PATTERN},
        "type": {"type": "string", "enum": ["import", "api_image_import", "location_import"]},
        "status": {"type": "string", "enum": ["pending", "processing", "success", "failure"]},
        "input": {"type": ["null", "object"]}, "result": {"type": ["null", "object"]},
        "owner": {"type": "string"}, "message": {"type": "string"},
        "image_id": {"type": "string"}, "request_id": {"type": "string"},
        "user_id": {"type": "string"}, "expires_at": {"type": ["null", "string"]},
        "created_at": {"type": "string"}, "updated_at": {"type": "string"},
        "self": {"type": "string", "readOnly": True}, "schema": {"type": "string", "readOnly": True},
    },
}
# A task listing leaves these out of each task (Glance's partial task schema).
TASK_LISTED = {**TASK_SCHEMA, "properties": {k: v for k, v in TASK_SCHEMA["properties"].items()
                                             if k not in ("input", "result", "message")}}
