"""Deleting an instance on its host: destroy, deallocate, release, mark deleted."""
from __future__ import annotations

import logging
from dataclasses import dataclass

import sqlalchemy as sa

from cirrus import claims
from cirrus.compute import bdms as bdm_db
from cirrus.compute import instance as inst
from cirrus.compute import exception as exc
from cirrus.compute.boot_volumes import BootVolumes
from cirrus.compute.builds import RunningBuilds
from cirrus.compute.events import InstanceEvents
from cirrus.compute.queries import cached_network_info
from cirrus.compute.store import Instance, InstanceStore, finish_action
from cirrus.context import RequestContext
from cirrus.network.api import API as NetworkAPI
from cirrus.network.model import VIF
from cirrus.notifications import Notifier
from cirrus.utils import KeyedLocks
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
EVENT = "compute_terminate_instance"
BUILD_CANCEL_TIMEOUT = 30.0  # a cancelled build's own clean-up, before the delete's


@dataclass(frozen=True)
class Terminate:
    """``terminate_instance`` of one host, handed what it uses."""

    store: InstanceStore
    locks: KeyedLocks
    driver: ComputeDriver
    network: NetworkAPI
    builds: RunningBuilds
    events: InstanceEvents
    notifier: Notifier
    volumes: BootVolumes  # detached, and deleted with delete_on_termination

    async def __call__(self, ctx: RequestContext, uuid: str) -> None:
        """Delete ``uuid``; a build still running for it is cancelled first."""
        await self.builds.cancel(uuid, BUILD_CANCEL_TIMEOUT)
        async with self.locks(uuid):
            try:
                found = await self.store.read(_to_delete, uuid)
            except exc.InstanceNotFound:
                return
            event_id = await self.store.event_start(ctx, uuid, EVENT)
            self.notifier.info(ctx, "compute.instance.delete.start", {"instance_id": uuid})
            try:
                await self._shutdown_instance(ctx, found)
            except Exception as error:  # noqa: BLE001 - recorded as the fault
                LOG.exception("failed to delete %s", uuid)
                await self.store.run(_record_failure, ctx, uuid, error, self.store.host, event_id)
                return
            await self.store.run(_complete_deletion, ctx, uuid, event_id)
            self.events.clear(uuid)
            self.notifier.info(ctx, "compute.instance.delete.end", {"instance_id": uuid})

    async def _shutdown_instance(self, ctx: RequestContext, found: ToDelete) -> None:
        instance = found.instance
        await self.driver.destroy(ctx, instance, found.network_info, None)
        await self.network.deallocate_for_instance(
            ctx, instance, requested_networks=instance.get("requested_networks"))
        await self.volumes.cleanup_volumes(ctx, instance["uuid"], found.volume_bdms)


@dataclass(frozen=True)
class ToDelete:
    """What a delete reads first, in one read (as Nova's ``terminate_instance``
    reads the mappings before ``_shutdown_instance``): the live instance, its
    network info cache and its volume mappings."""

    instance: Instance
    network_info: list[VIF]
    volume_bdms: list[bdm_db.Bdm]


def _to_delete(conn: sa.Connection, uuid: str) -> ToDelete:
    return ToDelete(inst.get(conn, uuid), cached_network_info(conn, uuid),
                    bdm_db.volume_bdms(conn, uuid))


def _complete_deletion(conn: sa.Connection, ctx: RequestContext, uuid: str,
                       event_id: int | None) -> None:
    """The host's resources given back (as Nova's ``_complete_deletion`` updates the
    resource tracker) and the instance deleted, in one transaction: no moment
    where one is done and the other not. The release last: it locks the
    host's usage row, which every claim and release on the host waits for,
    until COMMIT."""
    inst.leave_groups(conn, uuid)
    inst.soft_delete(conn, uuid)
    finish_action(conn, ctx, uuid, event_id)
    claims.release(conn, uuid)


def _record_failure(conn: sa.Connection, ctx: RequestContext, uuid: str, error: Exception,
                    host: str, event_id: int | None) -> None:
    inst.set_error(conn, uuid, error, host)
    finish_action(conn, ctx, uuid, event_id, error)
