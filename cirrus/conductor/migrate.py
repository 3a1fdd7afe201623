"""The conductor's moves (Nova's ``conductor/tasks/migrate.py``,
``live_migrate.py`` and the evacuate branch of ``rebuild_instance``): ask the
scheduler for a destination — which moves the claims in the same transaction
(cirrus/scheduler/moves.py) — record it on the migration and cast to the host
that acts first.

No destination: the instance keeps its host and vm_state (an evacuation's
goes to ERROR, as in Nova: its host is down), its task state is cleared, a
fault and an error event say why, and the migration is ``error``.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute import migrations as mig
from cirrus.compute.migrations import Migration, MigrationType, Status
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import VmState
from cirrus.compute.server_groups import GroupRef, group_of_instance
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.rpc import ConnectionLost
from cirrus.scheduler.rpcapi import SchedulerAPI
from cirrus.scheduler.selection import Destination

LOG = logging.getLogger(__name__)
EVENTS = {True: "conductor_live_migrate_instance", False: "conductor_migrate_server"}
EVACUATE_EVENT = "conductor_rebuild_server"
# Where each kind of move stands once its destination is chosen.
SCHEDULED = {MigrationType.RESIZE: Status.PRE_MIGRATING,
             MigrationType.MIGRATION: Status.PRE_MIGRATING,
             MigrationType.LIVE_MIGRATION: Status.QUEUED,
             MigrationType.EVACUATION: Status.PRE_MIGRATING}


@dataclass(frozen=True)
class MoveTarget:
    """Where a move may go."""

    host: str | None = None  # named by the caller
    force: bool = False  # the named host, without the scheduler's filters
    same_host: bool = False  # the source host is a candidate (a resize, if allowed)


def request_spec(instance: dict[str, Any], migration: Migration, target: MoveTarget,
                 group: GroupRef | None = None) -> dict[str, Any]:
    """The scheduler's request for moving ``instance`` (its new flavor, its
    zone, its server group — whose policy the filters apply to the
    destination as at boot, Nova's ``setup_instance_group`` — the source
    excluded unless allowed, the claim to move)."""
    flavor = migration["new_flavor"] or instance["flavor"]
    source = [[instance["host"], instance["node"]]]
    named = target.host
    return {
        "instance_uuids": [instance["uuid"]], "num_instances": 1,
        "flavor": {k: flavor.get(k, 0) for k in ("vcpus", "memory_mb", "root_gb",
                                                 "ephemeral_gb", "swap")},
        "image": {"id": instance["image_ref"], "properties": {}},
        "project_id": instance["project_id"], "user_id": instance["user_id"],
        "availability_zone": instance["availability_zone"],
        "force_hosts": [named] if named and target.force else [],
        "force_nodes": [],
        "requested_destination": {"host": named, "node": None}
        if named and not target.force else None,
        "scheduler_hints": {}, "instance_group": group,
        "retry": {"num_attempts": 1, "hosts": [] if target.same_host else source},
        "move": {"migration_uuid": migration["uuid"],
                 "release_source": migration["migration_type"]
                 == MigrationType.EVACUATION.value},
    }


@dataclass(frozen=True)
class Moving:
    """What a move is scheduled from: the instance, its migration, its group."""

    instance: dict[str, Any]
    migration: Migration
    group: GroupRef | None


@dataclass(frozen=True)
class MoveTasks:
    """Scheduling of moves; the hosts do the rest."""

    db: Database
    scheduler: SchedulerAPI
    compute: ComputeAPI
    host: str  # this conductor's, on its events
    allow_resize_to_same_host: bool

    async def migrate_server(self, ctx: RequestContext, instance_uuid: str,
                             migration_uuid: str, live: bool, host: str | None, force: bool,
                             block_migration: bool | None) -> None:
        """A resize or cold migration (to the destination's prep_resize) or a
        live migration (to the source's live_migration)."""
        found = await self._load(instance_uuid, migration_uuid)
        if found is None:
            return
        same = found.migration["migration_type"] == MigrationType.RESIZE.value \
            and self.allow_resize_to_same_host
        dest = await self._schedule(ctx, found, MoveTarget(host, force, same), EVENTS[live])
        if dest is None:
            return
        if live:
            await self.compute.live_migration(ctx, found.instance["host"],
                                              instance_uuid=instance_uuid,
                                              migration_uuid=migration_uuid,
                                              block_migration=block_migration)
        else:
            await self.compute.prep_resize(ctx, dest["host"], instance_uuid=instance_uuid,
                                           migration_uuid=migration_uuid)

    async def evacuate_instance(self, ctx: RequestContext, instance_uuid: str,
                                migration_uuid: str, host: str | None, force: bool,
                                admin_password: str | None) -> None:
        """Rebuild an instance of a down host on another one."""
        found = await self._load(instance_uuid, migration_uuid)
        if found is None:
            return
        dest = await self._schedule(ctx, found, MoveTarget(host, force), EVACUATE_EVENT)
        if dest is not None:
            await self.compute.evacuate_instance(ctx, dest["host"], instance_uuid=instance_uuid,
                                                 migration_uuid=migration_uuid,
                                                 admin_password=admin_password)

    async def _load(self, instance_uuid: str, migration_uuid: str) -> Moving | None:
        def read(conn: sa.Connection) -> Moving | None:
            try:
                return Moving(inst.get(conn, instance_uuid), mig.get(conn, migration_uuid),
                              group_of_instance(conn, instance_uuid))
            except (exc.InstanceNotFound, mig.MigrationNotFound):
                return None
        found = await self.db.read(read)
        if found is None or found.migration["dest_compute"] is not None:
            # Gone, or a second delivery of a move scheduled already.
            return None
        return found

    async def _schedule(self, ctx: RequestContext, found: Moving, target: MoveTarget,
                        event: str) -> Destination | None:
        """The destination (claims moved, the migration's destination set), or
        None with the failure recorded."""
        instance, migration = found.instance, found.migration
        spec = request_spec(instance, migration, target, found.group)
        try:
            result = await self.scheduler.select_destinations(ctx, spec)
        except ConnectionLost:
            LOG.warning("lost the broker while scheduling the move of %s", instance["uuid"])
            return None
        except Exception as error:  # noqa: BLE001 - NoValidHost, scheduler unreachable
            await self.db.run(self._not_moved, ctx, instance["uuid"], migration, error, event)
            return None
        dest = result["destinations"][0]
        details = json.dumps(result.get("decision"))
        await self.db.run(self._scheduled, ctx, instance["uuid"], migration, dest, event,
                          details)
        return dest

    def _scheduled(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                   migration: Migration, dest: Destination, event: str,
                   details: str) -> None:
        kind = MigrationType(migration["migration_type"])
        mig.save(conn, migration["uuid"], {"dest_compute": dest["host"],
                                           "dest_node": dest["nodename"],
                                           "dest_host": dest["host"], "status": SCHEDULED[kind]})
        instance_actions.record_event(conn, ctx, uuid, event, host=self.host, details=details)

    def _not_moved(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                   migration: Migration, error: BaseException, event: str) -> None:
        mig.save(conn, migration["uuid"], {"status": Status.ERROR})
        values: dict[str, Any] = {"task_state": None}
        if migration["migration_type"] == MigrationType.EVACUATION.value:
            # Nova's rebuild_instance: the guest's host is down, so it runs nowhere.
            values["vm_state"] = VmState.ERROR
        try:
            inst.save(conn, uuid, values)
        except exc.InstanceNotFound:
            return
        inst.add_fault(conn, uuid, error, None)
        instance_actions.record_event(conn, ctx, uuid, event, host=self.host, exc=error,
                                      details=getattr(error, "kwargs", {}).get("decision"))
        instance_actions.action_finish(conn, ctx, uuid, message="Error")
