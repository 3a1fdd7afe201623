"""The compute API's moves (Nova's ``compute/api.py`` ``resize``,
``confirm_resize``, ``revert_resize``, ``live_migrate``, ``evacuate`` and the
migrations reads): state and quota checks in the API, the instance's task
state, its action and the migration record in one transaction, then a cast
to the conductor (new moves) or to the host that acts next.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus import claims
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute import migrations as mig
from cirrus.compute import quotas
from cirrus.compute.admission import BuildAdmission
from cirrus.compute.flavors import get_flavor
from cirrus.compute.hosts import compute_is_up, list_services
from cirrus.compute.migrations import Migration, MigrationType, Status
from cirrus.compute.records import FLAVOR_SNAPSHOT_KEYS, check_disk_config
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.transitions import TRANSITIONS, Transition
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.exception import CirrusException, Invalid, NotFound

Getter = Callable[[RequestContext, str], Awaitable[dict[str, Any]]]


class CannotResizeToSameFlavor(Invalid):
    msg_fmt = "When resizing, instances must change flavor!"


class CannotResizeDisk(Invalid):
    msg_fmt = "Server disk was unable to be resized because: %(reason)s"


class HostNotUsable(Invalid):
    msg_fmt = "%(reason)s"


class ComputeServiceInUse(Invalid):
    msg_fmt = "Compute service of %(host)s is still in use."


class ComputeHostMissing(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


def flavor_snapshot(flavor: dict[str, Any]) -> dict[str, Any]:
    """What an instance keeps of a flavor (its ``flavor`` column), as a boot keeps it."""
    return {k: flavor[k] for k in FLAVOR_SNAPSHOT_KEYS}


@dataclass(frozen=True)
class MoveAPI:
    """Moves of instances between hosts, as the HTTP handlers ask for them."""

    settings: Settings
    db: Database
    get: Getter  # the instance if the caller may see it (404 otherwise)
    conductor: ComputeTaskAPI
    compute: ComputeAPI
    admission: BuildAdmission  # closed when cirrus shuts down: no move starts then

    # -- resize and cold migration ---------------------------------------------------
    async def resize(self, ctx: RequestContext, uuid: str, flavor_id: str,
                     auto_disk_config: bool | None = None) -> None:
        """Resize to ``flavor_id`` (quota delta checked here, as Nova does),
        with the disk config asked for (None: the server's)."""
        row = await self._instance(ctx, uuid)
        if auto_disk_config is not None:
            check_disk_config(row, auto_disk_config)
        self.admission.check_open()
        migration = await self.db.run(self._begin_resize, ctx, row, flavor_id, auto_disk_config)
        await self.conductor.migrate_server(ctx, instance_uuid=uuid,
                                            migration_uuid=migration["uuid"], live=False)

    async def migrate(self, ctx: RequestContext, uuid: str, host: str | None) -> None:
        """Cold-migrate to ``host`` or wherever the scheduler chooses."""
        row = await self._instance(ctx, uuid)
        self.admission.check_open()
        if host is not None:
            await self._check_target(row, host, "migrate", "CannotMigrateToSameHost")
        migration = await self.db.run(self._begin_move, ctx, row, TRANSITIONS["migrate"],
                                      MigrationType.MIGRATION, Status.PRE_MIGRATING, None)
        await self.conductor.migrate_server(ctx, instance_uuid=uuid,
                                            migration_uuid=migration["uuid"], live=False,
                                            host=host)

    def _begin_resize(self, conn: sa.Connection, ctx: RequestContext, row: dict[str, Any],
                      flavor_id: str, auto_disk_config: bool | None) -> Migration:
        flavor = get_flavor(conn, flavor_id)
        if flavor is None or (flavor["disabled"] and flavor_id != row["flavor"].get("flavorid")):
            raise exc.FlavorNotFound(flavor_id=flavor_id)
        if flavor["flavorid"] == row["flavor"].get("flavorid"):
            raise CannotResizeToSameFlavor()
        if flavor["root_gb"] == 0 and row["root_gb"] != 0:
            raise CannotResizeDisk(reason="Resizing to a flavor without a root disk "
                                          "is not allowed.")
        if flavor["root_gb"] < row["root_gb"]:
            raise CannotResizeDisk(reason="Resize to a smaller disk is not supported.")
        self._check_quota_delta(conn, row, flavor)
        extra = {} if auto_disk_config is None else {"auto_disk_config": auto_disk_config}
        return self._begin_move(conn, ctx, row, TRANSITIONS["resize"], MigrationType.RESIZE,
                                Status.PRE_MIGRATING, flavor_snapshot(flavor), extra)

    def _check_quota_delta(self, conn: sa.Connection, row: dict[str, Any],
                           flavor: dict[str, Any]) -> None:
        """A bigger flavor must fit the project's cores and RAM quota."""
        quota = quotas.InstanceQuota(conn, self.settings, row["project_id"], flavor)
        for res, delta in (("cores", flavor["vcpus"] - row["vcpus"]),
                           ("ram", flavor["memory_mb"] - row["memory_mb"])):
            limit, used = quota.limits[res], quota.used[res]
            if delta > 0 and 0 <= limit < used + delta:
                raise exc.TooManyInstances(overs=res, req=delta, used=used, allowed=limit)

    @staticmethod
    def _begin_move(conn: sa.Connection, ctx: RequestContext, row: dict[str, Any],
                    t: Transition, kind: MigrationType, status: Status,
                    new_flavor: dict[str, Any] | None,
                    extra: dict[str, Any] | None = None) -> Migration:
        """The task state (with ``extra`` values), the action and the
        migration record, together."""
        from cirrus.compute.api import _begin

        _begin(conn, ctx, row["uuid"], t, extra)
        return mig.create(conn, instance=inst.get(conn, row["uuid"]), migration_type=kind,
                          status=status, user_id=ctx.user_id, project_id=ctx.project_id,
                          new_flavor=new_flavor)

    async def confirm_resize(self, ctx: RequestContext, uuid: str) -> None:
        """Confirm: the source host lets go of what it kept for a revert."""
        await self._instance(ctx, uuid)
        migration = await self.db.run(self._begin_finish, ctx, uuid,
                                      TRANSITIONS["confirm_resize"], Status.CONFIRMING)
        assert migration["source_compute"] is not None
        await self.compute.confirm_resize(ctx, migration["source_compute"], instance_uuid=uuid,
                                          migration_uuid=migration["uuid"])

    async def revert_resize(self, ctx: RequestContext, uuid: str) -> None:
        """Revert: back to the source host and the old flavor."""
        await self._instance(ctx, uuid)
        migration = await self.db.run(self._begin_finish, ctx, uuid,
                                      TRANSITIONS["revert_resize"], Status.REVERTING)
        assert migration["dest_compute"] is not None
        await self.compute.revert_resize(ctx, migration["dest_compute"], instance_uuid=uuid,
                                         migration_uuid=migration["uuid"])

    @staticmethod
    def _begin_finish(conn: sa.Connection, ctx: RequestContext, uuid: str, t: Transition,
                      status: Status) -> Migration:
        from cirrus.compute.api import _begin

        _begin(conn, ctx, uuid, t)  # a state it refuses is a 409 first
        try:
            migration = mig.awaiting_confirmation(conn, uuid)
        except mig.MigrationNotFound:
            # Nova: a RESIZED instance without a finished migration is a 400.
            raise exc.InvalidRequest(reason="Instance has not been resized.") from None
        mig.save(conn, migration["uuid"], {"status": status}, expected=(Status.FINISHED,))
        return migration

    async def confirm_on_delete(self, ctx: RequestContext, row: dict[str, Any]) -> None:
        """A resized server being deleted: its resize confirmed first, so the
        source's claim and leftovers go too."""
        def confirm(conn: sa.Connection) -> Migration | None:
            try:
                migration = mig.awaiting_confirmation(conn, row["uuid"])
            except mig.MigrationNotFound:
                return None
            mig.save(conn, migration["uuid"], {"status": Status.CONFIRMED},
                     expected=(Status.FINISHED,))
            claims.release(conn, migration["uuid"])
            return migration
        migration = await self.db.run(confirm)
        if migration is not None and migration["source_compute"]:
            await self.compute.cleanup_resize(ctx, migration["source_compute"],
                                              instance_uuid=row["uuid"])

    # -- live migration ------------------------------------------------------------------
    async def live_migrate(self, ctx: RequestContext, uuid: str, host: str | None,
                           block_migration: bool | None, force: bool) -> None:
        """Live-migrate to ``host`` (checked by the scheduler unless ``force``)."""
        row = await self._instance(ctx, uuid)
        self.admission.check_open()
        if host is not None:
            await self._check_target(row, host, "live-migrate", "UnableToMigrateToSelf")
        migration = await self.db.run(self._begin_move, ctx, row, TRANSITIONS["live_migrate"],
                                      MigrationType.LIVE_MIGRATION, Status.ACCEPTED, None)
        await self.conductor.migrate_server(ctx, instance_uuid=uuid,
                                            migration_uuid=migration["uuid"], live=True,
                                            host=host, force=force,
                                            block_migration=block_migration)

    async def live_migration_in_progress(self, ctx: RequestContext, uuid: str,
                                         migration_id: int) -> Migration:
        """Migration ``migration_id`` of the server, a live one in progress; 404
        otherwise (Nova's ``get_by_id_and_instance`` plus its checks)."""
        await self.get(ctx, uuid)
        migration = await self.db.read(mig.get_by_id, uuid, migration_id)
        if migration["migration_type"] != MigrationType.LIVE_MIGRATION.value or \
                migration["status"] not in [s.value for s in mig.LIVE_IN_PROGRESS]:
            raise mig.MigrationNotFound(migration_id=migration_id)
        return migration

    async def live_migrations(self, ctx: RequestContext, uuid: str) -> list[Migration]:
        """The server's live migrations in progress (``GET …/migrations``)."""
        await self.get(ctx, uuid)
        return await self.db.read(mig.for_instance, uuid, (MigrationType.LIVE_MIGRATION,),
                                  mig.LIVE_IN_PROGRESS)

    async def live_migrate_force_complete(self, ctx: RequestContext, uuid: str,
                                          migration_id: int) -> None:
        row = await self.get(ctx, uuid)
        migration = await self.live_migration_in_progress(ctx, uuid, migration_id)
        if row["task_state"] != "migrating" or migration["status"] != Status.RUNNING.value:
            raise exc.InstanceInvalidState(method="force_complete", instance_uuid=uuid,
                                           attr="task_state", state=row["task_state"])
        await self.db.run(instance_actions.action_start, ctx, uuid,
                          "live_migration_force_complete")
        await self.compute.live_migration_force_complete(ctx, row["host"], instance_uuid=uuid)

    async def live_migrate_abort(self, ctx: RequestContext, uuid: str, migration_id: int,
                                 version: tuple[int, int]) -> None:
        """Abort (2.24); before 2.65 only a running one, from 2.65 also one
        queued or preparing."""
        row = await self.get(ctx, uuid)
        migration = await self.live_migration_in_progress(ctx, uuid, migration_id)
        abortable = [Status.RUNNING] if version < (2, 65) else mig.ABORTABLE
        if migration["status"] not in [s.value for s in abortable]:
            raise mig.MigrationStatusChanged(migration_id=migration_id,
                                             actual=migration["status"],
                                             expected=[s.value for s in abortable])
        await self.db.run(instance_actions.action_start, ctx, uuid, "live_migration_cancel")
        await self.compute.live_migration_abort(ctx, row["host"], instance_uuid=uuid,
                                                migration_uuid=migration["uuid"])

    # -- evacuation ------------------------------------------------------------------
    async def evacuate(self, ctx: RequestContext, uuid: str, host: str | None,
                       admin_password: str | None, force: bool) -> None:
        """Rebuild the server elsewhere; its host's compute service must be down."""
        row = await self._instance(ctx, uuid)
        self.admission.check_open()
        if host is not None:
            await self._check_target(row, host, "evacuate", "UnableToMigrateToSelf",
                                     missing=ComputeHostMissing)
        if await self.db.read(compute_is_up, row["host"], self.settings.service_down_time):
            raise ComputeServiceInUse(host=row["host"])
        migration = await self.db.run(self._begin_move, ctx, row, TRANSITIONS["evacuate"],
                                      MigrationType.EVACUATION, Status.ACCEPTED, None)
        await self.conductor.evacuate_instance(ctx, instance_uuid=uuid,
                                               migration_uuid=migration["uuid"], host=host,
                                               force=force, admin_password=admin_password)

    # -- reads ----------------------------------------------------------------------
    async def list_migrations(self, filters: mig.MigrationFilters) -> list[Migration]:
        """``GET /os-migrations`` (admins only, by its rule)."""
        return await self.db.read(mig.list_migrations, filters)

    # -- helpers --------------------------------------------------------------------
    async def _instance(self, ctx: RequestContext, uuid: str) -> dict[str, Any]:
        row = await self.get(ctx, uuid)
        if not row["host"]:
            raise exc.InstanceInvalidState(method="move", instance_uuid=uuid, attr="vm_state",
                                           state=row["vm_state"])
        return row

    async def _check_target(self, row: dict[str, Any], host: str, verb: str, same: str,
                            missing: type[CirrusException] = exc.ComputeHostNotFound) -> None:
        """A named destination exists and is not the server's own host."""
        services = await self.db.read(list_services, host, "cirrus-compute")
        if not services:
            raise missing(host=host)
        if host == row["host"]:
            raise HostNotUsable(reason=f"{same}: the instance {row['uuid']} cannot {verb} "
                                       f"to its own host {host}.")
