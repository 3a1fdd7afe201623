"""Migration records (Nova's ``objects/migration.py``): one per move of an
instance — resize, cold migration, live migration, evacuation.

Every status change is a guarded UPDATE (``expected`` statuses), like an
instance's task state, so two actors never both move the same record.
"""
from __future__ import annotations

import datetime as dt
import enum
import uuid as uuidlib
from dataclasses import dataclass
from typing import Any, Iterable, TypedDict

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import migrations
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import Conflict, NotFound

m = migrations


class MigrationType(str, enum.Enum):
    RESIZE = "resize"
    MIGRATION = "migration"
    LIVE_MIGRATION = "live-migration"
    EVACUATION = "evacuation"


class Status(str, enum.Enum):
    """Nova's migration statuses (cold: pre-migrating … confirmed/reverted;
    live: accepted … completed; evacuation: accepted … done)."""

    PRE_MIGRATING = "pre-migrating"
    MIGRATING = "migrating"
    POST_MIGRATING = "post-migrating"
    FINISHED = "finished"
    CONFIRMING = "confirming"
    CONFIRMED = "confirmed"
    REVERTING = "reverting"
    REVERTED = "reverted"
    ACCEPTED = "accepted"
    QUEUED = "queued"
    PREPARING = "preparing"
    RUNNING = "running"
    COMPLETED = "completed"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    DONE = "done"
    FAILED = "failed"
    ERROR = "error"


# A live migration listed under /servers/{id}/migrations (2.23), and one an
# admin may abort (2.24; before 2.65 only a running one).
LIVE_IN_PROGRESS = (Status.QUEUED, Status.PREPARING, Status.RUNNING, Status.POST_MIGRATING)
ABORTABLE = (Status.QUEUED, Status.PREPARING, Status.RUNNING)
# Statuses of a finished move: nothing holds a claim for it any more.
FINAL = (Status.CONFIRMED, Status.REVERTED, Status.COMPLETED, Status.CANCELLED, Status.DONE,
         Status.FAILED, Status.ERROR)


class Migration(TypedDict):
    """A migrations row."""

    id: int
    uuid: str
    instance_uuid: str
    source_compute: str | None
    dest_compute: str | None
    source_node: str | None
    dest_node: str | None
    dest_host: str | None
    old_instance_type_id: int | None
    new_instance_type_id: int | None
    old_flavor: dict[str, Any] | None
    new_flavor: dict[str, Any] | None
    migration_type: str
    status: str
    user_id: str | None
    project_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime | None
    deleted: bool


class MigrationNotFound(NotFound):
    msg_fmt = "Migration %(migration_id)s could not be found."


class MigrationStatusChanged(Conflict):
    msg_fmt = "Migration %(migration_id)s is %(actual)s, not %(expected)s."


def flavor_id_of(flavor: dict[str, Any] | None) -> int | None:
    """The integer Nova shows as ``*_instance_type_id``: cirrus flavors have
    only their public id, which is that integer when it is one."""
    flavorid = str((flavor or {}).get("flavorid") or (flavor or {}).get("id") or "")
    return int(flavorid) if flavorid.isdigit() and len(flavorid) < 10 else None


def create(conn: sa.Connection, *, instance: dict[str, Any], migration_type: MigrationType,
           status: Status, user_id: str | None, project_id: str | None,
           new_flavor: dict[str, Any] | None = None,
           dest_compute: str | None = None) -> Migration:
    """A new record of ``instance`` leaving its host."""
    old = instance["flavor"]
    new = new_flavor or old
    now = utcnow()
    values = dict(uuid=str(uuidlib.uuid4()), instance_uuid=instance["uuid"],
                  source_compute=instance["host"], source_node=instance["node"],
                  dest_compute=dest_compute, dest_node=None, dest_host=None,
                  old_instance_type_id=flavor_id_of(old), new_instance_type_id=flavor_id_of(new),
                  old_flavor=old, new_flavor=new, migration_type=migration_type.value,
                  status=status.value, user_id=user_id, project_id=project_id, created_at=now,
                  updated_at=None, deleted=False)
    row_id: int = conn.execute(m.insert().values(values).returning(m.c.id)).scalar_one()
    row: Migration = {"id": row_id, **values}  # type: ignore[typeddict-item]
    return row


def get(conn: sa.Connection, uuid: str) -> Migration:
    """The record; MigrationNotFound if there is none."""
    row = fetch_one(conn, sa.select(m).where(m.c.uuid == uuid, m.c.deleted.is_(False)))
    if row is None:
        raise MigrationNotFound(migration_id=uuid)
    return row  # type: ignore[return-value]


def get_by_id(conn: sa.Connection, instance_uuid: str, migration_id: int) -> Migration:
    """Record ``migration_id`` of ``instance_uuid``; MigrationNotFound otherwise."""
    row = fetch_one(conn, sa.select(m).where(m.c.id == migration_id,
                                             m.c.instance_uuid == instance_uuid,
                                             m.c.deleted.is_(False)))
    if row is None:
        raise MigrationNotFound(migration_id=migration_id)
    return row  # type: ignore[return-value]


