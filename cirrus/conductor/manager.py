"""The conductor (seeds 000/004: ``build_instances``).

Asks the scheduler for hosts (an RPC call), then casts the build to each
chosen compute host. No valid host → every instance of the request goes to
ERROR with a fault naming the filter, and an error event on its action.
Reschedules come back here with the tried hosts in ``filter_properties``.
"""
from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import sqlalchemy as sa

from cirrus.compute import build_folds
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.exception import MaxRetriesExceeded
from cirrus.compute.hosts import is_up, list_services
from cirrus.compute.models import instances
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.server_groups import group_of_instance
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.timeline import SCHEDULE_EVENT, ScheduleTiming, report_total
from cirrus.compute.stuck_builds import (BuildTimedOut, conductor_restarted,
                                         fail_stuck_builds, stuck_builds, unscheduled_builds)
from cirrus.conductor.migrate import MoveTasks
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.network.api import make_network_api
from cirrus.rpc import ConnectionLost, Transport
from cirrus.claims import release
from cirrus.scheduler.exception import NoValidHost
from cirrus.scheduler.rpcapi import SchedulerAPI
from cirrus.scheduler.selection import Destination, Selection
from cirrus.service import PeriodicTask, Service

LOG = logging.getLogger(__name__)


class ConductorManager:
    """RPC endpoint of the conductor service."""

    RPC_API = frozenset({"build_instances", "unshelve_instance", "migrate_server",
                         "evacuate_instance"})

    def __init__(self, settings: Settings, db: Database, transport: Transport,
                 host: str) -> None:
        self.settings = settings
        self.db = db
        self.host = host
        self.transport = transport
        self.scheduler_client = SchedulerAPI(transport)
        self.compute_rpcapi = ComputeAPI(transport)
        self._network_api: Any = None
        # Instances created before this process are no build of its (start()).
        self.started_at = utcnow()
        self.moves = MoveTasks(db, self.scheduler_client, self.compute_rpcapi, host,
                               settings.allow_resize_to_same_host)

    # -- moves (cirrus/conductor/migrate.py) -------------------------------------------
    async def migrate_server(self, ctx: RequestContext, instance_uuid: str, migration_uuid: str,
                             live: bool, host: str | None = None, force: bool = False,
                             block_migration: bool | None = None) -> None:
        await self.moves.migrate_server(ctx, instance_uuid, migration_uuid, live, host, force,
                                        block_migration)

    async def evacuate_instance(self, ctx: RequestContext, instance_uuid: str,
                                migration_uuid: str, host: str | None, force: bool,
                                admin_password: str | None) -> None:
        await self.moves.evacuate_instance(ctx, instance_uuid, migration_uuid, host, force,
                                           admin_password)

    async def build_instances(self, ctx: RequestContext, instance_uuids: list[str],
                              request_spec: dict[str, Any], filter_properties: dict[str, Any],
                              build_params: dict[str, Any]) -> None:
        """Schedule ``instance_uuids`` and cast each build to its host.

        The bus may deliver this twice, even twice at once (a redelivery after a
        lost connection overlapping the first delivery). So only instances still
        waiting for a host are scheduled (``_still_waiting``), the host is
        recorded by a guarded save that one delivery wins, and only the winner
        casts the build.
        """
        uuids = await self._still_waiting(instance_uuids)
        if not uuids:
            return
        # The message is this delivery's own (decoded from the wire); only its
        # top level changes here, so a shallow copy keeps the caller's intact.
        spec = dict(request_spec)
        spec["instance_uuids"] = list(uuids)
        spec["num_instances"] = len(uuids)
        retry = filter_properties.setdefault("retry", {"num_attempts": 1, "hosts": []})
        spec["retry"] = retry
        scheduled = ScheduleTiming()
        try:
            self._check_retries(uuids, retry)
            with scheduled:
                result = await self._schedule_instances(ctx, spec)
        except ConnectionLost:
            # This delivery went down with the same connection, unacknowledged:
            # the broker hands it out again, and that delivery schedules them.
            LOG.warning("lost the broker while scheduling %s; leaving them to the redelivery",
                        uuids)
            return
        except (NoValidHost, MaxRetriesExceeded) as error:
            await self._set_vm_state_and_notify(ctx, uuids, error, scheduled)
            return
        except Exception as error:  # noqa: BLE001 - scheduler unreachable etc.
            LOG.exception("scheduling failed for %s", uuids)
            await self._set_vm_state_and_notify(ctx, uuids, error, scheduled)
            return
        # The decision's text once per request, and outside the write lock.
        details = scheduled.details(result.get("decision"))
        for uuid, dest in zip(uuids, result["destinations"]):
            if self.db.is_postgresql:  # one statement with other instances', no transaction
                ok = await build_folds.record_host_together(
                    self.db, uuid, ctx.request_id, self._host_values(dest),
                    self._schedule_event(details, scheduled.start))
            else:
                ok = await self.db.run(self._record_host, ctx, uuid, dest, details,
                                       scheduled.start)
            if not ok:  # deleted meanwhile, or another delivery got there first
                await self.db.run(self._lost_the_instance, uuid)
                continue
            await self.compute_rpcapi.build_and_run_instance(
                ctx, dest["host"], instance_uuid=uuid, node=dest["nodename"],
                request_spec=spec, filter_properties=filter_properties,
                build_params=build_params)

    async def _still_waiting(self, instance_uuids: list[str]) -> list[str]:
        """Those of ``instance_uuids`` to schedule: the ones still waiting for a
        host, read before the scheduler is asked — when there are several:
        one of them gone would count against the others' room (a NoValidHost
        for all).

        One instance (nearly every request) goes to the scheduler unread, on
        any bus (the single boot's path: a round trip and two thread hand-offs
        on PostgreSQL). A repeated delivery finds the claim the first one
        holds, kept as it is if its host still passes, and kept too if the
        instance is placed already (the scheduler's ``_held_answer``), never
        moved from under a build; the host save, which one delivery wins,
        refuses the others. One deleted or failed meanwhile is refused there
        and its claim given back (``_lost_the_instance``), as one deleted
        while the scheduler decides always was.
        """
        if len(instance_uuids) == 1:
            return instance_uuids
        uuids = await self.db.read(_waiting_for_host, instance_uuids)
        if len(uuids) < len(instance_uuids):
            LOG.info("not scheduling %s: no longer waiting for a host (a repeated delivery)",
                     sorted(set(instance_uuids) - set(uuids)))
        return uuids

    async def unshelve_instance(self, ctx: RequestContext, instance_uuid: str,
                                image_id: str | None, request_spec: dict[str, Any],
                                availability_zone: str | None = None) -> None:
        """Schedule an offloaded server (a new claim) and cast its unshelve to
        the chosen host. No host: back to SHELVED_OFFLOADED with a fault."""
        # The group is read here, as Nova's conductor does (setup_instance_group):
        # its policy applies to the new host as it did at boot.
        group = await self.db.read(group_of_instance, instance_uuid)
        spec = {**request_spec, "instance_uuids": [instance_uuid], "num_instances": 1,
                "instance_group": group}
        try:
            result = await self._schedule_instances(ctx, spec)
        except ConnectionLost:
            LOG.warning("lost the broker while scheduling the unshelve of %s", instance_uuid)
            return
        except Exception as error:  # noqa: BLE001 - NoValidHost, scheduler unreachable
            await self.db.run(self._unshelve_failed, ctx, instance_uuid, error)
            return
        dest = result["destinations"][0]
        if not await self.db.run(self._unshelve_scheduled, ctx, instance_uuid, availability_zone):
            await self.db.run(release, instance_uuid)  # deleted meanwhile
            return
        await self.compute_rpcapi.unshelve_instance(ctx, dest["host"], instance_uuid, image_id,
                                                    dest["nodename"])

    def _unshelve_scheduled(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                            availability_zone: str | None) -> bool:
        values = {"availability_zone": availability_zone} if availability_zone else {}
        try:
            inst.save(conn, uuid, values, expected_task_state=[TaskState.UNSHELVING],
                      expected_vm_state=[VmState.SHELVED_OFFLOADED])
        except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
            return False
        instance_actions.record_event(conn, ctx, uuid, "schedule_instances", host=self.host)
        return True

    def _unshelve_failed(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                         error: BaseException) -> None:
        try:
            inst.save(conn, uuid, {"task_state": None}, expected_task_state=[TaskState.UNSHELVING],
                      expected_vm_state=[VmState.SHELVED_OFFLOADED])
        except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
            return
        release(conn, uuid)
        inst.add_fault(conn, uuid, error, None)
        instance_actions.record_event(conn, ctx, uuid, "schedule_instances", host=self.host,
                                      exc=error)
        instance_actions.action_finish(conn, ctx, uuid, message="Error")

    async def fail_orphaned_builds(self) -> list[str]:
        """Builds stuck past ``instance_build_timeout`` whose host is down (or that
        never reached a host) go to ERROR; a live host sweeps its own."""
        timeout = self.settings.instance_build_timeout
        services = await self.db.read(list_services, None, "cirrus-compute")
        down = [s["host"] for s in services if not is_up(s, self.settings.service_down_time)]
        rows = await self.db.read(stuck_builds, timeout, down, True)
        if not rows:
            return []
        return await fail_stuck_builds(self.db, self._network(), rows,
                                       BuildTimedOut(timeout=timeout), self.host)

    async def start(self) -> None:
        """Before taking messages: builds the previous process accepted and
        never scheduled go to ERROR with a fault saying so, within seconds
        instead of after ``instance_build_timeout``. Only on a bus that keeps
        nothing across a restart (``inprocess://``, ``local://``: the process
        that died held their requests); a broker hands them to this one."""
        if self.settings.transport_url.startswith("amqp"):
            return
        rows = await self.db.read(unscheduled_builds, self.started_at)
        if rows:
            await fail_stuck_builds(self.db, self._network(), rows, conductor_restarted(),
                                    self.host)

    def _network(self) -> Any:
        if self._network_api is None:
            self._network_api = make_network_api(self.settings, self.db, None, None)
        return self._network_api

    def _check_retries(self, uuids: list[str], retry: dict[str, Any]) -> None:
        if retry["num_attempts"] > self.settings.max_attempts:
            raise MaxRetriesExceeded(
                reason=f"Exceeded maximum number of retries. Exhausted all hosts available for "
                       f"retrying build failures for instance {', '.join(uuids)}.")

    async def _schedule_instances(self, ctx: RequestContext, spec: dict[str, Any]) -> Selection:
        return await self.scheduler_client.select_destinations(ctx, spec)

    @staticmethod
    def _host_values(dest: Destination) -> dict[str, Any]:
        """What placing an instance on ``dest`` saves."""
        # The instance is in its host's zone (Nova's conductor sets it so).
        zone = {"availability_zone": dest["availability_zone"]} \
            if dest.get("availability_zone") else {}
        return {"host": dest["host"], "node": dest["nodename"], "launched_on": dest["host"],
                "scheduled_at": utcnow(), **zone}

    def _schedule_event(self, details: str, start: dt.datetime) -> dict[str, Any]:
        """The scheduling event's columns, finished."""
        return instance_actions.finished_event(SCHEDULE_EVENT, host=self.host, details=details,
                                               start=start)

    def _record_host(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                     dest: Destination, details: str, start: dt.datetime) -> bool:
        """Put ``uuid`` on its host if it still waits for one, with the
        scheduling event; False, with nothing changed, otherwise. (SQLite's
        unit; PostgreSQL writes the same in one statement shared with other
        placements, ``build_folds.record_host_together``.)"""
        try:
            inst.save(conn, uuid, self._host_values(dest),
                      expected_task_state=[TaskState.SCHEDULING],
                      expected_vm_state=[VmState.BUILDING], expected_host=None)
        except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
            return False
        instance_actions.record_event(conn, ctx, uuid, SCHEDULE_EVENT, host=self.host,
                                      details=details, start=start)
        return True

    @staticmethod
    def _lost_the_instance(conn: sa.Connection, uuid: str) -> None:
        """Our claim for ``uuid`` was in vain. Give it back if nothing builds the
        instance any more (deleted, being deleted, failed) — but not if another
        delivery of this request placed it: that build holds the same claim."""
        try:
            row = inst.get(conn, uuid)
        except exc.InstanceNotFound:
            release(conn, uuid)
            return
        if row["task_state"] == TaskState.DELETING.value:
            release(conn, uuid)
            inst.soft_delete(conn, uuid)
        elif row["vm_state"] == VmState.ERROR.value:
            release(conn, uuid)

    async def _set_vm_state_and_notify(self, ctx: RequestContext, uuids: list[str],
                                       error: BaseException, scheduled: ScheduleTiming) -> None:
        details = scheduled.details(getattr(error, "kwargs", {}).get("decision"))
        created = await self.db.run(self._fail_all, ctx, uuids, error, details, scheduled.start)
        for created_at in created:
            report_total(created_at, failed=True)

    def _fail_all(self, conn: sa.Connection, ctx: RequestContext, uuids: list[str],
                  error: BaseException, details: str, start: dt.datetime
                  ) -> list[dt.datetime]:
        """ERROR with a fault for each instance still waiting for a host; any
        claim the scheduler made before the failure (a late or lost reply) goes.
        The failed instances' ``created_at``."""
        created = []
        for uuid in uuids:
            try:
                row = inst.save_and_get(conn, uuid, {"vm_state": VmState.ERROR, "task_state": None},
                                        expected_task_state=[TaskState.SCHEDULING],
                                        expected_vm_state=[VmState.BUILDING], expected_host=None)
            except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
                self._lost_the_instance(conn, uuid)
                continue  # deleted, or another delivery of this request placed it
            release(conn, uuid)
            inst.add_fault(conn, uuid, error, None)
            instance_actions.record_event(conn, ctx, uuid, SCHEDULE_EVENT, host=self.host,
                                          exc=error, details=details, start=start)
            instance_actions.action_finish(conn, ctx, uuid, message="Error")
            created.append(row["created_at"])
        return created


