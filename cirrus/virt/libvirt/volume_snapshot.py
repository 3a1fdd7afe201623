"""Assisted snapshots of file-backed volumes in a running libvirt guest
(Nova's ``volume_snapshot_create`` / ``volume_snapshot_delete``).

Create: block storage has already made the qcow2 overlay ``new_file``
beside the volume's active file (backed by it, as Cinder's remote-filesystem
drivers do); an external, disk-only snapshot without metadata that reuses
it (quiesced through the guest agent when there is one, else without)
makes the guest write to the overlay, the old file now its snapshot.
Delete: ``merge_target_file`` None is a pull (``blockRebase``) of the chain
into the active file down to ``file_to_merge`` (None: all of it); else a
commit (``blockCommit``) of ``file_to_merge`` into ``merge_target_file``.
Either job is waited for (bounded). Only a running guest is changed.
"""
from __future__ import annotations

import asyncio
import os
import time
import xml.etree.ElementTree as ET
from typing import Any, Mapping

from cirrus.virt import exception as vexc

SERIAL_LEN = 20  # the guest's serial holds the volume id's first 20 characters
MERGE_TIMEOUT = 600.0
MERGE_POLL = 0.5


def volume_disk_source(domain_xml: str, volume_id: str) -> tuple[str, str]:
    """(target, source file) of the file disk of ``volume_id`` in the domain;
    VolumeSnapshotFailed if it has none, or the volume is not a file."""
    for disk in ET.fromstring(domain_xml).findall("./devices/disk"):
        if disk.findtext("serial") != volume_id[:SERIAL_LEN]:
            continue
        source, target = disk.find("source"), disk.find("target")
        if disk.get("type") != "file" or source is None or not source.get("file"):
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id,
                                            reason="the volume is not a file on this host")
        return str(target.get("dev") if target is not None else ""), str(source.get("file"))
    raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason="not attached to the guest")


def snapshot_xml(domain_xml: str, target: str, new_path: str) -> str:
    """The ``<domainsnapshot>`` taking ``target`` externally into ``new_path``
    (a qcow2 file) and no other disk."""
    root = ET.Element("domainsnapshot")
    disks = ET.SubElement(root, "disks")
    for disk in ET.fromstring(domain_xml).findall("./devices/disk"):
        found = disk.find("target")
        name = found.get("dev") if found is not None else None
        if not name:
            continue
        if name != target:
            ET.SubElement(disks, "disk", name=name, snapshot="no")
            continue
        taken = ET.SubElement(disks, "disk", name=name, snapshot="external", type="file")
        ET.SubElement(taken, "driver", type="qcow2")
        ET.SubElement(taken, "source", file=new_path)
    return ET.tostring(root, encoding="unicode")


def _beside(active: str, name: str | None) -> str | None:
    """A chain file named as block storage names it (relative to the
    active file's directory), as a path."""
    if name is None:
        return None
    return name if os.path.isabs(name) else os.path.join(os.path.dirname(active), name)


class LibvirtVolumeSnapshotOps:
    """Mixed into LibvirtDriver (which provides ``host``)."""

    host: Any

    def _snapshot_domain(self, conn: Any, uuid: str, volume_id: str) -> Any:
        dom = self.host.find_domain(conn, uuid)
        if dom is None or not dom.isActive():
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id,
                                            reason="the guest is not running")
        return dom

    async def volume_snapshot_create(self, context: Any, instance: dict[str, Any],
                                     volume_id: str, create_info: Mapping[str, Any]) -> None:
        if create_info.get("type") != "qcow2" or not create_info.get("new_file"):
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id,
                                            reason="a qcow2 new_file is required")
        try:
            await self.host.call(self._external_snapshot, instance["uuid"], volume_id,
                                 str(create_info["new_file"]))
        except self.host.libvirt.libvirtError as e:
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id,
                                            reason=e.get_error_message()) from e

    def _external_snapshot(self, conn: Any, uuid: str, volume_id: str, new_file: str) -> None:
        libvirt = self.host.libvirt
        dom = self._snapshot_domain(conn, uuid, volume_id)
        live = dom.XMLDesc(0)
        target, active = volume_disk_source(live, volume_id)
        xml = snapshot_xml(live, target, _beside(active, new_file) or new_file)
        flags = (libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_DISK_ONLY
                 | libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_NO_METADATA
                 | libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_REUSE_EXT)
        try:  # quiesced if the guest agent answers, as Nova tries first
            dom.snapshotCreateXML(xml, flags | libvirt.VIR_DOMAIN_SNAPSHOT_CREATE_QUIESCE)
        except libvirt.libvirtError:
            dom.snapshotCreateXML(xml, flags)

    async def volume_snapshot_delete(self, context: Any, instance: dict[str, Any],
                                     volume_id: str, snapshot_id: str,
                                     delete_info: Mapping[str, Any]) -> None:
        if delete_info.get("type") != "qcow2":
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason=f"unknown delete_info "
                                            f"type {delete_info.get('type')!r}")
        uuid = instance["uuid"]
        try:
            target = await self.host.call(self._start_merge, uuid, volume_id,
                                          delete_info.get("file_to_merge"),
                                          delete_info.get("merge_target_file"))
            deadline = time.monotonic() + MERGE_TIMEOUT
            while await self.host.call(self._merging, uuid, volume_id, target):
                if time.monotonic() > deadline:
                    raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason=f"the merge "
                                                    f"took over {MERGE_TIMEOUT:g}s")
                await asyncio.sleep(MERGE_POLL)
        except self.host.libvirt.libvirtError as e:
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id,
                                            reason=e.get_error_message()) from e

    def _start_merge(self, conn: Any, uuid: str, volume_id: str, to_merge: str | None,
                     target_file: str | None) -> str:
        """Start the pull or commit; the disk's target."""
        libvirt = self.host.libvirt
        dom = self._snapshot_domain(conn, uuid, volume_id)
        target, active = volume_disk_source(dom.XMLDesc(0), volume_id)
        if target_file is None:
            base = _beside(active, to_merge)
            # relative: the active file keeps naming its backing file as block storage does
            flags = libvirt.VIR_DOMAIN_BLOCK_REBASE_RELATIVE if base else 0
            dom.blockRebase(target, base, 0, flags)
            return target
        top = _beside(active, to_merge)
        if top is None or top == active:
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason="the active file is "
                                            "not committed; it pulls its backing file instead")
        dom.blockCommit(target, _beside(active, target_file), top, 0,
                        libvirt.VIR_DOMAIN_BLOCK_COMMIT_RELATIVE)
        return target

    def _merging(self, conn: Any, uuid: str, volume_id: str, target: str) -> bool:
        """Whether the disk's block job still runs."""
        dom = self._snapshot_domain(conn, uuid, volume_id)
        return bool(dom.blockJobInfo(target, 0))
