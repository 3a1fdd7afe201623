"""The records of a server create, built from the request (seed 000:
``_provision_instances``' instance objects, the block device mappings and the
request spec the conductor gets).

Plain functions of what the API looked up: no database. ``compute.api``
builds the instance rows before the create's transaction (outside SQLite's
write lock) and writes them inside it.
"""
from __future__ import annotations

import re
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from cirrus.compute import block_device
from cirrus.compute import exception as exc
from cirrus.compute.block_device import BdmRequest
from cirrus.compute.states import PowerState, TaskState, VmState
from cirrus.context import RequestContext

# What compute needs of the image travels with the request spec (no re-read).
IMAGE_SPEC_KEYS = ("id", "name", "status", "disk_format", "container_format", "size",
                   "min_ram", "min_disk", "owner", "visibility")
FLAVOR_SNAPSHOT_KEYS = ("flavorid", "name", "vcpus", "memory_mb", "root_gb", "ephemeral_gb",
                        "swap", "rxtx_factor", "extra_specs", "description")
FLAVOR_SPEC_KEYS = ("flavorid", "name", "vcpus", "memory_mb", "root_gb", "ephemeral_gb", "swap",
                    "extra_specs")


@dataclass
class CreateRequest:
    """What ``POST /servers`` asked for, parsed and typed by the API layer."""

    name: str
    flavor_id: str
    image_href: str | None
    min_count: int = 1
    max_count: int = 1
    description: str | None = None
    availability_zone: str | None = None
    key_name: str | None = None
    user_data: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    injected_files: list[tuple[str, str]] = field(default_factory=list)
    config_drive: bool = False
    security_groups: list[str] = field(default_factory=list)
    admin_password: str | None = None
    requested_networks: list[dict[str, Any]] | None = None
    block_device_mapping: list[BdmRequest] = field(default_factory=list)
    scheduler_hints: dict[str, Any] = field(default_factory=dict)
    access_ip_v4: str | None = None
    access_ip_v6: str | None = None
    tags: list[str] = field(default_factory=list)
    hostname: str | None = None
    # 2.74's host and hypervisor_hostname (admin only): Nova's requested_destination.
    requested_host: str | None = None
    requested_node: str | None = None
    # OS-DCF:diskConfig: True for AUTO, False for MANUAL, None: the image's choice.
    auto_disk_config: bool | None = None


def auto_disk_config(requested: bool | None, image_setting: Any, image_ref: str) -> bool:
    """The server's disk config (Nova's ``_check_auto_disk_config`` and
    ``_inherit_properties_from_image``): the one asked for, else the image's
    ``auto_disk_config`` property; AUTO on an image that says ``Disabled`` is 400."""
    setting = str(image_setting or "")
    if requested and setting.lower() == "disabled":
        raise exc.AutoDiskConfigDisabledByImage(image=image_ref)
    if requested is not None:
        return requested
    return setting.lower() in ("true", "1", "yes", "on", "y", "t")


def check_disk_config(row: dict[str, Any], requested: bool) -> None:
    """AUTO for an existing server: 400 if its image disabled it."""
    auto_disk_config(requested, (row["system_metadata"] or {}).get("image_auto_disk_config"),
                     row["image_ref"])


def sanitize_hostname(name: str, default: str) -> str:
    """A DNS label from a display name, as Nova derives it."""
    host = re.sub(r"[ _]", "-", name.lower())
    host = re.sub(r"[^a-z0-9.-]+", "", host)
    host = host[:63].strip(".-")
    return host or default


