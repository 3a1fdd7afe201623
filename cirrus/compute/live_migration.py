"""Live migration on the hosts (Nova's ``live_migration`` on the source, which
calls the destination's ``pre_live_migration``, runs the driver's migration,
then casts ``post_live_migration_at_destination``; on failure or abort
``_rollback_live_migration``).

The claims were moved when the scheduler chose the destination; the
destination releases the migration's (the source's) once the guest runs
there, a rollback gives it back to the instance.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus import claims
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute import migrations as mig
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.migrations import Migration, Status
from cirrus.compute.move_volumes import MoveVolumes, OldAttachment
from cirrus.compute.resize import failing_migration
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import TaskState
from cirrus.compute.store import Instance, InstanceStore, block_device_info
from cirrus.context import RequestContext
from cirrus.network.api import API as NetworkAPI
from cirrus.virt import exception as vexc
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
LIVE = ActionSpec("compute_live_migration", "live_migration")
# The source's attachments, as pre_live_migration returns them beside the
# driver's migrate data (Nova's ``migrate_data.old_vol_attachment_ids``).
OLD_ATTACHMENTS = "old_vol_attachments"
POST_DEST = ActionSpec("compute_post_live_migration_at_destination", "live_migration.post.dest")


class LiveMigrationCancelled(Exception):
    """The migration was aborted before the driver started it."""


@dataclass(frozen=True)
class LiveMigrations:
    """The live-migration steps one host runs, as source or destination."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    compute: ComputeAPI
    volumes: MoveVolumes

    # -- source ------------------------------------------------------------------------
    async def live_migration(self, ctx: RequestContext, uuid: str, migration_uuid: str,
                             block_migration: bool | None) -> None:
        """Move the running guest to the migration's destination."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            dest = migration["dest_compute"]
            assert dest is not None
            try:
                await self._migrate(ctx, instance, migration, dest, bool(block_migration))
            except (LiveMigrationCancelled, vexc.LiveMigrationAborted):
                await self._rollback(ctx, instance, migration, dest, Status.CANCELLED)
            except BaseException:
                await self._rollback(ctx, instance, migration, dest, Status.ERROR)
                raise
        await self.runner.run(ctx, uuid, LIVE, failing_migration(self.store, migration_uuid,
                                                                 body))

    async def _migrate(self, ctx: RequestContext, instance: Instance, migration: Migration,
                       dest: str, block_migration: bool) -> None:
        uuid, migration_uuid = instance["uuid"], migration["uuid"]
        await self._status(migration_uuid, Status.PREPARING, Status.QUEUED)
        migrate_data = await self.compute.pre_live_migration(
            ctx, dest, instance_uuid=uuid, migration_uuid=migration_uuid,
            block_migration=block_migration)
        old: list[OldAttachment] = migrate_data.pop(OLD_ATTACHMENTS, [])
        try:
            await self._status(migration_uuid, Status.RUNNING, Status.PREPARING)
            power_state = int((await self.driver.get_info(instance)).state)
            await self.driver.live_migration(ctx, instance, dest, block_migration, migrate_data)
        except BaseException:
            await self.volumes.restore_attachments(ctx, uuid, old)
            raise
        # The guest runs on the destination now: the instance is its, and so
        # are the volumes' attachments.
        await self.store.run(_moved, uuid, migration_uuid, dest, migration["dest_node"])
        await self.volumes.switch_attachments(ctx, uuid, old)
        await self.compute.post_live_migration_at_destination(
            ctx, dest, instance_uuid=uuid, migration_uuid=migration_uuid,
            power_state=power_state)

    async def _status(self, migration_uuid: str, status: Status, expected: Status) -> None:
        """The next status; cancelled if an abort came first."""
        try:
            await self.store.run(mig.save, migration_uuid, {"status": status}, (expected,))
        except mig.MigrationStatusChanged as error:
            raise LiveMigrationCancelled() from error

    async def _rollback(self, ctx: RequestContext, instance: Instance, migration: Migration,
                        dest: str, status: Status) -> None:
        """The guest stays here: the destination cleaned, the claims back."""
        try:
            await self.compute.rollback_live_migration_at_destination(
                ctx, dest, instance_uuid=instance["uuid"])
        except Exception:  # noqa: BLE001 - the destination's leftovers do not keep the guest
            LOG.exception("rollback of %s on %s failed", instance["uuid"], dest)
        await self.store.run(_rolled_back, instance["uuid"], migration["uuid"], status)

    async def live_migration_abort(self, ctx: RequestContext, uuid: str,
                                   migration_uuid: str) -> None:
        """Stop the migration: before the driver starts, by its status; while
        it runs, through the driver. Not under the instance's lock (the
        migration holds it)."""
        try:
            await self.store.run(mig.save, migration_uuid, {"status": Status.CANCELLED},
                                 (Status.QUEUED, Status.PREPARING))
            return
        except mig.MigrationStatusChanged:
            pass
        instance = await self.store.get(uuid)
        await self.driver.live_migration_abort(instance)

    async def live_migration_force_complete(self, ctx: RequestContext, uuid: str) -> None:
        """Make the running migration converge (the driver pauses the guest)."""
        await self.driver.live_migration_force_complete(await self.store.get(uuid))

    # -- destination -------------------------------------------------------------------
    async def pre_live_migration(self, ctx: RequestContext, uuid: str, migration_uuid: str,
                                 block_migration: bool | None) -> dict[str, Any]:
        """Ready this host for the incoming guest; what the source's driver needs."""
        instance = await self.store.get(uuid)
        network_info = await self.store.cached_network_info(uuid)
        event_id = await self.store.event_start(ctx, uuid, "compute_pre_live_migration")
        try:
            bdms, old = await self.volumes.attach_to_destination(ctx, instance)
            try:
                data = await self.driver.pre_live_migration(ctx, instance, network_info,
                                                            bool(block_migration),
                                                            block_device_info(bdms))
            except BaseException:
                await self.volumes.restore_attachments(ctx, uuid, old)
                raise
        except Exception as error:
            await self.store.run(_close_event, event_id, error)
            raise
        await self.store.run(_close_event, event_id, None)
        return {**data, OLD_ATTACHMENTS: old}

    async def post_live_migration_at_destination(self, ctx: RequestContext, uuid: str,
                                                 migration_uuid: str, power_state: int) -> None:
        """The guest is this host's: ports bound here, the move complete."""
        async def body(instance: Instance) -> None:
            network_info = await self.network.migrate_instance_finish(ctx, instance,
                                                                      self.store.host)
            await self.driver.post_live_migration_at_destination(
                ctx, instance, network_info, power_state,
                await self.store.block_device_info(uuid))
            info = await self.driver.get_info(instance)
            await self.store.run(_completed, uuid, migration_uuid, int(info.state))
        await self.runner.run(ctx, uuid, POST_DEST, body)

    async def rollback_live_migration_at_destination(self, ctx: RequestContext,
                                                     uuid: str) -> None:
        instance = await self.store.get(uuid)
        await self.driver.rollback_live_migration_at_destination(
            ctx, instance, await self.store.cached_network_info(uuid))


def _moved(conn: sa.Connection, uuid: str, migration_uuid: str, host: str,
           node: str | None) -> None:
    inst.save(conn, uuid, {"host": host, "node": node}, expected_task_state=TaskState.MIGRATING)
    mig.save(conn, migration_uuid, {"status": Status.POST_MIGRATING})


def _completed(conn: sa.Connection, uuid: str, migration_uuid: str, power_state: int) -> None:
    inst.save(conn, uuid, {"power_state": power_state, "task_state": None},
              expected_task_state=TaskState.MIGRATING)
    mig.save(conn, migration_uuid, {"status": Status.COMPLETED})
    claims.release(conn, migration_uuid)


def _rolled_back(conn: sa.Connection, uuid: str, migration_uuid: str, status: Status) -> None:
    claims.release(conn, uuid)
    claims.move(conn, migration_uuid, uuid)
    mig.save(conn, migration_uuid, {"status": status})
    inst.save(conn, uuid, {"task_state": None}, expected_task_state=TaskState.MIGRATING)


def _close_event(conn: sa.Connection, event_id: int | None, error: BaseException | None) -> None:
    instance_actions.event_finish(conn, event_id, exc=error)
