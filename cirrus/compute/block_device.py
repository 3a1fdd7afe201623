"""Block device mappings (Nova's ``nova/block_device.py`` and the request-only
half of ``compute/api.py`` ``_validate_bdm``): the shape a parsed mapping has,
the rules that need no lookup, and the rows a create writes.

A mapping is Nova's v2 format: ``source_type`` (image, volume, snapshot,
blank) → ``destination_type`` (local, volume). ``image → local`` at boot
index 0 is the image's root disk on the host; anything ``→ volume`` lives in
block storage, the instance is *volume-backed* when its root (boot index 0)
is one.
"""
from __future__ import annotations

import uuid as uuidlib
from typing import Any, TypedDict

from cirrus.compute import exception as exc

SOURCE_TYPES = ("image", "volume", "snapshot", "blank")
DESTINATION_TYPES = ("local", "volume")
# Nova's fields.DiskBus.ALL and BlockDeviceType.ALL.
DISK_BUSES = ("fdc", "ide", "sata", "scsi", "usb", "virtio", "xen", "lxc", "uml")
DEVICE_TYPES = ("cdrom", "disk", "floppy", "fs", "lun")
ROOT_DEVICE_NAME = "/dev/vda"


class BdmRequest(TypedDict, total=False):
    """One mapping as ``POST /servers`` asked for it (after the schema)."""

    source_type: str
    destination_type: str
    uuid: str | None
    boot_index: int | None
    device_name: str | None
    volume_size: int | None
    delete_on_termination: bool
    guest_format: str | None
    disk_bus: str | None
    device_type: str | None
    volume_type: str | None
    tag: str | None
    no_device: bool


def is_volume_backed(bdms: list[BdmRequest] | list[dict[str, Any]]) -> bool:
    """The root (boot index 0) is a volume (Nova's ``is_volume_backed``)."""
    return any(b.get("boot_index") == 0 and b.get("destination_type") == "volume" for b in bdms)


def check_boot_sequence(bdms: list[BdmRequest], image_href: str | None) -> None:
    """Boot indexes 0, 1, 2… with no gap; an image root counts as 0."""
    indexes: list[int] = sorted(i for i in (b.get("boot_index") for b in bdms)
                                if i is not None and i >= 0)
    if image_href and (not indexes or indexes[0] != 0):
        indexes = [0] + indexes  # the image's root, as Nova prepends its mapping
    if not indexes or any(i != v for i, v in enumerate(indexes)):
        raise exc.InvalidBDMBootSequence()


def check_bdm_rules(bdms: list[BdmRequest], flavor: dict[str, Any], max_count: int) -> None:
    """Nova's lookup-free checks of each mapping (InvalidBDM* are 400s)."""
    for bdm in bdms:
        source, dest = bdm["source_type"], bdm["destination_type"]
        if source == "image" and dest == "local" and bdm.get("boot_index") not in (0, None):
            raise exc.InvalidBDMFormat(details="Mapping image to local is not supported.")
        if source in ("volume", "snapshot") and dest == "local":
            raise exc.InvalidBDMFormat(details=f"Mapping {source} to local is not supported.")
        if source == "image" and dest == "volume" and not bdm.get("volume_size"):
            raise exc.InvalidBDM(message="Images with destination_type 'volume' need to have "
                                         "a non-zero size specified")
        if source == "blank" and dest == "volume" and not bdm.get("volume_size"):
            raise exc.InvalidBDM(message="Blank volumes (source: 'blank', dest: 'volume') "
                                         "need to have non-zero size")
        if bdm.get("disk_bus") and bdm["disk_bus"] not in DISK_BUSES:
            raise exc.InvalidBDMDiskBus(disk_bus=bdm["disk_bus"])
        if source == "volume" and max_count > 1:
            raise exc.InvalidRequest(reason="Cannot attach one or more volumes to multiple "
                                            "instances")
    _check_local_sizes(bdms, flavor)


