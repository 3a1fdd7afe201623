"""Counted quotas: usage is counted from the records, limits per project.

Counting (instead of reserving) means nothing to leak: an instance that is
deleted stops counting. The check runs inside the transaction that creates
the records, after the insert, so concurrent creates cannot both pass.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute.exception import TooManyInstances
from cirrus.compute.models import instance_groups, instances, key_pairs, quota_limits
from cirrus.db.base import utcnow
from cirrus.db.prepared import Prepared

INSTANCE_RESOURCES = ("instances", "cores", "ram")
ALL_RESOURCES = ("instances", "cores", "ram", "key_pairs", "server_groups",
                 "server_group_members")


# Every create counts twice (before and after its insert): built once.
_LIMITS = Prepared(sa.select(quota_limits.c.resource, quota_limits.c.hard_limit).where(
    quota_limits.c.project_id == sa.bindparam("w_project")))
_INSTANCE_USAGE = Prepared(sa.select(
    sa.func.count(), sa.func.coalesce(sa.func.sum(instances.c.vcpus), 0),
    sa.func.coalesce(sa.func.sum(instances.c.memory_mb), 0)).where(
    instances.c.project_id == sa.bindparam("w_project"), instances.c.deleted.is_(False)))


def limits(conn: sa.Connection, settings: Any, project_id: str) -> dict[str, int]:
    """Hard limits of ``project_id`` (-1 is unlimited)."""
    out = {r: int(getattr(settings, f"quota_{r}")) for r in ALL_RESOURCES}
    for resource, hard_limit in _LIMITS.execute(conn, w_project=project_id).fetchall():
        out[resource] = hard_limit
    return out


def instance_usage(conn: sa.Connection, project_id: str) -> dict[str, int]:
    row = _INSTANCE_USAGE.execute(conn, w_project=project_id).fetchone()
    return {"instances": int(row[0]), "cores": int(row[1]), "ram": int(row[2])}


def lock_project(conn: sa.Connection, project_id: str) -> None:
    """Serialise quota checks of one project (SQLite already has one writer)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:p))"), {"p": project_id})


def allowed_instances(conn: sa.Connection, settings: Any, project_id: str, flavor: dict[str, Any],
                      min_count: int, max_count: int) -> int:
    """How many of ``max_count`` fit (≥ ``min_count``), else TooManyInstances (403)."""
    lim = limits(conn, settings, project_id)
    used = instance_usage(conn, project_id)
    per = {"instances": 1, "cores": flavor["vcpus"], "ram": flavor["memory_mb"]}
    fit = max_count
    for res in INSTANCE_RESOURCES:
        if lim[res] < 0 or per[res] == 0:
            continue
        fit = min(fit, max(0, (lim[res] - used[res]) // per[res]))
    if fit >= min_count:
        return fit
    overs = [r for r in INSTANCE_RESOURCES
             if lim[r] >= 0 and used[r] + per[r] * min_count > lim[r]]
    first = overs[0]
    raise TooManyInstances(overs=", ".join(overs), req=per[first] * min_count,
                           used=used[first], allowed=lim[first])


def recheck(conn: sa.Connection, settings: Any, project_id: str) -> None:
    """After inserting: still within limits? Raises TooManyInstances if not."""
    lim = limits(conn, settings, project_id)
    used = instance_usage(conn, project_id)
    for res in INSTANCE_RESOURCES:
        if lim[res] >= 0 and used[res] > lim[res]:
            raise TooManyInstances(overs=res, req=used[res], used=used[res], allowed=lim[res])


def usage(conn: sa.Connection, project_id: str, user_id: str | None) -> dict[str, int]:
    """In-use counts of every compute quota resource."""
    out = {r: 0 for r in ALL_RESOURCES}
    out.update(instance_usage(conn, project_id))
    out["server_groups"] = conn.execute(sa.select(sa.func.count()).select_from(instance_groups).where(
        instance_groups.c.project_id == project_id)).scalar_one()
    if user_id:
        out["key_pairs"] = conn.execute(sa.select(sa.func.count()).select_from(key_pairs).where(
            key_pairs.c.user_id == user_id)).scalar_one()
    return out


def set_limits(conn: sa.Connection, project_id: str, values: dict[str, int]) -> None:
    """Per-project overrides of the default limits."""
    for resource, limit in values.items():
        conn.execute(quota_limits.delete().where(quota_limits.c.project_id == project_id,
                                                 quota_limits.c.resource == resource))
        conn.execute(quota_limits.insert().values(project_id=project_id, resource=resource,
                                                  hard_limit=limit, created_at=utcnow()))


def reset_limits(conn: sa.Connection, project_id: str) -> None:
    conn.execute(quota_limits.delete().where(quota_limits.c.project_id == project_id))
