"""The JSON of an image as Glance shows it."""
from __future__ import annotations

from typing import Any

from cirrus.db.base import isotime


def image_view(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row["id"], "name": row["name"], "status": row["status"],
        "visibility": row["visibility"], "protected": row["protected"],
        "checksum": row["checksum"], "os_hash_algo": row["os_hash_algo"],
        "os_hash_value": row["os_hash_value"], "size": row["size"],
        "virtual_size": row["virtual_size"], "min_disk": row["min_disk"], "min_ram": row["min_ram"],
        "disk_format": row["disk_format"], "container_format": row["container_format"],
        "owner": row["owner"], "created_at": isotime(row["created_at"]),
        "updated_at": isotime(row["updated_at"] or row["created_at"]),
        "tags": row["tags"] or [], "os_hidden": False,
        "self": f"/v2/images/{row['id']}", "file": f"/v2/images/{row['id']}/file",
        "schema": "/v2/schemas/image",
    }
    for key, value in (row["properties"] or {}).items():
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