def _check_local_sizes(bdms: list[BdmRequest], flavor: dict[str, Any]) -> None:
    """Swap and ephemeral (blank → local) within the flavor's."""
    blanks = [b for b in bdms if b["source_type"] == "blank" and b["destination_type"] == "local"]
    swaps = [b for b in blanks if b.get("guest_format") == "swap"]
    if len(swaps) > 1:
        raise exc.InvalidBDMFormat(details="More than one swap drive requested.")
    if swaps and (swaps[0].get("volume_size") or 0) > (flavor.get("swap") or 0):
        raise exc.InvalidBDMSwapSize()
    ephemeral = sum(b.get("volume_size") or flavor.get("ephemeral_gb") or 0
                    for b in blanks if b.get("guest_format") != "swap")
    if ephemeral > (flavor.get("ephemeral_gb") or 0):
        raise exc.InvalidBDMEphemeralSize()


def check_image_size(bdm: BdmRequest, image: dict[str, Any]) -> None:
    """A volume made from ``image`` holds it: ``volume_size`` ≥ its ``min_disk``
    and its size (Nova: ``VolumeSmallerThanMinDisk``)."""
    size_gb = -(-(image.get("size") or 0) // (1 << 30))
    needed = max(image.get("min_disk") or 0, size_gb)
    if (bdm.get("volume_size") or 0) < needed:
        raise exc.VolumeSmallerThanMinDisk(volume_size=bdm.get("volume_size") or 0,
                                           image_min_disk=needed)


def device_names(bdms: list[BdmRequest]) -> list[str]:
    """Nova's ``_default_block_device_names``: the root is /dev/vda, others
    take the next free /dev/vdX in order (a name the request gave is kept)."""
    given: set[str] = {name for name in (b.get("device_name") for b in bdms) if name}
    taken = given | {ROOT_DEVICE_NAME}  # the root's, whichever mapping it is
    names = []
    for bdm in bdms:
        name = bdm.get("device_name")
        if not name:
            root_free = bdm.get("boot_index") == 0 and ROOT_DEVICE_NAME not in given
            name = ROOT_DEVICE_NAME if root_free else next_device_name(taken)
            taken.add(name)
        names.append(name)
    return names


def next_device_name(taken: set[str] | list[str], prefix: str = "/dev/vd") -> str:
    """The first ``/dev/vdX`` not in ``taken`` (vda is the root's)."""
    used = set(taken)
    for letter in "abcdefghijklmnopqrstuvwxyz":
        if f"{prefix}{letter}" not in used:
            return f"{prefix}{letter}"
    raise exc.TooManyDiskDevices(maximum=26)


def bdm_rows(bdms: list[BdmRequest], image: dict[str, Any] | None, flavor: dict[str, Any],
             now: Any) -> list[dict[str, Any]]:
    """The mappings one server gets: the image's local root unless a mapping
    is the root, then each requested one (``image`` → local at boot index 0
    is that root)."""
    rows: list[dict[str, Any]] = []
    if image is not None and not any(b.get("boot_index") == 0 for b in bdms):
        rows.append(_row({"source_type": "image", "destination_type": "local",
                          "uuid": image["id"], "boot_index": 0,
                          "device_name": ROOT_DEVICE_NAME, "volume_size": flavor["root_gb"],
                          "delete_on_termination": True}, now))
    implicit: list[BdmRequest] = [{"device_name": r["device_name"]} for r in rows]
    names = device_names([*implicit, *bdms])
    for bdm, name in zip(bdms, names[len(rows):]):
        if bdm["source_type"] == "image" and bdm["destination_type"] == "local":
            bdm = {**bdm, "volume_size": flavor["root_gb"], "delete_on_termination": True}
        rows.append(_row({**bdm, "device_name": name}, now))
    return rows


def _row(bdm: BdmRequest, now: Any) -> dict[str, Any]:
    source, uuid = bdm["source_type"], bdm.get("uuid")
    return {"uuid": str(uuidlib.uuid4()), "source_type": source,
            "destination_type": bdm["destination_type"],
            "image_id": uuid if source == "image" else None,
            "volume_id": uuid if source == "volume" else None,
            "snapshot_id": uuid if source == "snapshot" else None,
            "boot_index": bdm.get("boot_index"), "device_name": bdm.get("device_name"),
            "volume_size": bdm.get("volume_size"),
            "delete_on_termination": bool(bdm.get("delete_on_termination",
                                                  bdm["destination_type"] == "local")),
            "guest_format": bdm.get("guest_format"), "disk_bus": bdm.get("disk_bus"),
            "device_type": bdm.get("device_type") or "disk",
            "volume_type": bdm.get("volume_type"), "tag": bdm.get("tag"),
            "attachment_id": None, "created_at": now}