def instance_rows(ctx: RequestContext, req: CreateRequest, flavor: dict[str, Any],
                  image: dict[str, Any] | None, az: str, key_data: str | None,
                  reservation_id: str, count: int, now: Any) -> list[dict[str, Any]]:
    """The instance records of a request for ``count`` servers (names and
    hostnames depend on ``count``: ``web`` alone, ``web-1``… of several)."""
    snapshot = {k: flavor[k] for k in FLAVOR_SNAPSHOT_KEYS}
    system_metadata = _system_metadata(image)
    auto_disk = auto_disk_config(req.auto_disk_config,
                                 ((image or {}).get("properties") or {}).get("auto_disk_config"),
                                 (image or {}).get("id", ""))
    rows = []
    for index in range(count):
        uuid = str(uuidlib.uuid4())
        name = req.name if count == 1 else _numbered(req.name, index + 1)
        hostname = req.hostname if (req.hostname and count == 1) else \
            sanitize_hostname(name, f"server-{uuid}")
        rows.append({
            "uuid": uuid, "project_id": ctx.project_id, "user_id": ctx.user_id,
            "display_name": name, "display_description": req.description,
            "hostname": hostname, "image_ref": image["id"] if image else "",
            "flavor": snapshot, "vcpus": flavor["vcpus"], "memory_mb": flavor["memory_mb"],
            "root_gb": flavor["root_gb"], "ephemeral_gb": flavor["ephemeral_gb"],
            "vm_state": VmState.BUILDING.value, "task_state": TaskState.SCHEDULING.value,
            "power_state": PowerState.NOSTATE.value, "availability_zone": az,
            "key_name": req.key_name, "key_data": key_data, "user_data": req.user_data,
            "config_drive": req.config_drive, "metadata": dict(req.metadata),
            "system_metadata": dict(system_metadata),
            "security_groups": list(req.security_groups or ["default"]),
            "requested_networks": req.requested_networks,
            "access_ip_v4": req.access_ip_v4, "access_ip_v6": req.access_ip_v6,
            "auto_disk_config": auto_disk, "reservation_id": reservation_id, "launch_index": index, "locked": False,
            "progress": 0, "deleted": False, "created_at": now,
        })
    return rows


def _numbered(name: str, number: int) -> str:
    """``name-number``, the name cut so that the whole fits the column (255)."""
    suffix = f"-{number}"
    return name[:255 - len(suffix)] + suffix


def _system_metadata(image: dict[str, Any] | None) -> dict[str, Any]:
    if not image:
        return {}
    meta = {f"image_{k}": v for k, v in (image.get("properties") or {}).items()}
    for key in ("disk_format", "container_format", "min_ram", "min_disk"):
        if image.get(key) is not None:
            meta[f"image_{key}"] = image[key]
    meta["image_base_image_ref"] = image["id"]
    return meta


# The instance's ``image_*`` system metadata of ``image`` (rebuild resets them).
system_metadata_of_image = _system_metadata


def bdm_rows(req: CreateRequest, image: dict[str, Any] | None, flavor: dict[str, Any],
             now: Any) -> list[dict[str, Any]]:
    """The block device mappings of each server: the image's local root
    disk, or the requested mappings (:func:`cirrus.compute.block_device.bdm_rows`)."""
    if image is None and not req.block_device_mapping:
        return []
    return block_device.bdm_rows(req.block_device_mapping, image, flavor, now)


def request_spec(ctx: RequestContext, rows: list[dict[str, Any]], flavor: dict[str, Any],
                 image: dict[str, Any] | None, az: str | None, forced_host: str | None,
                 forced_node: str | None, hints: dict[str, Any],
                 group: dict[str, Any] | None,
                 destination: dict[str, str | None] | None = None) -> dict[str, Any]:
    """What the conductor and scheduler get of the request; ``destination``:
    the host and node an admin asked for (2.74), which the scheduler's filters
    still check, where a forced host skips them."""
    return {
        "instance_uuids": [r["uuid"] for r in rows], "num_instances": len(rows),
        "flavor": {k: flavor[k] for k in FLAVOR_SPEC_KEYS},
        "image": {**{k: image.get(k) for k in IMAGE_SPEC_KEYS},
                  "properties": image.get("properties") or {}}
        if image else {"id": None, "properties": {}},
        "project_id": ctx.project_id, "user_id": ctx.user_id, "availability_zone": az,
        "force_hosts": [forced_host] if forced_host else [],
        "force_nodes": [forced_node] if forced_node else [],
        "requested_destination": destination,
        "scheduler_hints": hints,
        "instance_group": {"uuid": group["uuid"], "policy": group["policy"]} if group else None,
        "retry": {"num_attempts": 1, "hosts": []},
    }
