"""Resize and cold migration on the hosts (Nova's ``prep_resize`` →
``resize_instance`` → ``finish_resize``, then ``confirm_resize`` or
``revert_resize`` → ``finish_revert_resize``), and the auto-confirm.

The claims were moved when the scheduler chose the destination: the source
claim is the migration's, the destination's the instance's. A confirm
releases the migration's; a revert releases the instance's on the destination
and gives the migration's back to the instance, in one transaction.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus import claims
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute import migrations as mig
from cirrus.compute.action import ActionRunner, ActionSpec, Body
from cirrus.compute.migrations import Migration, Status
from cirrus.compute.move_volumes import MoveVolumes
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import PowerState, TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore, block_device_info
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

# Nova leaves an instance whose resize failed half-way in ERROR.
PREP = ActionSpec("compute_prep_resize", "resize_prep", error_vm_state=VmState.ERROR)
RESIZE = ActionSpec("compute_resize_instance", "resize", error_vm_state=VmState.ERROR)
FINISH = ActionSpec("compute_finish_resize", "finish_resize", error_vm_state=VmState.ERROR)
CONFIRM = ActionSpec("compute_confirm_resize", "resize.confirm", error_vm_state=VmState.ERROR)
REVERT = ActionSpec("compute_revert_resize", "resize.revert", error_vm_state=VmState.ERROR)
FINISH_REVERT = ActionSpec("compute_finish_revert_resize", "resize.revert",
                           error_vm_state=VmState.ERROR)
OLD_VM_STATE = "old_vm_state"  # system_metadata key, as Nova's


def flavor_values(flavor: dict[str, Any]) -> dict[str, Any]:
    """The instance columns a flavor sets."""
    return {"flavor": flavor, "vcpus": flavor["vcpus"], "memory_mb": flavor["memory_mb"],
            "root_gb": flavor["root_gb"], "ephemeral_gb": flavor.get("ephemeral_gb") or 0}


def failing_migration(store: InstanceStore, migration_uuid: str, body: Body,
                      status: Status = Status.ERROR) -> Body:
    """``body``, with the migration set to ``status`` if it fails."""
    async def run(instance: Instance) -> None:
        try:
            await body(instance)
        except BaseException:
            await store.run(mig.save, migration_uuid, {"status": status})
            raise
    return run


@dataclass(frozen=True)
class ResizeActions:
    """The resize and cold-migration steps one host runs."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    compute: ComputeAPI  # to cast the next step to the other host
    volumes: MoveVolumes  # the attached volumes, re-exported to the guest's next host

    async def _run(self, ctx: RequestContext, uuid: str, migration_uuid: str,
                   spec: ActionSpec, body: Body) -> None:
        await self.runner.run(ctx, uuid, spec, failing_migration(self.store, migration_uuid,
                                                                 body))

    # -- destination: prep_resize ------------------------------------------------------
    async def prep_resize(self, ctx: RequestContext, uuid: str, migration_uuid: str) -> None:
        """The destination accepts the move (its claim is made) and asks the
        source to send the guest."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            sysmeta = {**(instance["system_metadata"] or {}), OLD_VM_STATE: instance["vm_state"]}
            await self.store.save(uuid, {"system_metadata": sysmeta},
                                  expected_task_state=TaskState.RESIZE_PREP)
            assert migration["source_compute"] is not None
            await self.compute.resize_instance(ctx, migration["source_compute"],
                                               instance_uuid=uuid, migration_uuid=migration_uuid)
        await self._run(ctx, uuid, migration_uuid, PREP, body)

    # -- source: resize_instance ---------------------------------------------------------
    async def resize_instance(self, ctx: RequestContext, uuid: str, migration_uuid: str) -> None:
        """Power off, send the disks; the instance now belongs to the destination."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            await self.store.run(_step, uuid, migration_uuid, {},
                                 TaskState.RESIZE_PREP, TaskState.RESIZE_MIGRATING,
                                 Status.MIGRATING)
            network_info = await self.network.get_instance_nw_info(ctx, instance)
            await self.driver.migrate_disk_and_power_off(
                ctx, instance, migration["dest_host"] or "", network_info)
            await self.volumes.terminate_volume_connections(ctx, uuid)
            await self.store.run(_step, uuid, migration_uuid,
                                 {"host": migration["dest_compute"],
                                  "node": migration["dest_node"],
                                  "power_state": int(PowerState.SHUTDOWN)},
                                 TaskState.RESIZE_MIGRATING, TaskState.RESIZE_MIGRATED,
                                 Status.POST_MIGRATING)
            assert migration["dest_compute"] is not None
            await self.compute.finish_resize(ctx, migration["dest_compute"], instance_uuid=uuid,
                                             migration_uuid=migration_uuid)
        await self._run(ctx, uuid, migration_uuid, RESIZE, body)

    # -- destination: finish_resize ------------------------------------------------------
    async def finish_resize(self, ctx: RequestContext, uuid: str, migration_uuid: str) -> None:
        """The guest made here with the new flavor; VERIFY_RESIZE."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            new_flavor = migration["new_flavor"] or instance["flavor"]
            await self.store.save(uuid, {**flavor_values(new_flavor),
                                         "task_state": TaskState.RESIZE_FINISH},
                                  expected_task_state=TaskState.RESIZE_MIGRATED)
            instance = await self.store.get(uuid)
            network_info = await self.network.migrate_instance_finish(ctx, instance,
                                                                      self.store.host)
            power_on = _old_vm_state(instance) != VmState.STOPPED.value
            bdms = await self.volumes.update_volume_attachments(ctx, instance)
            await self.driver.finish_migration(ctx, instance, {"source":
                                                               migration["source_compute"]},
                                               network_info, power_on, block_device_info(bdms))
            await self.volumes.complete_volume_attachments(ctx, bdms)
            info = await self.driver.get_info(instance)
            await self.store.run(_step, uuid, migration_uuid,
                                 {"vm_state": VmState.RESIZED, "power_state": int(info.state)},
                                 TaskState.RESIZE_FINISH, None, Status.FINISHED)
        await self._run(ctx, uuid, migration_uuid, FINISH, body)

    # -- source: confirm_resize ----------------------------------------------------------
    async def confirm_resize(self, ctx: RequestContext, uuid: str, migration_uuid: str) -> None:
        """What the source kept for a revert goes, and so does its claim."""
        async def body(instance: Instance) -> None:
            network_info = await self.store.cached_network_info(uuid)
            await self.driver.confirm_migration(ctx, instance, network_info)
            vm_state = VmState.STOPPED if instance["power_state"] == PowerState.SHUTDOWN \
                else VmState.ACTIVE
            await self.store.run(_confirmed, uuid, migration_uuid, vm_state)
        await self._run(ctx, uuid, migration_uuid, CONFIRM, body)

    async def cleanup_resize(self, ctx: RequestContext, uuid: str) -> None:
        """What the source kept for a revert goes (the server is being deleted;
        its resize was confirmed by the API). Not an action of its own."""
        instance = await self.store.get(uuid, read_deleted=True)
        await self.driver.confirm_migration(ctx, instance, [])

    async def confirm_resizes(self, ctx: RequestContext, window: float) -> list[str]:
        """Confirm the resizes that waited longer than ``window`` seconds for
        one (Nova's ``_poll_unconfirmed_resizes``, run by the destination)."""
        before = utcnow() - dt.timedelta(seconds=window)
        confirmed = []
        for migration in await self.store.read(mig.finished_before, self.store.host, before):
            uuid = migration["instance_uuid"]
            try:
                await self.store.run(_begin_auto_confirm, ctx, uuid, migration)
            except Exception:  # noqa: BLE001 - reverted, deleted or confirmed meanwhile
                continue
            assert migration["source_compute"] is not None
            await self.compute.confirm_resize(ctx, migration["source_compute"],
                                              instance_uuid=uuid,
                                              migration_uuid=migration["uuid"])
            confirmed.append(uuid)
        return confirmed

    # -- destination: revert_resize, then source: finish_revert_resize ------------------
    async def revert_resize(self, ctx: RequestContext, uuid: str, migration_uuid: str) -> None:
        """The guest made here goes; the claims go back as they were."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            network_info = await self.store.cached_network_info(uuid)
            await self.driver.destroy(ctx, instance, network_info, destroy_disks=True)
            await self.volumes.terminate_volume_connections(ctx, uuid)
            await self.store.run(_claims_back, uuid, migration_uuid)
            assert migration["source_compute"] is not None
            await self.compute.finish_revert_resize(ctx, migration["source_compute"],
                                                    instance_uuid=uuid,
                                                    migration_uuid=migration_uuid)
        await self._run(ctx, uuid, migration_uuid, REVERT, body)

    async def finish_revert_resize(self, ctx: RequestContext, uuid: str,
                                   migration_uuid: str) -> None:
        """The kept guest back, with its old flavor, as it was before."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            old = migration["old_flavor"] or instance["flavor"]
            await self.store.save(uuid, {**flavor_values(old), "host": self.store.host,
                                         "node": migration["source_node"]},
                                  expected_task_state=TaskState.RESIZE_REVERTING)
            instance = await self.store.get(uuid)
            network_info = await self.network.migrate_instance_finish(ctx, instance,
                                                                      self.store.host)
            stopped = _old_vm_state(instance) == VmState.STOPPED.value
            bdms = await self.volumes.update_volume_attachments(ctx, instance)
            await self.driver.finish_revert_migration(ctx, instance, network_info, not stopped,
                                                      block_device_info(bdms))
            await self.volumes.complete_volume_attachments(ctx, bdms)
            info = await self.driver.get_info(instance)
            await self.store.run(_step, uuid, migration_uuid,
                                 {"vm_state": VmState.STOPPED if stopped else VmState.ACTIVE,
                                  "power_state": int(info.state)},
                                 TaskState.RESIZE_REVERTING, None, Status.REVERTED)
        await self._run(ctx, uuid, migration_uuid, FINISH_REVERT, body)


def _old_vm_state(instance: Instance) -> str:
    return str((instance["system_metadata"] or {}).get(OLD_VM_STATE, VmState.ACTIVE.value))


def _step(conn: sa.Connection, uuid: str, migration_uuid: str, values: dict[str, Any],
          expected: TaskState, task_state: TaskState | None, status: Status) -> None:
    """The instance's next task state (and ``values``) and the migration's
    status, together."""
    inst.save(conn, uuid, {**values, "task_state": task_state}, expected_task_state=expected)
    mig.save(conn, migration_uuid, {"status": status})


def _confirmed(conn: sa.Connection, uuid: str, migration_uuid: str, vm_state: VmState) -> None:
    inst.save(conn, uuid, {"vm_state": vm_state, "task_state": None},
              expected_vm_state=VmState.RESIZED, expected_task_state=None)
    mig.save(conn, migration_uuid, {"status": Status.CONFIRMED},
             expected=(Status.CONFIRMING,))
    claims.release(conn, migration_uuid)


def _claims_back(conn: sa.Connection, uuid: str, migration_uuid: str) -> None:
    claims.release(conn, uuid)
    claims.move(conn, migration_uuid, uuid)


def _begin_auto_confirm(conn: sa.Connection, ctx: RequestContext, uuid: str,
                        migration: Migration) -> None:
    """As the API's confirm: the migration confirming, the action recorded."""
    inst.save(conn, uuid, {}, expected_vm_state=VmState.RESIZED, expected_task_state=None)
    mig.save(conn, migration["uuid"], {"status": Status.CONFIRMING}, expected=(Status.FINISHED,))
    instance_actions.action_start(conn, ctx, uuid, "confirmResize")
