"""Soft delete on this host (``reclaim_instance_interval`` > 0): Nova's
``soft_delete_instance`` (the guest powered off, its resources kept),
``restore_instance`` (powered on again) and the periodic
``_reclaim_queued_deletes`` that deletes for good, through
:class:`~cirrus.compute.delete.Terminate`, what stayed soft-deleted longer
than the interval."""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.delete import Terminate
from cirrus.compute.guest_state import save_guest_state
from cirrus.compute.models import instances
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext, admin_context
from cirrus.db.base import utcnow
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
SOFT_DELETE = ActionSpec("compute_soft_delete_instance", "soft_delete")
RESTORE = ActionSpec("compute_restore_instance", "restore")


@dataclass(frozen=True)
class SoftDelete:
    """soft_delete/restore of instances on one host, and their reclaim."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    terminate: Terminate
    reclaim_instance_interval: float

    async def soft_delete_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            # No driver soft-deletes: Nova's fallback, a power off without waiting.
            await self.driver.power_off(instance, timeout=0)
            await save_guest_state(self.driver, self.store, instance, VmState.SOFT_DELETED,
                                   TaskState.SOFT_DELETING)
        await self.runner.run(ctx, uuid, SOFT_DELETE, body)

    async def restore_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            network_info = await self.network.get_instance_nw_info(ctx, instance)
            block_device_info = dict(await self.store.block_device_info(uuid))
            await self.driver.power_on(ctx, instance, network_info, block_device_info)
            await save_guest_state(self.driver, self.store, instance, VmState.ACTIVE,
                                   TaskState.RESTORING, deleted_at=None)
        await self.runner.run(ctx, uuid, RESTORE, body)

    async def reclaim_queued_deletes(self) -> list[str]:
        """Delete what was soft-deleted on this host longer than the interval
        ago; the uuids reclaimed. Nothing when soft delete is off."""
        interval = self.reclaim_instance_interval
        if interval <= 0:
            return []
        cutoff = utcnow() - dt.timedelta(seconds=interval)
        reclaimed = []
        for uuid in await self.store.read(_queued_deletes, self.store.host, cutoff):
            if not await self._claimed(uuid):
                continue  # restored (or deleted) meanwhile
            LOG.info("reclaiming soft-deleted instance %s", uuid)
            await self.terminate(admin_context(), uuid)
            reclaimed.append(uuid)
        return reclaimed

    async def _claimed(self, uuid: str) -> bool:
        """Whether the reclaim got ``uuid`` (DELETING) before a restore did."""
        try:
            await self.store.save(uuid, {"task_state": TaskState.DELETING},
                                  expected_task_state=None,
                                  expected_vm_state=VmState.SOFT_DELETED)
        except (exc.UnexpectedTaskStateError, exc.InstanceNotFound):
            return False
        return True


def _queued_deletes(conn: sa.Connection, host: str, cutoff: dt.datetime) -> list[str]:
    """Instances of ``host`` soft-deleted (and idle) since before ``cutoff``."""
    i = instances
    return list(conn.execute(sa.select(i.c.uuid).where(
        i.c.host == host, i.c.deleted.is_(False), i.c.vm_state == VmState.SOFT_DELETED.value,
        i.c.task_state.is_(None), i.c.deleted_at < cutoff)).scalars())
