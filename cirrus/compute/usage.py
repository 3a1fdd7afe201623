"""Tenant usage (Nova's ``os-simple-tenant-usage``): what each project's
instances used over a window, in hours and in vCPU-, MiB- and GiB-hours.

An instance counts from ``launched_at`` to ``terminated_at`` (or the end of
the window), clipped to the window; deleted instances keep both stamps
(``instance.soft_delete``), so their usage stays. Instances are read in
(project, uuid) order, ``limit`` at a time after ``marker``.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instances
from cirrus.exception import Invalid

i = instances
COLUMNS = (i.c.uuid, i.c.project_id, i.c.display_name, i.c.flavor, i.c.vcpus, i.c.memory_mb,
           i.c.root_gb, i.c.ephemeral_gb, i.c.vm_state, i.c.launched_at, i.c.terminated_at)


class MarkerNotFound(Invalid):
    msg_fmt = "Marker %(marker)s could not be found."


@dataclass
class ServerUsage:
    """One instance's part of the window."""

    instance_id: str
    name: str
    tenant_id: str
    flavor: str
    vcpus: int
    memory_mb: int
    local_gb: int
    hours: float
    started_at: dt.datetime
    ended_at: dt.datetime | None
    state: str
    uptime: int


@dataclass
class TenantUsage:
    """A project's totals over the window (and its servers')."""

    tenant_id: str
    start: dt.datetime
    stop: dt.datetime
    total_local_gb_usage: float = 0
    total_vcpus_usage: float = 0
    total_memory_mb_usage: float = 0
    total_hours: float = 0
    server_usages: list[ServerUsage] = field(default_factory=list)

    def add(self, usage: ServerUsage) -> None:
        self.total_local_gb_usage += usage.local_gb * usage.hours
        self.total_vcpus_usage += usage.vcpus * usage.hours
        self.total_memory_mb_usage += usage.memory_mb * usage.hours
        self.total_hours += usage.hours
        self.server_usages.append(usage)


def hours_for(launched_at: dt.datetime | None, terminated_at: dt.datetime | None,
              start: dt.datetime, stop: dt.datetime) -> float:
    """Hours the instance ran within ``[start, stop]`` (Nova's ``_hours_for``)."""
    if launched_at is None or launched_at > stop:
        return 0
    if terminated_at is not None and terminated_at < start:
        return 0
    until = min(stop, terminated_at) if terminated_at is not None else stop
    return (until - max(launched_at, start)).total_seconds() / 3600.0


def server_usage(row: Any, start: dt.datetime, stop: dt.datetime, now: dt.datetime) -> ServerUsage:
    ended = row.terminated_at
    uptime = (ended if ended is not None else now) - row.launched_at
    return ServerUsage(instance_id=row.uuid, name=row.display_name, tenant_id=row.project_id,
                       flavor=(row.flavor or {}).get("name", ""), vcpus=row.vcpus,
                       memory_mb=row.memory_mb, local_gb=row.root_gb + (row.ephemeral_gb or 0),
                       hours=hours_for(row.launched_at, ended, start, stop),
                       started_at=row.launched_at, ended_at=ended,
                       state="terminated" if ended is not None else row.vm_state,
                       uptime=int(uptime.total_seconds()))


def _after(conn: sa.Connection, marker: str) -> sa.ColumnElement[bool]:
    """Rows after the marker instance in (project, uuid) order (deleted ones count)."""
    row = conn.execute(sa.select(i.c.project_id).where(i.c.uuid == marker)).first()
    if row is None:
        raise MarkerNotFound(marker=marker)
    return sa.or_(i.c.project_id > row.project_id,
                  sa.and_(i.c.project_id == row.project_id, i.c.uuid > marker))


def active_in_window(conn: sa.Connection, start: dt.datetime, stop: dt.datetime,
                     project_id: str | None, limit: int, marker: str | None) -> list[Any]:
    """Instances (deleted ones too) that ran at some point in the window."""
    query = sa.select(*COLUMNS).where(
        sa.or_(i.c.terminated_at.is_(None), i.c.terminated_at > start), i.c.launched_at < stop)
    if project_id is not None:
        query = query.where(i.c.project_id == project_id)
    if marker is not None:
        query = query.where(_after(conn, marker))
    return list(conn.execute(query.order_by(i.c.project_id, i.c.uuid).limit(limit)))


def tenant_usages(conn: sa.Connection, start: dt.datetime, stop: dt.datetime,
                  project_id: str | None, limit: int, marker: str | None, now: dt.datetime
                  ) -> tuple[list[TenantUsage], list[ServerUsage]]:
    """Per project (in order) its usage, and every server's usage in the page."""
    by_project: dict[str, TenantUsage] = {}
    servers = []
    for row in active_in_window(conn, start, stop, project_id, limit, marker):
        usage = server_usage(row, start, stop, now)
        by_project.setdefault(row.project_id, TenantUsage(row.project_id, start, stop)).add(usage)
        servers.append(usage)
    return list(by_project.values()), servers