def _waiting(match: sa.ColumnElement[bool]) -> sa.Select[Any]:
    """The uuids of the instances ``match`` picks that still wait for a host."""
    i = instances
    return sa.select(i.c.uuid).where(
        match, i.c.deleted.is_(False), i.c.vm_state == VmState.BUILDING.value,
        i.c.task_state == TaskState.SCHEDULING.value, i.c.host.is_(None))


def _waiting_for_host(conn: sa.Connection, uuids: list[str]) -> list[str]:
    """Those of ``uuids`` that still wait to be scheduled, in the given order."""
    waiting = set(conn.execute(_waiting(instances.c.uuid.in_(uuids))).scalars())
    return [u for u in uuids if u in waiting]


def make_services(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    """One conductor service for this process."""
    host = settings.compute_host or "conductor"
    manager = ConductorManager(settings, db, transport, host)
    return [Service(binary="cirrus-conductor", topic="conductor", host=host, db=db,
                    transport=transport, endpoint=manager,
                    report_interval=settings.report_interval,
                    periodic_tasks=_periodic(manager))]


def _periodic(manager: ConductorManager) -> list[PeriodicTask]:
    timeout = manager.settings.instance_build_timeout
    if timeout <= 0:
        return []
    return [PeriodicTask("fail_orphaned_builds", max(1.0, min(60.0, timeout / 4)),
                         manager.fail_orphaned_builds)]
