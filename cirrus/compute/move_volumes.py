"""The attached volumes of a server that moves to another host (Nova's
``_terminate_volume_connections``, ``_update_volume_attachments`` and
``_complete_volume_attachments`` for resize and cold migration, and the
attachment steps of ``pre_live_migration``, ``_post_live_migration`` and
``_rollback_live_migration``).

Every volume is re-exported to the host the guest runs on next: that host's
connector goes to block storage (``attachment_update``) and the connection
info it returns is what that host's driver plugs. The volume stays the
instance's throughout: a new attachment for the instance is made before the
old one is deleted (Cinder allows a second attachment to the same instance
for a move).

* Resize / cold migration: the host that lets the guest go (the source in
  ``resize_instance``, the destination in ``revert_resize``) swaps each
  attachment for a new one with no connector (the volume ``reserved``); the
  host that makes the guest (``finish_resize``, ``finish_revert_resize``)
  updates it with its connector, plugs, and completes it (``in-use``).
* Live migration: both hosts use the volume at once. The destination makes
  attachments with its connector in ``pre_live_migration`` and tells the
  source the old ones; after the move the source completes the new ones and
  deletes the old; on a rollback it deletes the new ones and puts the old
  back on the mappings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from cirrus.compute import bdms as bdm_db
from cirrus.compute import instance as inst
from cirrus.compute.bdms import Bdm
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.virt.driver import ComputeDriver
from cirrus.volume.cinder import ConnectionInfo, Connector, VolumeAPI


class OldAttachment(TypedDict):
    """A mapping's attachment before a live migration (to delete or restore)."""

    bdm_id: int
    attachment_id: str
    connection_info: ConnectionInfo | None


def _attached(bdms: list[Bdm]) -> list[Bdm]:
    return [b for b in bdms if b["destination_type"] == "volume" and b.get("attachment_id")]


@dataclass(frozen=True)
class MoveVolumes:
    """One host's part in moving a server's volumes."""

    store: InstanceStore
    driver: ComputeDriver
    volume_api: VolumeAPI

    async def _bdms(self, uuid: str) -> list[Bdm]:
        return _attached(await self.store.read(bdm_db.volume_bdms, uuid))

    def _connector(self, instance: Instance) -> Connector:
        return self.driver.get_volume_connector(instance)  # type: ignore[return-value]

    # -- resize and cold migration ----------------------------------------------------
    async def terminate_volume_connections(self, ctx: RequestContext, uuid: str) -> None:
        """This host lets the volumes go: each attachment replaced by a new,
        unexported one of the instance (the volume stays reserved to it)."""
        for bdm in await self._bdms(uuid):
            new = await self.volume_api.attachment_create(ctx, bdm["volume_id"], uuid)
            await self.store.run(bdm_db.update, bdm["id"], {"attachment_id": new["id"],
                                                           "connection_info": None})
            await self.volume_api.attachment_delete(ctx, bdm["attachment_id"])

    async def update_volume_attachments(self, ctx: RequestContext,
                                        instance: Instance) -> list[Bdm]:
        """Each volume exported to this host; the mappings, with the
        connection info this host plugs (saved on them too)."""
        bdms = await self.store.read(inst.bdms, instance["uuid"])
        if not _attached(bdms):
            return bdms
        connector = self._connector(instance)
        out = []
        for bdm in bdms:
            if _attached([bdm]):
                attachment = await self.volume_api.attachment_update(
                    ctx, bdm["attachment_id"], connector, mountpoint=bdm["device_name"])
                info = attachment["connection_info"]
                await self.store.run(bdm_db.update, bdm["id"], {"connection_info": info})
                bdm = {**bdm, "connection_info": info}
            out.append(bdm)
        return out

    async def complete_volume_attachments(self, ctx: RequestContext, bdms: list[Bdm]) -> None:
        """After the guest runs with them: each volume in use."""
        for bdm in _attached(bdms):
            await self.volume_api.attachment_complete(ctx, bdm["attachment_id"])

    # -- live migration ---------------------------------------------------------------
    async def attach_to_destination(self, ctx: RequestContext,
                                    instance: Instance) -> tuple[list[Bdm], list[OldAttachment]]:
        """On the destination before the move: a new attachment per volume,
        exported to this host and put on its mapping; the mappings and what
        they had before. A failure part-way undoes what it made."""
        uuid, old = instance["uuid"], []
        connector = self._connector(instance)
        try:
            for bdm in await self._bdms(uuid):
                new = await self.volume_api.attachment_create(
                    ctx, bdm["volume_id"], uuid, connector=connector,
                    mountpoint=bdm["device_name"])
                old.append(OldAttachment(bdm_id=bdm["id"], attachment_id=bdm["attachment_id"],
                                         connection_info=bdm.get("connection_info")))
                await self.store.run(bdm_db.update, bdm["id"], {
                    "attachment_id": new["id"], "connection_info": new["connection_info"]})
        except BaseException:
            await self.restore_attachments(ctx, uuid, old)
            raise
        return await self.store.read(inst.bdms, uuid), old

    async def switch_attachments(self, ctx: RequestContext, uuid: str,
                                 old: list[OldAttachment]) -> None:
        """After the move: the destination's attachments in use, the source's gone."""
        await self.complete_volume_attachments(ctx, await self._bdms(uuid))
        for entry in old:
            await self.volume_api.attachment_delete(ctx, entry["attachment_id"])

    async def restore_attachments(self, ctx: RequestContext, uuid: str,
                                  old: list[OldAttachment]) -> None:
        """After a failed move: the destination's attachments deleted, the
        mappings back on the source's."""
        current = {b["id"]: b for b in await self.store.read(bdm_db.volume_bdms, uuid)}
        for entry in old:
            bdm = current.get(entry["bdm_id"])
            if bdm and bdm.get("attachment_id") not in (None, entry["attachment_id"]):
                await self.volume_api.attachment_delete(ctx, bdm["attachment_id"])
            await self.store.run(bdm_db.update, entry["bdm_id"], {
                "attachment_id": entry["attachment_id"],
                "connection_info": entry["connection_info"]})

