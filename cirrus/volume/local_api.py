""":class:`LocalVolumeAPI`: compute's :class:`~cirrus.volume.cinder.VolumeAPI`
on the volume service's own objects (no HTTP hop), as the network API is."""
from __future__ import annotations

from typing import Any

from cirrus.context import RequestContext
from cirrus.db.base import isotime
from cirrus.volume.cinder import (Attachment, Connector, Snapshot, Volume, VolumeAttachmentRef,
                                  VolumeAPI)
from cirrus.volume.manager import BlockStorage
from cirrus.volume.service import CreateRequest

Row = dict[str, Any]


def _attachment_ref(row: Row) -> VolumeAttachmentRef:
    return {"id": row["id"], "attachment_id": row["id"], "volume_id": row["volume_id"],
            "server_id": row["instance_uuid"], "host_name": row["attached_host"],
            "device": row["mountpoint"], "attached_at": isotime(row["attach_time"])}


def to_volume(row: Row) -> Volume:
    vtype = row.get("volume_type")
    return {"id": row["id"], "status": row["status"], "size": row["size"],
            "name": row["name"] or "", "availability_zone": row["availability_zone"],
            "bootable": bool(row["bootable"]), "multiattach": bool(row["multiattach"]),
            "volume_type": vtype["name"] if vtype else None,
            "attachments": [_attachment_ref(a) for a in row.get("attachments", [])],
            "project_id": row["project_id"],
            "volume_image_metadata": dict(row["image_metadata"] or {}),
            "created_at": isotime(row["created_at"]) or "", "description": row["description"],
            "snapshot_id": row["snapshot_id"], "metadata": dict(row["metadata"] or {}),
            "encrypted": bool(row.get("encrypted"))}


def to_attachment(row: Row) -> Attachment:
    return {"id": row["id"], "volume_id": row["volume_id"], "instance": row["instance_uuid"],
            "status": row["attach_status"], "attach_mode": row["attach_mode"],
            "connection_info": row["connection_info"]}


def to_snapshot(row: Row) -> Snapshot:
    return {"id": row["id"], "volume_id": row["volume_id"], "status": row["status"],
            "size": row["size"], "name": row["name"] or "",
            "created_at": isotime(row["created_at"]) or "", "description": row["description"]}


class LocalVolumeAPI:
    """Compute's block storage calls, answered in process."""

    def __init__(self, block_storage: BlockStorage) -> None:
        self.bs = block_storage

    async def get(self, ctx: RequestContext, volume_id: str) -> Volume:
        return to_volume(await self.bs.volumes.get(ctx, volume_id))

    async def get_all(self, ctx: RequestContext) -> list[Volume]:
        rows = await self.bs.volumes.list(ctx, {}, all_tenants=False)
        return [to_volume(r) for r in sorted(rows, key=lambda r: r["created_at"])]

    async def create(self, ctx: RequestContext, size: int, name: str, description: str,
                     snapshot_id: str | None = None, image_id: str | None = None,
                     volume_type: str | None = None,
                     availability_zone: str | None = None,
                     metadata: dict[str, str] | None = None) -> Volume:
        row = await self.bs.volumes.create(ctx, CreateRequest(
            size=size, name=name, description=description, volume_type=volume_type,
            availability_zone=availability_zone, snapshot_id=snapshot_id, image_id=image_id,
            metadata=metadata))
        return to_volume(row)

    async def delete(self, ctx: RequestContext, volume_id: str) -> None:
        await self.bs.volumes.delete(ctx, volume_id)

    async def attachment_create(self, ctx: RequestContext, volume_id: str,
                                instance_uuid: str, connector: Connector | None = None,
                                mountpoint: str | None = None) -> Attachment:
        row = await self.bs.attachments.create(ctx, volume_id, instance_uuid, None)
        if connector:
            row = await self.bs.attachments.update(ctx, row["id"], connector, mountpoint)
        return to_attachment(row)

    async def attachment_update(self, ctx: RequestContext, attachment_id: str,
                                connector: Connector,
                                mountpoint: str | None = None) -> Attachment:
        return to_attachment(await self.bs.attachments.update(ctx, attachment_id, connector,
                                                              mountpoint))

    async def attachment_complete(self, ctx: RequestContext, attachment_id: str) -> None:
        await self.bs.attachments.complete(ctx, attachment_id)

    async def attachment_delete(self, ctx: RequestContext, attachment_id: str) -> None:
        await self.bs.attachments.delete(ctx, attachment_id)

    async def create_snapshot_force(self, ctx: RequestContext, volume_id: str, name: str,
                                    description: str) -> Snapshot:
        return to_snapshot(await self.bs.snapshots.create(ctx, volume_id, name, description,
                                                          force=True))

    async def create_snapshot(self, ctx: RequestContext, volume_id: str, name: str,
                              description: str) -> Snapshot:
        return to_snapshot(await self.bs.snapshots.create(ctx, volume_id, name, description,
                                                          force=False))

    async def get_snapshot(self, ctx: RequestContext, snapshot_id: str) -> Snapshot:
        return to_snapshot(await self.bs.snapshots.get(ctx, snapshot_id))

    async def get_all_snapshots(self, ctx: RequestContext) -> list[Snapshot]:
        rows = await self.bs.snapshots.list(ctx, {}, all_tenants=False)
        return [to_snapshot(r) for r in sorted(rows, key=lambda r: r["created_at"])]

    async def delete_snapshot(self, ctx: RequestContext, snapshot_id: str) -> None:
        await self.bs.snapshots.delete(ctx, snapshot_id)

    async def update_snapshot_status(self, ctx: RequestContext, snapshot_id: str, status: str,
                                     progress: str | None = None) -> None:
        await self.bs.snapshots.update_status(ctx, snapshot_id, status, progress)


def _check(api: LocalVolumeAPI) -> VolumeAPI:
    return api  # mypy: LocalVolumeAPI satisfies the protocol