def _plain(states: Iterable[Status]) -> list[str]:
    return [s.value for s in states]


def save(conn: sa.Connection, uuid: str, values: dict[str, Any],
         expected: Iterable[Status] | None = None) -> None:
    """Apply ``values`` if the record is in one of the ``expected`` statuses;
    MigrationStatusChanged (409) otherwise."""
    values = {k: getattr(v, "value", v) for k, v in values.items()}
    where = [m.c.uuid == uuid]
    wanted = _plain(expected) if expected is not None else None
    if wanted is not None:
        where.append(m.c.status.in_(wanted))
    if conn.execute(m.update().where(*where).values(updated_at=utcnow(), **values)).rowcount != 1:
        actual = get(conn, uuid)["status"]
        raise MigrationStatusChanged(migration_id=uuid, actual=actual, expected=wanted)


def for_instance(conn: sa.Connection, instance_uuid: str, types: Iterable[MigrationType],
                 statuses: Iterable[Status]) -> list[Migration]:
    """The instance's records of ``types`` in ``statuses``, newest first."""
    rows = fetch_all(conn, sa.select(m).where(
        m.c.instance_uuid == instance_uuid, m.c.deleted.is_(False),
        m.c.migration_type.in_([t.value for t in types]),
        m.c.status.in_(_plain(statuses))).order_by(m.c.created_at.desc(), m.c.id.desc()))
    return rows  # type: ignore[return-value]


def awaiting_confirmation(conn: sa.Connection, instance_uuid: str) -> Migration:
    """The finished resize or migration a confirm or revert acts on (Nova's
    ``get_by_instance_and_status(..., 'finished')``); MigrationNotFound if none."""
    rows = for_instance(conn, instance_uuid, (MigrationType.RESIZE, MigrationType.MIGRATION),
                        (Status.FINISHED,))
    if not rows:
        raise MigrationNotFound(migration_id=f"of {instance_uuid} in status finished")
    return rows[0]


def finished_before(conn: sa.Connection, host: str, before: dt.datetime) -> list[Migration]:
    """Resizes of ``host`` (their destination) waiting for a confirm since before
    ``before``: what the auto-confirm gives up waiting for."""
    return fetch_all(conn, sa.select(m).where(  # type: ignore[return-value]
        m.c.dest_compute == host, m.c.status == Status.FINISHED.value, m.c.deleted.is_(False),
        m.c.migration_type.in_([MigrationType.RESIZE.value, MigrationType.MIGRATION.value]),
        sa.func.coalesce(m.c.updated_at, m.c.created_at) <= before))


def evacuated_from(conn: sa.Connection, host: str) -> list[Migration]:
    """Evacuations away from ``host`` whose guests it may still hold."""
    return fetch_all(conn, sa.select(m).where(  # type: ignore[return-value]
        m.c.source_compute == host, m.c.deleted.is_(False),
        m.c.migration_type == MigrationType.EVACUATION.value,
        m.c.status.in_(_plain((Status.ACCEPTED, Status.PRE_MIGRATING, Status.DONE)))))


@dataclass
class MigrationFilters:
    """What ``GET /os-migrations`` narrows the list by."""

    host: str | None = None  # source or destination
    status: str | None = None
    instance_uuid: str | None = None
    migration_type: str | None = None
    source_compute: str | None = None
    user_id: str | None = None
    project_id: str | None = None
    changes_since: dt.datetime | None = None
    changes_before: dt.datetime | None = None
    marker: str | None = None  # a migration uuid (2.59)
    limit: int | None = None


def list_migrations(conn: sa.Connection, f: MigrationFilters) -> list[Migration]:
    """Newest first (created_at, id descending), paged after ``marker``."""
    where: list[Any] = [m.c.deleted.is_(False)]
    for column, value in ((m.c.status, f.status), (m.c.instance_uuid, f.instance_uuid),
                          (m.c.migration_type, f.migration_type),
                          (m.c.source_compute, f.source_compute), (m.c.user_id, f.user_id),
                          (m.c.project_id, f.project_id)):
        if value is not None:
            where.append(column == value)
    if f.host is not None:
        where.append(sa.or_(m.c.source_compute == f.host, m.c.dest_compute == f.host))
    changed = sa.func.coalesce(m.c.updated_at, m.c.created_at)
    if f.changes_since is not None:
        where.append(changed >= f.changes_since)
    if f.changes_before is not None:
        where.append(changed <= f.changes_before)
    if f.marker is not None:
        marker = fetch_one(conn, sa.select(m.c.created_at, m.c.id).where(m.c.uuid == f.marker))
        if marker is None:
            raise exc.InvalidRequest(reason=f"Marker {f.marker} could not be found.")
        where.append(sa.or_(m.c.created_at < marker["created_at"],
                            sa.and_(m.c.created_at == marker["created_at"],
                                    m.c.id < marker["id"])))
    stmt = sa.select(m).where(*where).order_by(m.c.created_at.desc(), m.c.id.desc())
    if f.limit is not None:
        stmt = stmt.limit(f.limit)
    return fetch_all(conn, stmt)  # type: ignore[return-value]
