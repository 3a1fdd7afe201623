"""An in-memory block storage service behind the
:class:`~cirrus.volume.cinder.VolumeAPI` protocol, for compute's tests.

It keeps Cinder's states and rules (a volume is reserved by
``attachment_create``, exported by ``attachment_update``, in use after
``attachment_complete``, available again once its last attachment is
deleted; only an available volume is deleted) and takes faults as data::

    volumes.faults["attachment_update"].append(VolumeBackendError("export failed"))
    volumes.creating_polls = 3  # a new volume reads "creating" three times first
"""
from __future__ import annotations

import uuid as uuidlib
from collections import defaultdict
from dataclasses import dataclass, field

from cirrus.context import RequestContext
from cirrus.exception import CirrusException, Invalid, NotFound
from cirrus.volume.cinder import (Attachment, ConnectionInfo, Connector, Snapshot, Volume,
                                  VolumeAttachmentRef)


class VolumeNotFound(NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class AttachmentNotFound(NotFound):
    msg_fmt = "Attachment %(attachment_id)s could not be found."


class SnapshotNotFound(NotFound):
    msg_fmt = "Snapshot %(snapshot_id)s could not be found."


class InvalidVolume(Invalid):
    msg_fmt = "Invalid volume: %(reason)s"


class VolumeBackendError(CirrusException):
    msg_fmt = "The volume backend failed: %(reason)s"


@dataclass
class FakeVolumes:
    """Volumes, attachments and snapshots in memory; ``calls`` logs each call."""

    volumes: dict[str, Volume] = field(default_factory=dict)
    attachments: dict[str, Attachment] = field(default_factory=dict)
    snapshots: dict[str, Snapshot] = field(default_factory=dict)
    faults: dict[str, list[BaseException]] = field(default_factory=lambda: defaultdict(list))
    calls: list[tuple[str, str]] = field(default_factory=list)
    creating_polls: int = 0  # gets that still see a new volume "creating"
    create_fails: bool = False  # a new volume ends in "error"
    _polls: dict[str, int] = field(default_factory=dict)

    def _call(self, op: str, subject: str) -> None:
        self.calls.append((op, subject))
        if self.faults.get(op):
            raise self.faults[op].pop(0)

    # -- test set-up -------------------------------------------------------------------
    def add_volume(self, project_id: str | None, size: int = 1, status: str = "available",
                   availability_zone: str = "nova", bootable: bool = False,
                   multiattach: bool = False, name: str = "vol") -> str:
        volume_id = str(uuidlib.uuid4())
        self.volumes[volume_id] = Volume(
            id=volume_id, status=status, size=size, name=name,  # type: ignore[typeddict-item]
            availability_zone=availability_zone, bootable=bootable, multiattach=multiattach,
            volume_type=None, attachments=[], project_id=project_id or "",
            volume_image_metadata={})
        return volume_id

    def status(self, volume_id: str) -> str:
        return self.volumes[volume_id]["status"]

    # -- VolumeAPI ---------------------------------------------------------------------
    async def get(self, ctx: RequestContext, volume_id: str) -> Volume:
        self._call("get", volume_id)
        volume = self.volumes.get(volume_id)
        if volume is None or not (ctx.is_admin or volume["project_id"] == ctx.project_id):
            raise VolumeNotFound(volume_id=volume_id)
        if volume["status"] == "creating":
            seen = self._polls.get(volume_id, 0)
            self._polls[volume_id] = seen + 1
            if seen >= self.creating_polls:
                volume["status"] = "error" if self.create_fails else "available"
        return dict(volume)  # type: ignore[return-value]

    async def get_all(self, ctx: RequestContext) -> list[Volume]:
        self._call("get_all", ctx.project_id or "")
        return [dict(v) for v in self.volumes.values()  # type: ignore[misc]
                if v["project_id"] == ctx.project_id]

    async def create(self, ctx: RequestContext, size: int, name: str, description: str,
                     snapshot_id: str | None = None, image_id: str | None = None,
                     volume_type: str | None = None,
                     availability_zone: str | None = None,
                     metadata: dict[str, str] | None = None) -> Volume:
        self._call("create", name)
        if snapshot_id is not None and snapshot_id not in self.snapshots:
            raise SnapshotNotFound(snapshot_id=snapshot_id)
        volume_id = self.add_volume(ctx.project_id, size, "creating",
                                    availability_zone or "nova", bootable=image_id is not None,
                                    name=name)
        self.volumes[volume_id]["volume_type"] = volume_type
        if image_id:
            self.volumes[volume_id]["volume_image_metadata"] = {"image_id": image_id}
        return dict(self.volumes[volume_id])  # type: ignore[return-value]

    async def delete(self, ctx: RequestContext, volume_id: str) -> None:
        self._call("delete", volume_id)
        volume = self.volumes.get(volume_id)
        if volume is None:
            raise VolumeNotFound(volume_id=volume_id)
        if volume["status"] not in ("available", "error") or volume["attachments"]:
            raise InvalidVolume(reason=f"volume {volume_id} is {volume['status']}")
        del self.volumes[volume_id]

    async def attachment_create(self, ctx: RequestContext, volume_id: str, instance_uuid: str,
                                connector: Connector | None = None,
                                mountpoint: str | None = None) -> Attachment:
        self._call("attachment_create", volume_id)
        volume = await self.get(ctx, volume_id)
        busy = volume["status"] != "available"
        mine = [a for a in self.attachments.values() if a["volume_id"] == volume_id]
        moving = bool(mine) and volume["status"] in ("in-use", "reserved", "attaching") and all(
            a["instance"] == instance_uuid for a in mine)  # Cinder's override for a move
        if busy and not moving and not (volume["multiattach"] and volume["status"] == "in-use"):
            raise InvalidVolume(reason=f"volume {volume_id} status must be available "
                                       f"(is {volume['status']})")
        attachment = Attachment(id=str(uuidlib.uuid4()), volume_id=volume_id,
                                instance=instance_uuid, status="reserved", attach_mode="rw",
                                connection_info=None)
        self.attachments[attachment["id"]] = attachment
        if not busy:
            self.volumes[volume_id]["status"] = "reserved"
        return dict(attachment)  # type: ignore[return-value]

    def _attachment(self, attachment_id: str) -> Attachment:
        attachment = self.attachments.get(attachment_id)
        if attachment is None:
            raise AttachmentNotFound(attachment_id=attachment_id)
        return attachment

    async def attachment_update(self, ctx: RequestContext, attachment_id: str,
                                connector: Connector,
                                mountpoint: str | None = None) -> Attachment:
        self._call("attachment_update", attachment_id)
        attachment = self._attachment(attachment_id)
        volume_id = attachment["volume_id"]
        info: ConnectionInfo = {"driver_volume_type": "local", "data": {
            "device_path": f"/fake/volumes/{volume_id}", "format": "raw", "access_mode": "rw",
            "volume_id": volume_id}}  # as the volume service's (volume/attach.py)
        attachment["status"] = "attaching"
        attachment["connection_info"] = info
        volume = self.volumes[volume_id]
        if volume["status"] == "reserved":
            volume["status"] = "attaching"
        volume["attachments"] = [a for a in volume["attachments"]
                                 if a["attachment_id"] != attachment_id] + [VolumeAttachmentRef(
            id=attachment_id, attachment_id=attachment_id, volume_id=volume_id,
            server_id=attachment["instance"], host_name=connector.get("host"),
            device=mountpoint, attached_at=None)]
        return dict(attachment)  # type: ignore[return-value]

    async def attachment_complete(self, ctx: RequestContext, attachment_id: str) -> None:
        self._call("attachment_complete", attachment_id)
        attachment = self._attachment(attachment_id)
        attachment["status"] = "attached"
        self.volumes[attachment["volume_id"]]["status"] = "in-use"

    async def attachment_delete(self, ctx: RequestContext, attachment_id: str) -> None:
        self._call("attachment_delete", attachment_id)
        attachment = self._attachment(attachment_id)
        del self.attachments[attachment_id]
        volume = self.volumes.get(attachment["volume_id"])
        if volume is None:
            return
        volume["attachments"] = [a for a in volume["attachments"]
                                 if a["attachment_id"] != attachment_id]
        left = [a for a in self.attachments.values() if a["volume_id"] == volume["id"]]
        if not left:
            volume["status"] = "available"
        elif not any(a["status"] == "attached" for a in left):
            volume["status"] = "reserved"

    async def create_snapshot(self, ctx: RequestContext, volume_id: str, name: str,
                              description: str) -> Snapshot:
        self._call("create_snapshot", volume_id)
        volume = await self.get(ctx, volume_id)
        if volume["status"] != "available":
            raise InvalidVolume(reason=f"volume {volume_id} is {volume['status']}")
        return await self.create_snapshot_force(ctx, volume_id, name, description)

    async def get_all_snapshots(self, ctx: RequestContext) -> list[Snapshot]:
        self._call("get_all_snapshots", ctx.project_id or "")
        return [dict(s) for s in self.snapshots.values()]  # type: ignore[misc]

    async def create_snapshot_force(self, ctx: RequestContext, volume_id: str, name: str,
                                    description: str) -> Snapshot:
        self._call("create_snapshot_force", volume_id)
        volume = await self.get(ctx, volume_id)
        snapshot = Snapshot(id=str(uuidlib.uuid4()), volume_id=volume_id, status="available",
                            size=volume["size"], name=name)
        self.snapshots[snapshot["id"]] = snapshot
        return dict(snapshot)  # type: ignore[return-value]

    async def get_snapshot(self, ctx: RequestContext, snapshot_id: str) -> Snapshot:
        self._call("get_snapshot", snapshot_id)
        if snapshot_id not in self.snapshots:
            raise SnapshotNotFound(snapshot_id=snapshot_id)
        return dict(self.snapshots[snapshot_id])  # type: ignore[return-value]

    async def delete_snapshot(self, ctx: RequestContext, snapshot_id: str) -> None:
        self._call("delete_snapshot", snapshot_id)
        if self.snapshots.pop(snapshot_id, None) is None:
            raise SnapshotNotFound(snapshot_id=snapshot_id)

    async def update_snapshot_status(self, ctx: RequestContext, snapshot_id: str, status: str,
                                     progress: str | None = None) -> None:
        self._call("update_snapshot_status", f"{snapshot_id}:{status}:{progress or ''}")
        if snapshot_id not in self.snapshots:
            raise SnapshotNotFound(snapshot_id=snapshot_id)
        self.snapshots[snapshot_id]["status"] = status
