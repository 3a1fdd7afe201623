"""The conductor (seeds 000/004: ``build_instances``).

Asks the scheduler for hosts (an RPC call), then casts the build to each
chosen compute host. No valid host → every instance of the request goes to
ERROR with a fault naming the filter, and an error event on its action.
Reschedules come back here with the tried hosts in ``filter_properties``.
"""
from __future__ import annotations

import copy
import logging
from typing import Any

import sqlalchemy as sa

from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.exception import MaxRetriesExceeded
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import TaskState
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.rpc import Transport
from cirrus.scheduler.exception import NoValidHost
from cirrus.scheduler.rpcapi import SchedulerAPI
from cirrus.service import PeriodicTask, Service

LOG = logging.getLogger(__name__)


class ConductorManager:
    """RPC endpoint of the conductor service."""

    RPC_API = frozenset({"build_instances"})

    def __init__(self, settings: Settings, db: Database, transport: Transport,
                 host: str) -> None:
        self.settings = settings
        self.db = db
        self.host = host
        self.scheduler_client = SchedulerAPI(transport)
        self.compute_rpcapi = ComputeAPI(transport)
        self._network_api: Any = None

    async def build_instances(self, ctx: RequestContext, instance_uuids: list[str],
                              request_spec: dict[str, Any], filter_properties: dict[str, Any],
                              build_params: dict[str, Any]) -> None:
        """Schedule ``instance_uuids`` and cast each build to its host."""
        spec = copy.deepcopy(request_spec)
        spec["instance_uuids"] = list(instance_uuids)
        spec["num_instances"] = len(instance_uuids)
        retry = filter_properties.setdefault("retry", {"num_attempts": 1, "hosts": []})
        spec["retry"] = retry
        try:
            self._check_retries(instance_uuids, retry)
            result = await self._schedule_instances(ctx, spec)
        except (NoValidHost, MaxRetriesExceeded) as error:
            await self._set_vm_state_and_notify(ctx, instance_uuids, error, spec)
            return
        except Exception as error:  # noqa: BLE001 - scheduler unreachable etc.
            LOG.exception("scheduling failed for %s", instance_uuids)
            await self._set_vm_state_and_notify(ctx, instance_uuids, error, spec)
            return
        for uuid, dest in zip(instance_uuids, result["destinations"]):
            ok = await self.db.run(self._record_host, ctx, uuid, dest, result.get("decision"))
            if not ok:
                continue  # deleted while scheduling; the delete path released it
            await self.compute_rpcapi.build_and_run_instance(
                ctx, dest["host"], instance_uuid=uuid, node=dest["nodename"],
                request_spec=spec, filter_properties=filter_properties,
                build_params=build_params)

    async def fail_orphaned_builds(self) -> list[str]:
        """Builds stuck past ``instance_build_timeout`` whose host is down (or that
        never reached a host) go to ERROR; a live host sweeps its own."""
        from cirrus.compute.hosts import is_up, list_services
        from cirrus.compute.periodic import fail_stuck_builds, stuck_builds
        from cirrus.network.api import make_network_api

        timeout = self.settings.instance_build_timeout
        services = await self.db.read(list_services, None, "cirrus-compute")
        down = [s["host"] for s in services if not is_up(s, self.settings.service_down_time)]
        rows = await self.db.read(stuck_builds, timeout, down, True)
        if not rows:
            return []
        if self._network_api is None:
            self._network_api = make_network_api(self.settings, self.db, None, None)
        return await fail_stuck_builds(self.db, self._network_api, rows, timeout, self.host)

    def _check_retries(self, uuids: list[str], retry: dict[str, Any]) -> None:
        if retry["num_attempts"] > self.settings.max_attempts:
            raise MaxRetriesExceeded(
                reason=f"Exceeded maximum number of retries. Exhausted all hosts available for "
                       f"retrying build failures for instance {', '.join(uuids)}.")

    async def _schedule_instances(self, ctx: RequestContext, spec: dict[str, Any]) -> dict[str, Any]:
        return await self.scheduler_client.select_destinations(ctx, spec)

    def _record_host(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                     dest: dict[str, Any], decision: Any) -> bool:
        from cirrus.scheduler.claims import release

        instance_actions.record_event(conn, ctx, uuid, "conductor_schedule_and_build_instances",
                                      host=self.host, details=decision)
        try:
            inst.save(conn, uuid, {"host": dest["host"], "node": dest["nodename"],
                                   "launched_on": dest["host"], "scheduled_at": utcnow()},
                      expected_task_state=[TaskState.SCHEDULING])
        except Exception:  # noqa: BLE001 - gone or being deleted
            release(conn, uuid)
            self._finish_deleted(conn, ctx, uuid)
            return False
        return True

    @staticmethod
    def _finish_deleted(conn: sa.Connection, ctx: RequestContext, uuid: str) -> None:
        try:
            row = inst.get(conn, uuid)
        except Exception:  # noqa: BLE001
            return
        if row["task_state"] == TaskState.DELETING.value:
            inst.soft_delete(conn, uuid)

    async def _set_vm_state_and_notify(self, ctx: RequestContext, uuids: list[str],
                                       error: BaseException, spec: dict[str, Any]) -> None:
        await self.db.run(self._fail_all, ctx, uuids, error)

    def _fail_all(self, conn: sa.Connection, ctx: RequestContext, uuids: list[str],
                  error: BaseException) -> None:
        for uuid in uuids:
            instance_actions.record_event(conn, ctx, uuid, "conductor_schedule_and_build_instances",
                                          host=self.host, exc=error,
                                          details=getattr(error, "kwargs", {}).get("decision"))
            self._finish_deleted(conn, ctx, uuid)
            inst.set_error(conn, uuid, error, None)
            instance_actions.action_finish(conn, ctx, uuid, message="Error")


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
