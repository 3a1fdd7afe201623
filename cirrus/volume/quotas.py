"""Block storage quotas (Cinder's ``quota_sets``), counted from the records.

Usage is counted from the volumes and snapshots tables in the transaction
that inserts the new record (a delete stops counting at once, nothing is
reserved or leaked). Limits: a project's own row in ``volume_quotas``, else
the settings' defaults (-1: unlimited). Snapshots count towards
``gigabytes`` as in Cinder (``no_snapshot_gb_quota = False``).

Resources cirrus has no records for (backups, groups) are shown with their
limits and a usage of 0, as a Cinder without those services shows them.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.volume import exception as exc
from cirrus.volume.models import (snapshots, volume_quota_classes, volume_quotas, volume_types,
                                  volumes)

BASE = ("volumes", "snapshots", "gigabytes", "per_volume_gigabytes", "backups",
        "backup_gigabytes", "groups")
PER_TYPE = ("volumes", "gigabytes", "snapshots")
DEFAULT_CLASS = "default"


@dataclass(frozen=True)
class Usage:
    in_use: int
    limit: int


def class_defaults(conn: sa.Connection, settings: Settings) -> dict[str, int]:
    """The defaults with the ``default`` quota class's limits over them."""
    out = defaults(settings, type_names(conn))
    for resource, hard in conn.execute(
            sa.select(volume_quota_classes.c.resource, volume_quota_classes.c.hard_limit)
            .where(volume_quota_classes.c.class_name == DEFAULT_CLASS)):
        out[resource] = hard
    return out


def set_class_limits(conn: sa.Connection, class_name: str, values: dict[str, int]) -> None:
    for resource, hard in values.items():
        conn.execute(volume_quota_classes.delete().where(
            volume_quota_classes.c.class_name == class_name,
            volume_quota_classes.c.resource == resource))
        conn.execute(volume_quota_classes.insert().values(class_name=class_name,
                                                          resource=resource, hard_limit=hard))


def defaults(settings: Settings, type_names: list[str]) -> dict[str, int]:
    out = {"volumes": settings.quota_volumes, "snapshots": settings.quota_snapshots,
           "gigabytes": settings.quota_gigabytes,
           "per_volume_gigabytes": settings.quota_per_volume_gigabytes,
           "backups": 10, "backup_gigabytes": 1000, "groups": 10}
    for name in type_names:
        out.update({f"{r}_{name}": -1 for r in PER_TYPE})
    return out


def type_names(conn: sa.Connection) -> list[str]:
    return [r[0] for r in conn.execute(sa.select(volume_types.c.name).where(
        volume_types.c.deleted.is_(False)).order_by(volume_types.c.name))]


def limits(conn: sa.Connection, settings: Settings, project_id: str) -> dict[str, int]:
    """Every resource's limit for ``project_id`` (its own, else the default)."""
    out = class_defaults(conn, settings)
    for resource, hard in conn.execute(sa.select(volume_quotas.c.resource, volume_quotas.c.hard_limit)
                                       .where(volume_quotas.c.project_id == project_id)):
        out[resource] = hard
    return out


def usage(conn: sa.Connection, project_id: str) -> dict[str, int]:
    """What the project uses of each resource it has records for."""
    vols = conn.execute(sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(volumes.c.size), 0))
                        .where(volumes.c.project_id == project_id,
                               volumes.c.deleted.is_(False))).one()
    snaps = conn.execute(sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(snapshots.c.size), 0))
                         .where(snapshots.c.project_id == project_id,
                                snapshots.c.deleted.is_(False))).one()
    out = {"volumes": int(vols[0]), "snapshots": int(snaps[0]),
           "gigabytes": int(vols[1]) + int(snaps[1])}
    typed = conn.execute(sa.select(volume_types.c.name, sa.func.count(), sa.func.sum(volumes.c.size))
                         .join(volume_types, volume_types.c.id == volumes.c.volume_type_id)
                         .where(volumes.c.project_id == project_id, volumes.c.deleted.is_(False))
                         .group_by(volume_types.c.name))
    for name, count, size in typed:
        out[f"volumes_{name}"] = int(count)
        out[f"gigabytes_{name}"] = int(size or 0)
    return out


def check_volume(conn: sa.Connection, settings: Settings, project_id: str, size: int,
                 type_name: str | None = None, count: int = 1) -> None:
    """413 (OverQuota) if ``count`` more volumes of ``size`` GiB would pass a limit."""
    lim, used = limits(conn, settings, project_id), usage(conn, project_id)
    per_volume = lim["per_volume_gigabytes"]
    if per_volume >= 0 and size > per_volume:
        raise exc.OverQuota(f"VolumeSizeExceedsLimit: Requested volume size {size}G is larger "
                            f"than maximum allowed limit {per_volume}G.")
    _check_gb(lim, used, "gigabytes", size * count)
    _check_count(lim, used, "volumes", count, exc.VolumeLimitExceeded)
    if type_name:
        _check_gb(lim, used, f"gigabytes_{type_name}", size * count)
        _check_count(lim, used, f"volumes_{type_name}", count, exc.VolumeLimitExceeded)


def check_snapshot(conn: sa.Connection, settings: Settings, project_id: str, size: int) -> None:
    lim, used = limits(conn, settings, project_id), usage(conn, project_id)
    _check_gb(lim, used, "gigabytes", size)
    _check_count(lim, used, "snapshots", 1, exc.SnapshotLimitExceeded)


def check_extend(conn: sa.Connection, settings: Settings, project_id: str, grow: int) -> None:
    _check_gb(limits(conn, settings, project_id), usage(conn, project_id), "gigabytes", grow)


def _check_gb(lim: dict[str, int], used: dict[str, int], name: str, more: int) -> None:
    limit, consumed = lim.get(name, -1), used.get(name, 0)
    if limit >= 0 and consumed + more > limit:
        raise exc.OverQuota(name=name, requested=more, quota=limit, consumed=consumed)


def _check_count(lim: dict[str, int], used: dict[str, int], name: str, more: int,
                 error: type[exc.OverQuota]) -> None:
    limit = lim.get(name, -1)
    if limit >= 0 and used.get(name, 0) + more > limit:
        raise error(allowed=limit, name=name)


def set_limits(conn: sa.Connection, project_id: str, values: dict[str, int]) -> None:
    for resource, hard in values.items():
        conn.execute(volume_quotas.delete().where(volume_quotas.c.project_id == project_id,
                                                  volume_quotas.c.resource == resource))
        conn.execute(volume_quotas.insert().values(project_id=project_id, resource=resource,
                                                   hard_limit=hard))


def clear_limits(conn: sa.Connection, project_id: str) -> None:
    conn.execute(volume_quotas.delete().where(volume_quotas.c.project_id == project_id))
