"""Periodic tasks of a compute host.

* ``sync_power_states`` – the database follows what the hypervisor says.
* ``heal_instance_info_cache`` – one instance per run gets fresh network info.
* ``run_image_cache_manager_pass`` – the driver's unused cached images age out.
* ``check_instance_build_time`` – builds older than ``instance_build_timeout``
  end in ERROR with a fault and their claim and ports released (the sweep is
  ``stuck_builds.py``'s: the conductor runs it too, for hosts that are down).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.builds import RunningBuilds
from cirrus.compute.models import instances
from cirrus.compute.states import PowerState, TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.compute.stuck_builds import fail_stuck_builds, stuck_builds
from cirrus.context import admin_context
from cirrus.db.engine import fetch_all
from cirrus.network.api import API as NetworkAPI
from cirrus.utils import KeyedLocks
from cirrus.virt import exception as vexc
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
BUILD_UNWIND_TIMEOUT = 30.0  # a cancelled build's own clean-up, before the sweep's


@dataclass
class ComputePeriodics:
    """The periodic tasks one compute host runs, handed what they use."""

    store: InstanceStore
    locks: KeyedLocks
    builds: RunningBuilds
    driver: ComputeDriver
    network: NetworkAPI
    build_timeout: float  # instance_build_timeout (0: no sweep)
    _heal_queue: list[str] = field(default_factory=list, init=False)

    async def run_image_cache_manager_pass(self) -> None:
        """Nova's ``_run_image_cache_manager_pass``: the driver ages out the
        images none of this host's instances uses."""
        rows = await self.store.read(_host_image_refs, self.store.host)
        await self.driver.manage_image_cache(admin_context(), rows)

    async def check_instance_build_time(self) -> list[str]:
        timeout = self.build_timeout
        if timeout <= 0:
            return []
        rows = await self.store.read(stuck_builds, timeout, [self.store.host], False)
        # Let the builds unwind first: one cancelled while its ports were
        # being written rolls them back itself, and the sweep's release must
        # come after, not race it.
        await self.builds.cancel_many([r["uuid"] for r in rows], BUILD_UNWIND_TIMEOUT)
        return await fail_stuck_builds(self.store, self.network, rows, timeout, self.store.host)

    async def sync_power_states(self) -> None:
        rows = await self.store.read(_host_instances, self.store.host)
        for row in rows:
            if row["task_state"] is not None or row["uuid"] in self.builds:
                continue
            async with self.locks(row["uuid"]):
                await self._sync_instance_power_state(row)

    async def _sync_instance_power_state(self, row: Instance) -> None:
        try:
            power = (await self.driver.get_info(row)).state
        except vexc.InstanceNotFound:
            power = PowerState.NOSTATE
        values: dict[str, Any] = {}
        if int(power) != row["power_state"]:
            values["power_state"] = int(power)
        if row["vm_state"] == VmState.ACTIVE.value and power in (
                PowerState.SHUTDOWN, PowerState.CRASHED, PowerState.NOSTATE):
            LOG.warning("instance %s is %s on the hypervisor; marking it stopped",
                        row["uuid"], power.name)
            values["vm_state"] = VmState.STOPPED
        elif row["vm_state"] == VmState.STOPPED.value and power == PowerState.RUNNING:
            LOG.warning("stopped instance %s is running; powering it off", row["uuid"])
            await self.driver.power_off(row)
            values["power_state"] = int(PowerState.SHUTDOWN)
        if values:
            try:
                await self.store.save(row["uuid"], values, expected_task_state=[None])
            except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
                pass

    async def heal_instance_info_cache(self) -> None:
        if not self._heal_queue:
            self._heal_queue.extend(await self.store.read(_host_instance_uuids, self.store.host))
        while self._heal_queue:
            uuid = self._heal_queue.pop(0)
            try:
                row = await self.store.get(uuid)
            except exc.InstanceNotFound:
                continue
            await self.network.get_instance_nw_info(admin_context(), row)
            return

    async def init_instances(self) -> None:
        """At start: builds that died with the previous process go to ERROR;
        other interrupted tasks are cleared."""
        rows = await self.store.read(_host_instances, self.store.host)
        building = [r for r in rows if r["vm_state"] == VmState.BUILDING.value]
        await fail_stuck_builds(self.store, self.network, building, 0, self.store.host)
        for row in rows:
            if row["vm_state"] != VmState.BUILDING.value and row["task_state"] not in (
                    None, TaskState.DELETING.value):
                try:
                    await self.store.save(row["uuid"], {"task_state": None})
                except exc.InstanceNotFound:
                    pass


def _host_image_refs(conn: sa.Connection, host: str) -> list[dict[str, Any]]:
    """The uuid and image of each instance on ``host`` (soft-deleted ones too:
    they may be restored), all the image cache needs."""
    return fetch_all(conn, sa.select(instances.c.uuid, instances.c.image_ref).where(
        instances.c.host == host, instances.c.deleted.is_(False)))


def _host_instances(conn: sa.Connection, host: str) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(instances).where(instances.c.host == host,
                                                      instances.c.deleted.is_(False)))


def _host_instance_uuids(conn: sa.Connection, host: str) -> list[str]:
    """The uuids of the host's built instances: the heal queue needs nothing
    else, and reading whole rows of a host's thousand servers every minute held
    the GIL for tens of milliseconds — a latency spike for every API request."""
    return list(conn.execute(sa.select(instances.c.uuid).where(
        instances.c.host == host, instances.c.deleted.is_(False),
        instances.c.vm_state != VmState.BUILDING.value)).scalars())
