"""Row access for the volume service: reads scoped to the caller's project,
and guarded saves (``UPDATE … WHERE status IN (:expected)`` + rowcount).

Every state change goes through :func:`save_volume` / :func:`save_snapshot`
with the states the action starts from (:data:`cirrus.volume.states.ACCEPTS`),
so two requests racing on one volume cannot both move it.
"""
from __future__ import annotations

from typing import Any, Iterable, NoReturn

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.volume import exception as exc
from cirrus.volume import states
from cirrus.volume.models import snapshots, volume_attachment, volumes

Row = dict[str, Any]


def _visible(ctx: RequestContext, row: Row | None) -> bool:
    return row is not None and (ctx.is_admin or row["project_id"] == ctx.project_id)


def get_volume(conn: sa.Connection, ctx: RequestContext, volume_id: str) -> Row:
    """The volume, if the caller's project owns it (or an admin asks); 404 otherwise."""
    row = fetch_one(conn, sa.select(volumes).where(volumes.c.id == volume_id[:64],
                                                   volumes.c.deleted.is_(False)))
    if not _visible(ctx, row):
        raise exc.VolumeNotFound(volume_id=volume_id[:64])
    assert row is not None
    return row


def get_snapshot(conn: sa.Connection, ctx: RequestContext, snapshot_id: str) -> Row:
    row = fetch_one(conn, sa.select(snapshots).where(snapshots.c.id == snapshot_id[:64],
                                                     snapshots.c.deleted.is_(False)))
    if not _visible(ctx, row):
        raise exc.SnapshotNotFound(snapshot_id=snapshot_id[:64])
    assert row is not None
    return row


def attachments_of(conn: sa.Connection, volume_ids: Iterable[str]) -> dict[str, list[Row]]:
    """The live attachments of each volume (not detached/deleted)."""
    ids = list(volume_ids)
    out: dict[str, list[Row]] = {i: [] for i in ids}
    if not ids:
        return out
    rows = fetch_all(conn, sa.select(volume_attachment).where(
        volume_attachment.c.volume_id.in_(ids), volume_attachment.c.deleted.is_(False))
        .order_by(volume_attachment.c.created_at))
    for row in rows:
        out[row["volume_id"]].append(row)
    return out


def get_attachment(conn: sa.Connection, ctx: RequestContext, attachment_id: str) -> Row:
    row = fetch_one(conn, sa.select(volume_attachment).where(
        volume_attachment.c.id == attachment_id[:64], volume_attachment.c.deleted.is_(False)))
    if row is None:
        raise exc.AttachmentNotFound(attachment_id=attachment_id[:64])
    try:
        get_volume(conn, ctx, row["volume_id"])
    except exc.VolumeNotFound:
        raise exc.AttachmentNotFound(attachment_id=attachment_id[:64]) from None
    return row


def save_volume(conn: sa.Connection, volume_id: str, values: dict[str, Any],
                expected: Iterable[str | states.VolumeStatus] | None = None,
                action: str = "") -> None:
    """Apply ``values`` if the volume's status is one of ``expected`` (any
    when None); InvalidVolume naming the actual status otherwise."""
    values = {k: (v.value if isinstance(v, states.VolumeStatus) else v) for k, v in values.items()}
    q = volumes.update().where(volumes.c.id == volume_id, volumes.c.deleted.is_(False))
    wanted = None if expected is None else sorted(getattr(s, "value", s) for s in expected)
    if wanted is not None:
        q = q.where(volumes.c.status.in_(wanted))
    if conn.execute(q.values(updated_at=utcnow(), **values)).rowcount != 1:
        _refuse_volume(conn, volume_id, wanted, action)


def _refuse_volume(conn: sa.Connection, volume_id: str, wanted: list[str] | None,
                   action: str) -> NoReturn:
    row = fetch_one(conn, sa.select(volumes.c.status).where(volumes.c.id == volume_id,
                                                            volumes.c.deleted.is_(False)))
    if row is None:
        raise exc.VolumeNotFound(volume_id=volume_id)
    raise exc.InvalidVolume(reason=f"Volume status must be {' or '.join(wanted or [])} "
                                   f"to {action or 'do this'}, but current status is: "
                                   f"{row['status']}.")


def check_volume(row: Row, action: str) -> None:
    """InvalidVolume unless ``row``'s status accepts ``action`` (read before a save)."""
    if not states.accepts(action, row["status"]):
        raise exc.InvalidVolume(reason=f"Volume status must be "
                                       f"{' or '.join(states.values(states.ACCEPTS[action]))}"
                                       f" to {action}, but current status is: {row['status']}.")


def save_snapshot(conn: sa.Connection, snapshot_id: str, values: dict[str, Any],
                  expected: Iterable[str] | None = None) -> None:
    q = snapshots.update().where(snapshots.c.id == snapshot_id, snapshots.c.deleted.is_(False))
    if expected is not None:
        q = q.where(snapshots.c.status.in_([getattr(s, "value", s) for s in expected]))
    if conn.execute(q.values(updated_at=utcnow(), **values)).rowcount != 1:
        row = fetch_one(conn, sa.select(snapshots.c.status).where(snapshots.c.id == snapshot_id))
        if row is None:
            raise exc.SnapshotNotFound(snapshot_id=snapshot_id)
        raise exc.InvalidSnapshot(reason=f"Snapshot status must be one of "
                                         f"{sorted(getattr(s, 'value', s) for s in expected or [])},"
                                         f" but current status is: {row['status']}.")
