"""Attaching and detaching a volume of an instance on this host (Nova's
``ComputeManager.attach_volume`` / ``detach_volume``, ``os-volume_attachments``).

The API reserved the volume (``attachment_create``) and wrote the mapping;
here the volume is exported to this host (``attachment_update`` with its
connector), plugged into the guest and marked in use. A failure anywhere
rolls back: the guest as before, the attachment deleted (the volume
``available`` again) and the mapping removed; the fault names the cause.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from cirrus.compute import bdms as bdm_db
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.bdms import Bdm
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.virt.driver import ComputeDriver
from cirrus.volume.cinder import ConnectionInfo, Connector, VolumeAPI

LOG = logging.getLogger(__name__)
ATTACH = ActionSpec("compute_attach_volume", "volume_attach")
DETACH = ActionSpec("compute_detach_volume", "volume_detach")
SWAP = ActionSpec("compute_swap_volume", "volume_swap")


@dataclass(frozen=True)
class VolumeAttachments:
    """``attach_volume`` / ``detach_volume`` of one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    volume_api: VolumeAPI

    async def attach_volume(self, ctx: RequestContext, uuid: str, volume_id: str) -> None:
        """Plug the volume the API reserved for the instance."""
        async def body(instance: Instance) -> None:
            bdm = await self.store.read(bdm_db.by_volume, uuid, volume_id)
            try:
                await self._attach(ctx, instance, bdm)
            except BaseException:
                await self._roll_back(ctx, bdm)
                raise
        await self.runner.run(ctx, uuid, ATTACH, body)

    async def _attach(self, ctx: RequestContext, instance: Instance, bdm: Bdm) -> None:
        connector: Connector = self.driver.get_volume_connector(instance)  # type: ignore
        attachment = await self.volume_api.attachment_update(
            ctx, bdm["attachment_id"], connector, mountpoint=bdm["device_name"])
        info = attachment["connection_info"]
        assert info is not None, "attachment_update returns the connection info"
        await self.driver.attach_volume(ctx, info, instance, bdm["device_name"],
                                        disk_bus=bdm.get("disk_bus"),
                                        device_type=bdm.get("device_type"))
        try:
            await self.store.run(bdm_db.update, bdm["id"], {"connection_info": info})
            await self.volume_api.attachment_complete(ctx, bdm["attachment_id"])
        except BaseException:
            with contextlib.suppress(Exception):
                await self.driver.detach_volume(ctx, info, instance, bdm["device_name"])
            raise

    async def _roll_back(self, ctx: RequestContext, bdm: Bdm) -> None:
        """The volume released and the mapping gone (Nova's attach rollback)."""
        try:
            await self.volume_api.attachment_delete(ctx, bdm["attachment_id"])
        except Exception:  # noqa: BLE001 - logged; the mapping goes regardless
            LOG.exception("could not release volume %s after a failed attach",
                          bdm["volume_id"])
        await self.store.run(bdm_db.destroy, bdm["id"])

    async def detach_volume(self, ctx: RequestContext, uuid: str, volume_id: str) -> None:
        """Unplug the volume, then release it; on a driver failure it stays
        attached (in use) and the fault says why."""
        async def body(instance: Instance) -> None:
            bdm = await self.store.read(bdm_db.by_volume, uuid, volume_id)
            info: ConnectionInfo = bdm.get("connection_info") or \
                {"driver_volume_type": "", "data": {}}
            await self.driver.detach_volume(ctx, info, instance, bdm["device_name"])
            if bdm.get("attachment_id"):
                await self.volume_api.attachment_delete(ctx, bdm["attachment_id"])
            await self.store.run(bdm_db.destroy, bdm["id"])
        await self.runner.run(ctx, uuid, DETACH, body)

    async def swap_volume(self, ctx: RequestContext, uuid: str, old_volume_id: str,
                          new_volume_id: str, new_attachment_id: str) -> None:
        """Move the guest's disk from the old volume to the new one (the API
        reserved it): exported here, swapped by the driver (data copied), in
        use; the old one released and the mapping naming the new one. On a
        failure the new one is released and the guest keeps the old."""
        async def body(instance: Instance) -> None:
            bdm = await self.store.read(bdm_db.by_volume, uuid, old_volume_id)
            try:
                info = await self._swap(ctx, instance, bdm, new_attachment_id)
            except BaseException:
                with contextlib.suppress(Exception):
                    await self.volume_api.attachment_delete(ctx, new_attachment_id)
                raise
            await self.store.run(bdm_db.update, bdm["id"], {
                "volume_id": new_volume_id, "attachment_id": new_attachment_id,
                "connection_info": info})
            if bdm.get("attachment_id"):
                await self.volume_api.attachment_delete(ctx, bdm["attachment_id"])
        await self.runner.run(ctx, uuid, SWAP, body)

    async def _swap(self, ctx: RequestContext, instance: Instance, bdm: Bdm,
                    new_attachment_id: str) -> ConnectionInfo:
        connector: Connector = self.driver.get_volume_connector(instance)  # type: ignore
        attachment = await self.volume_api.attachment_update(
            ctx, new_attachment_id, connector, mountpoint=bdm["device_name"])
        info = attachment["connection_info"]
        assert info is not None, "attachment_update returns the connection info"
        await self.driver.swap_volume(ctx, bdm.get("connection_info") or {}, info, instance,
                                      bdm["device_name"])
        await self.volume_api.attachment_complete(ctx, new_attachment_id)
        return info
