"""What the compute API works out for the server actions that touch images
(rebuild, createImage, createBackup, shelve, unshelve) before it casts them:
the rebuild's new instance values and the snapshot image's record, as Nova's
``compute/api.py`` ``rebuild`` and ``compute/utils.py`` ``create_image`` do.
Pure functions of the rows read: no I/O here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cirrus.compute import records
from cirrus.compute.records import system_metadata_of_image

# Image properties a snapshot never inherits (Nova's NON_INHERITABLE_IMAGE_PROPERTIES
# and namespaces), and the keys of the base image record it does.
NON_INHERITABLE = frozenset({
    "cinder_encryption_key_id", "cinder_encryption_key_deletion_policy", "img_signature",
    "img_signature_hash_method", "img_signature_key_type", "img_signature_certificate_uuid"})
NON_INHERITABLE_PREFIXES = ("os_glance",)
INHERITABLE_CORE = ("min_ram", "min_disk", "disk_format", "container_format")
# Kept in system_metadata, never copied to a snapshot (Nova's SM_SKIP_KEYS and ours).
SKIPPED = frozenset({"base_image_ref", "image_id", "image_name", "image_size",
                     "shelved_at", "shelved_image_id", "shelved_host"})
SHELVED_KEYS = ("shelved_at", "shelved_image_id", "shelved_host")


@dataclass
class UnshelveRequest:
    """Where an unshelve asks to go (2.77, 2.91): ``zone_given`` with
    ``zone`` None unpins the server from its zone."""

    zone_given: bool = False
    zone: str | None = None
    host: str | None = None  # an admin's (2.91)


@dataclass
class RebuildRequest:
    """A rebuild's parsed body (``POST /servers/{id}/action {"rebuild": …}``).

    ``UNSET`` fields were not in the body and keep the instance's value."""

    image_ref: str
    admin_password: str | None
    changes: dict[str, Any] = field(default_factory=dict)  # name, metadata, …: given values
    injected_files: list[tuple[str, str]] = field(default_factory=list)
    preserve_ephemeral: bool = False
    key_name_given: bool = False
    key_name: str | None = None
    trusted_image_certificates: list[str] | None = None


def rebuild_values(row: dict[str, Any], image: dict[str, Any], req: RebuildRequest,
                   key_data: str | None) -> dict[str, Any]:
    """The instance values the API saves with the REBUILDING transition: the new
    image (and its ``image_*`` system metadata, as Nova's
    ``_reset_image_metadata``) and each attribute the body gave."""
    system_metadata = {k: v for k, v in (row["system_metadata"] or {}).items()
                       if not k.startswith("image_")}
    system_metadata.update(system_metadata_of_image(image))
    values: dict[str, Any] = {"image_ref": image["id"], "system_metadata": system_metadata,
                              "progress": 0, **req.changes}
    if "auto_disk_config" in req.changes:  # against the new image, as Nova's rebuild
        records.auto_disk_config(req.changes["auto_disk_config"],
                                 (image.get("properties") or {}).get("auto_disk_config"),
                                 image["id"])
    if req.key_name_given:
        values.update(key_name=req.key_name, key_data=key_data)
    return values


def snapshot_image_body(ctx_project: str | None, ctx_user: str | None, row: dict[str, Any],
                        name: str, image_type: str, extra: dict[str, str]) -> dict[str, Any]:
    """The Glance create body of a snapshot (or backup) of instance ``row``:
    the base image's inheritable record and properties (from the instance's
    system metadata), then Nova's own properties, then ``extra`` (the request's
    metadata; backup_type). Private to the owner, shared when someone else
    (an admin) asks."""
    body: dict[str, Any] = {"name": name}
    properties: dict[str, str] = {}
    for key, value in (row["system_metadata"] or {}).items():
        if not key.startswith("image_") or value is None:
            continue
        key = key[len("image_"):]
        if key in SKIPPED or key in NON_INHERITABLE or key.startswith(NON_INHERITABLE_PREFIXES):
            continue
        if key in INHERITABLE_CORE:
            body[key] = value
        else:
            properties[key] = str(value)
    # Nova's system metadata keeps the flavor's disk as the image's least disk.
    body["min_disk"] = max(int(body.get("min_disk") or 0), int(row["root_gb"] or 0))
    body["min_ram"] = int(body.get("min_ram") or 0)
    if image_type == "snapshot":  # the driver says which format it uploads
        body.pop("disk_format", None)
        body.pop("container_format", None)
    properties.update({"instance_uuid": row["uuid"], "user_id": str(ctx_user),
                       "image_type": image_type, "base_image_ref": row["image_ref"] or "",
                       "owner_id": row["project_id"], "image_location": "snapshot",
                       "image_state": "available"})
    if ctx_project != row["project_id"]:
        body["visibility"] = "shared"
        properties["instance_owner"] = row["project_id"]
    else:
        body["visibility"] = "private"
    properties.update(extra)
    return {**body, **properties}


def without_shelved_keys(system_metadata: dict[str, Any] | None) -> dict[str, Any]:
    """``system_metadata`` with what shelve recorded removed (Nova's
    ``remove_shelved_keys_from_system_metadata``)."""
    return {k: v for k, v in (system_metadata or {}).items() if k not in SHELVED_KEYS}
