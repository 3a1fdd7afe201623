"""The host's side of assisted volume snapshots (Nova's compute manager
``volume_snapshot_create`` / ``volume_snapshot_delete``): the driver changes
the attached volume's file chain, and block storage hears how it went
through ``os-update_snapshot_status`` — ``creating`` at 90 % when the
overlay is in place, ``deleting`` at 90 % when the merge is done, ``error``
or ``error_deleting`` when the driver failed. No instance action and no task
state: the API checked the server was idle, and the snapshot is block
storage's record, not the server's."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cirrus.compute import instance as inst
from cirrus.compute.store import InstanceStore
from cirrus.context import RequestContext
from cirrus.exception import CirrusException
from cirrus.virt.driver import ComputeDriver
from cirrus.volume.cinder import VolumeAPI

LOG = logging.getLogger(__name__)


@dataclass
class AssistedSnapshots:
    store: InstanceStore
    driver: ComputeDriver
    volume_api: VolumeAPI

    async def volume_snapshot_create(self, ctx: RequestContext, uuid: str, volume_id: str,
                                     create_info: dict[str, Any]) -> None:
        instance = await self.store.read(inst.get, uuid)
        snapshot_id = str(create_info.get("snapshot_id") or "")
        try:
            await self.driver.volume_snapshot_create(ctx, instance, volume_id, create_info)
        except CirrusException as error:
            LOG.warning("assisted snapshot %s of volume %s on %s failed: %s", snapshot_id,
                        volume_id, uuid, error.format_message())
            await self._report(ctx, snapshot_id, "error")
            return
        await self._report(ctx, snapshot_id, "creating", "90%")

    async def volume_snapshot_delete(self, ctx: RequestContext, uuid: str, volume_id: str,
                                     snapshot_id: str, delete_info: dict[str, Any]) -> None:
        instance = await self.store.read(inst.get, uuid)
        try:
            await self.driver.volume_snapshot_delete(ctx, instance, volume_id, snapshot_id,
                                                     delete_info)
        except CirrusException as error:
            LOG.warning("merging assisted snapshot %s of volume %s on %s failed: %s",
                        snapshot_id, volume_id, uuid, error.format_message())
            await self._report(ctx, snapshot_id, "error_deleting")
            return
        await self._report(ctx, snapshot_id, "deleting", "90%")

    async def _report(self, ctx: RequestContext, snapshot_id: str, status: str,
                      progress: str | None = None) -> None:
        """Tell block storage; a snapshot it does not know (or refuses the
        status of) is logged: the host's work is done either way."""
        try:
            await self.volume_api.update_snapshot_status(ctx, snapshot_id, status, progress)
        except CirrusException as error:
            LOG.warning("snapshot %s: block storage refused status %s: %s", snapshot_id,
                        status, error.format_message())
