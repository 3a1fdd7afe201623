"""The sweep for builds nobody finishes (Nova's ``_check_instance_build_time``).

Two services run it: a compute host for its own builds
(``periodic.ComputePeriodics``) and the conductor for the builds of hosts
whose compute service is down (``ConductorManager.fail_orphaned_builds``), so
a crashed service leaves nothing in BUILD forever. It lives apart from the
host's periodic tasks because the conductor may not import a compute host's
code (the import-linter contracts in pyproject.toml): this module reads and
writes rows, releases claims and ports, and touches no driver.
"""
from __future__ import annotations

import datetime as dt
import logging
from typing import Any, Callable, Protocol, TypeVar

import sqlalchemy as sa

from cirrus import claims
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute.models import instances
from cirrus.compute.states import VmState
from cirrus.context import admin_context
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.exception import CirrusException
from cirrus.network.api import API as NetworkAPI

LOG = logging.getLogger(__name__)
T = TypeVar("T")


class Transactions(Protocol):
    """Where the sweep writes: the database, or a host's InstanceStore."""

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...


class BuildTimedOut(CirrusException):
    code = 500
    msg_fmt = "Instance build timed out after %(timeout)s seconds. Set to error state."


def stuck_builds(conn: sa.Connection, timeout: float, hosts: list[str] | None,
                 include_unscheduled: bool) -> list[dict[str, Any]]:
    """BUILDING instances not updated for ``timeout`` s, on ``hosts`` (None: any)."""
    cutoff = utcnow() - dt.timedelta(seconds=timeout)
    last = sa.func.coalesce(instances.c.updated_at, instances.c.created_at)
    where = [instances.c.vm_state == VmState.BUILDING.value, instances.c.deleted.is_(False),
             last < cutoff]
    placed = instances.c.host.in_(hosts) if hosts is not None else instances.c.host.is_not(None)
    where.append(sa.or_(placed, instances.c.host.is_(None)) if include_unscheduled else placed)
    return fetch_all(conn, sa.select(instances).where(*where))


async def fail_stuck_builds(db: Transactions, network_api: NetworkAPI,
                            rows: list[dict[str, Any]], timeout: float,
                            reporter: str) -> list[str]:
    """ERROR + fault for each row still building; claims and ports released."""
    def to_error(conn: sa.Connection, uuid: str, error: BuildTimedOut) -> None:
        # One transaction: nobody sees the ERROR without its fault, or a claim
        # held by an instance that no longer builds.
        inst.save(conn, uuid, {"vm_state": VmState.ERROR, "task_state": None},
                  expected_vm_state=VmState.BUILDING)
        inst.add_fault(conn, uuid, error, reporter)
        claims.release(conn, uuid)

    failed: list[str] = []
    ctx = admin_context()
    for row in rows:
        try:
            await db.run(to_error, row["uuid"], BuildTimedOut(timeout=timeout))
        except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
            continue
        try:
            await network_api.deallocate_for_instance(
                ctx, row, requested_networks=row.get("requested_networks"))
        except Exception:  # noqa: BLE001 - the next sweep retries nothing; log it loudly
            LOG.exception("could not release ports of timed-out build %s", row["uuid"])
        LOG.warning("build of %s timed out after %ss; set to ERROR", row["uuid"], timeout)
        failed.append(row["uuid"])
    return failed
