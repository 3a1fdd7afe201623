"""Volumes of libvirt guests (Nova's ``virt/libvirt/volume``: LibvirtVolumeDriver
for ``local`` files or block devices, LibvirtNetVolumeDriver for ``nbd``).

A volume is a virtio-blk ``<disk>``: in the domain XML at spawn (the root
disk itself when the server is volume-backed), hot-plugged into a running
guest with ``attachDeviceFlags`` (live and persistent) and unplugged with
``detachDeviceFlags``, waiting — bounded — until the guest has let it go;
swapped for another volume in a running guest by a block copy and a pivot.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
import xml.etree.ElementTree as ET
from typing import Any, Mapping

from cirrus.virt import exception as vexc
from cirrus.virt.libvirt.config import DiskSpec, disk_xml

DETACH_TIMEOUT = 30.0  # the guest's time to release an unplugged disk
DETACH_POLL = 0.2
DISK_BUSES = ("virtio", "scsi", "sata", "ide", "usb")
SWAP_TIMEOUT = 600.0  # the copy of a whole volume, on a slow host
SWAP_POLL = 0.5


def volume_disk(connection_info: Mapping[str, Any], mountpoint: str,
                disk_bus: str | None = None) -> DiskSpec:
    """The disk of a volume plugged at ``mountpoint`` (``/dev/vdb`` → ``vdb``);
    VolumeAttachFailed for a transport this driver does not know."""
    kind = connection_info.get("driver_volume_type")
    data = connection_info.get("data") or {}
    target = mountpoint.rsplit("/", 1)[-1]
    bus = disk_bus if disk_bus in DISK_BUSES else "virtio"
    serial = connection_info.get("serial") or data.get("volume_id")
    readonly = data.get("access_mode") == "ro"
    if kind == "local":
        return DiskSpec(path=str(data["device_path"]), target=target,
                        fmt=str(data.get("format") or "raw"), readonly=readonly,
                        serial=serial, bus=bus)
    if kind == "nbd":
        return DiskSpec(path=str(data.get("name") or ""), target=target, fmt="raw",
                        readonly=readonly, protocol="nbd", host=str(data.get("host")),
                        port=int(data.get("port") or 10809), serial=serial, bus=bus)
    raise vexc.VolumeAttachFailed(volume_id=serial or "", reason=f"unsupported volume "
                                                                f"transport {kind!r}")


def volume_disks(block_device_info: Mapping[str, Any] | None) -> list[DiskSpec]:
    """The disks of the volumes in a guest's block device info, in order."""
    out = []
    for bdm in (block_device_info or {}).get("block_device_mapping", []):
        info = bdm.get("connection_info")
        if bdm.get("destination_type") == "volume" and info:
            info = {**info, "serial": bdm.get("volume_id")}
            out.append(volume_disk(info, bdm["device_name"], bdm.get("disk_bus")))
    return out


def layout_with_volumes(layout: dict[str, Any],
                        block_device_info: Mapping[str, Any] | None) -> dict[str, Any]:
    """A guest's disk layout with the volumes of ``block_device_info`` in
    place of the ones it had (None: the layout as it is)."""
    if block_device_info is None:
        return layout
    local = [d for d in layout["disks"] if not d.get("serial")]
    volumes = [dataclasses.asdict(v) for v in volume_disks(block_device_info)]
    return {**layout, "disks": sorted(local + volumes, key=lambda d: d["target"])}


def has_target(domain_xml: str, target: str) -> bool:
    """The domain (as its XML describes it) has a disk at ``target``."""
    return any(t.get("dev") == target
               for t in ET.fromstring(domain_xml).findall("./devices/disk/target"))


class LibvirtVolumeOps:
    """Mixed into LibvirtDriver (which provides ``host`` and ``hostname``)."""

    host: Any
    hostname: str
    settings: Any

    def get_volume_connector(self, instance: dict[str, Any]) -> dict[str, Any]:
        """This host as block storage sees it: its name and the address other
        hosts reach it at (the one it reports for live migration)."""
        ip = getattr(self.settings, "live_migration_inbound_addr", "") or "127.0.0.1"
        return {"host": self.hostname, "ip": ip, "platform": "x86_64", "os_type": "linux",
                "multipath": False}

    def _affect(self, dom: Any) -> int:
        libvirt = self.host.libvirt
        live = libvirt.VIR_DOMAIN_AFFECT_LIVE if dom.isActive() else 0
        return int(libvirt.VIR_DOMAIN_AFFECT_CONFIG | live)

    async def attach_volume(self, context: Any, connection_info: Mapping[str, Any],
                            instance: dict[str, Any], mountpoint: str,
                            disk_bus: str | None = None, device_type: str | None = None) -> None:
        disk = volume_disk(connection_info, mountpoint, disk_bus)
        xml = disk_xml(disk)

        def attach(conn: Any) -> None:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is None:
                raise vexc.InstanceNotFound(instance_id=instance["uuid"])
            dom.attachDeviceFlags(xml, self._affect(dom))
        try:
            await self.host.call(attach)
        except self.host.libvirt.libvirtError as e:
            raise vexc.VolumeAttachFailed(volume_id=disk.serial or "",
                                          reason=e.get_error_message()) from e

    async def detach_volume(self, context: Any, connection_info: Mapping[str, Any],
                            instance: dict[str, Any], mountpoint: str) -> None:
        target = mountpoint.rsplit("/", 1)[-1]

        def detach(conn: Any) -> bool:
            """Unplug; True if the live guest still has to let it go."""
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is None:
                return False
            live = dom.isActive()
            for flags, inactive in ((self._affect(dom), False), (0, True)):
                xml = dom.XMLDesc(self.host.libvirt.VIR_DOMAIN_XML_INACTIVE if inactive else 0)
                element = _disk_at(xml, target)
                if element is not None:
                    dom.detachDeviceFlags(element, flags)
                    break
            return bool(live)
        try:
            if await self.host.call(detach):
                await self._wait_for_detach(instance["uuid"], target, mountpoint)
        except self.host.libvirt.libvirtError as e:
            raise vexc.DeviceDetachFailed(device=mountpoint,
                                          reason=e.get_error_message()) from e

    async def _wait_for_detach(self, uuid: str, target: str, mountpoint: str) -> None:
        """Until the running guest no longer shows the disk (bounded)."""
        def still_there(conn: Any) -> bool:
            dom = self.host.find_domain(conn, uuid)
            return dom is not None and dom.isActive() and has_target(dom.XMLDesc(0), target)
        deadline = time.monotonic() + DETACH_TIMEOUT
        while await self.host.call(still_there):
            if time.monotonic() > deadline:
                raise vexc.DeviceDetachFailed(device=mountpoint, reason=f"the guest still has "
                                              f"it after {DETACH_TIMEOUT:g}s")
            await asyncio.sleep(DETACH_POLL)

    async def swap_volume(self, context: Any, old_connection_info: Mapping[str, Any],
                          new_connection_info: Mapping[str, Any], instance: dict[str, Any],
                          mountpoint: str) -> None:
        """Nova's ``_swap_volume``: the running guest's disk mirrored onto the
        new volume (``blockCopy`` into the existing file or export), pivoted
        to it once in sync, and the persistent definition naming it. Raises
        VolumeAttachFailed (a guest not running, a refused or slow copy), the
        guest still on the old volume."""
        target = mountpoint.rsplit("/", 1)[-1]
        new = volume_disk(new_connection_info, mountpoint)
        try:
            await self.host.call(self._start_copy, instance["uuid"], target, disk_xml(new))
            await self._pivot_when_ready(instance["uuid"], target, disk_xml(new),
                                         new.serial or "")
        except self.host.libvirt.libvirtError as e:
            raise vexc.VolumeAttachFailed(volume_id=new.serial or "",
                                          reason=e.get_error_message()) from e

    def _running_domain(self, conn: Any, uuid: str) -> Any:
        dom = self.host.find_domain(conn, uuid)
        if dom is None or not dom.isActive():
            raise vexc.VolumeAttachFailed(volume_id="", reason="a volume is swapped in a "
                                                               "running guest only")
        return dom

    def _start_copy(self, conn: Any, uuid: str, target: str, new_xml: str) -> None:
        libvirt = self.host.libvirt
        # A transient job: the domain stays persistent (no undefine, as older
        # Nova needed); the definition is updated after the pivot.
        self._running_domain(conn, uuid).blockCopy(
            target, new_xml, None,
            libvirt.VIR_DOMAIN_BLOCK_COPY_REUSE_EXT | libvirt.VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB)

    async def _pivot_when_ready(self, uuid: str, target: str, new_xml: str,
                                volume_id: str) -> None:
        """Poll the copy until it mirrors the disk, then pivot (bounded; on
        the deadline the copy is cancelled)."""
        deadline = time.monotonic() + SWAP_TIMEOUT
        while not await self.host.call(self._try_pivot, uuid, target, new_xml):
            if time.monotonic() > deadline:
                await self.host.call(self._cancel_copy, uuid, target)
                raise vexc.VolumeAttachFailed(volume_id=volume_id, reason=f"the copy to the new "
                                              f"volume took over {SWAP_TIMEOUT:g}s")
            await asyncio.sleep(SWAP_POLL)

    def _try_pivot(self, conn: Any, uuid: str, target: str, new_xml: str) -> bool:
        """Pivot if the copy is in sync; False while it is still copying."""
        libvirt = self.host.libvirt
        dom = self._running_domain(conn, uuid)
        info = dom.blockJobInfo(target, 0)
        if not info or info.get("end", 0) == 0 or info["cur"] != info["end"]:
            return False
        dom.blockJobAbort(target, libvirt.VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT)
        old = _disk_at(dom.XMLDesc(libvirt.VIR_DOMAIN_XML_INACTIVE), target)
        if old is not None:
            dom.detachDeviceFlags(old, libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        dom.attachDeviceFlags(new_xml, libvirt.VIR_DOMAIN_AFFECT_CONFIG)
        return True

    def _cancel_copy(self, conn: Any, uuid: str, target: str) -> None:
        dom = self.host.find_domain(conn, uuid)
        if dom is not None:
            dom.blockJobAbort(target, 0)


def _disk_at(domain_xml: str, target: str) -> str | None:
    """The XML of the domain's disk at ``target``, or None."""
    for disk in ET.fromstring(domain_xml).findall("./devices/disk"):
        found = disk.find("target")
        if found is not None and found.get("dev") == target:
            return ET.tostring(disk, encoding="unicode")
    return None
