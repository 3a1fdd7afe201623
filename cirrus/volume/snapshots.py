"""Snapshots (Cinder's ``create_snapshot`` / ``delete_snapshot``): a
snapshot of an ``available`` volume, or of an ``in-use`` one with ``force``
(from 3.66 without it)."""
from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.volume import db, quotas
from cirrus.volume import exception as exc
from cirrus.volume.exception import BackendError
from cirrus.volume.models import snapshots
from cirrus.volume.service import Storage
from cirrus.volume.states import SNAPSHOT_ACCEPTS
from cirrus.volume.states import SnapshotStatus as S

Row = dict[str, Any]
# (classes below have a ``list`` method, which hides the builtin in their annotations)
Rows = list[Row]


class Snapshots:
    def __init__(self, storage: Storage) -> None:
        self.s = storage

    async def create(self, ctx: RequestContext, volume_id: str, name: str | None,
                     description: str | None, force: bool,
                     metadata: dict[str, str] | None = None) -> Row:
        """The new snapshot, ``available`` or ``error``."""
        row = await self.s.db.run(self._record, ctx, volume_id, name, description, force,
                                  metadata or {})
        try:
            await self.s.driver.create_snapshot(row["id"], volume_id)
        except BackendError:
            await self.s.db.run(db.save_snapshot, row["id"], {"status": S.ERROR.value},
                                [S.CREATING])
        else:
            await self.s.db.run(db.save_snapshot, row["id"],
                                {"status": S.AVAILABLE.value, "progress": "100%"}, [S.CREATING])
        return await self.get(ctx, row["id"])

    def _record(self, conn: sa.Connection, ctx: RequestContext, volume_id: str,
                name: str | None, description: str | None, force: bool,
                metadata: dict[str, str]) -> Row:
        volume = db.get_volume(conn, ctx, volume_id)
        db.check_volume(volume, "snapshot_force" if force else "snapshot")
        quotas.check_snapshot(conn, self.s.settings, volume["project_id"], volume["size"])
        row: Row = {"id": str(uuid.uuid4()), "volume_id": volume_id,
                    "project_id": volume["project_id"], "user_id": ctx.user_id or "",
                    "name": name, "description": description, "size": volume["size"],
                    "status": S.CREATING.value, "progress": "0%", "metadata": metadata,
                    "created_at": utcnow(), "deleted": False}
        conn.execute(snapshots.insert().values(**row))
        return row

    async def get(self, ctx: RequestContext, snapshot_id: str) -> Row:
        return await self.s.db.read(db.get_snapshot, ctx, snapshot_id)

    async def list(self, ctx: RequestContext, filters: dict[str, str],
                   all_tenants: bool) -> Rows:
        def select(conn: sa.Connection) -> Rows:
            q = sa.select(snapshots).where(snapshots.c.deleted.is_(False))
            if not (ctx.is_admin and all_tenants):
                q = q.where(snapshots.c.project_id == ctx.project_id)
            for key in ("status", "name", "volume_id", "project_id"):
                if key in filters:
                    q = q.where(snapshots.c[key] == filters[key])
            return fetch_all(conn, q)
        return await self.s.db.read(select)

    async def update(self, ctx: RequestContext, snapshot_id: str, values: Row) -> Row:
        def change(conn: sa.Connection) -> None:
            row = db.get_snapshot(conn, ctx, snapshot_id)
            db.save_snapshot(conn, snapshot_id, values, [s.value for s in SNAPSHOT_ACCEPTS["update"]]
                             if row else None)
        await self.s.db.run(change)
        return await self.get(ctx, snapshot_id)

    async def set_metadata(self, ctx: RequestContext, snapshot_id: str, meta: dict[str, str],
                           replace: bool) -> dict[str, str]:
        def change(conn: sa.Connection) -> dict[str, str]:
            row = db.get_snapshot(conn, ctx, snapshot_id)
            new = dict(meta) if replace else {**(row["metadata"] or {}), **meta}
            db.save_snapshot(conn, snapshot_id, {"metadata": new})
            return new
        return await self.s.db.run(change)

    async def delete_metadata(self, ctx: RequestContext, snapshot_id: str, key: str) -> None:
        def change(conn: sa.Connection) -> None:
            meta = dict(db.get_snapshot(conn, ctx, snapshot_id)["metadata"] or {})
            if meta.pop(key, None) is None:
                raise exc.MetadataNotFound()
            db.save_snapshot(conn, snapshot_id, {"metadata": meta})
        await self.s.db.run(change)

    async def reset_status(self, ctx: RequestContext, snapshot_id: str, status: str) -> None:
        def change(conn: sa.Connection) -> None:
            db.get_snapshot(conn, ctx, snapshot_id)
            db.save_snapshot(conn, snapshot_id, {"status": status})
        await self.s.db.run(change)

    async def update_status(self, ctx: RequestContext, snapshot_id: str, status: str,
                            progress: str | None = None) -> None:
        """``os-update_snapshot_status`` (Nova's assisted snapshots): only out of
        ``creating``/``deleting``, to where that operation ends or to itself
        (the host's progress report: ``creating`` 90 % once its overlay is in
        place, as Cinder allows)."""
        ends = {S.AVAILABLE.value: [S.CREATING], S.ERROR.value: [S.CREATING],
                S.CREATING.value: [S.CREATING], S.DELETING.value: [S.DELETING],
                S.ERROR_DELETING.value: [S.DELETING]}
        if status not in ends:
            raise exc.InvalidSnapshot(reason=f"Snapshot status {status} is not an end of "
                                             "creating or deleting.")

        def change(conn: sa.Connection) -> None:
            db.get_snapshot(conn, ctx, snapshot_id)
            values = {"status": status, **({"progress": progress} if progress else {})}
            db.save_snapshot(conn, snapshot_id, values, [s.value for s in ends[status]])
        await self.s.db.run(change)

    async def delete(self, ctx: RequestContext, snapshot_id: str, force: bool = False) -> None:
        """``deleting``, the backend, then the record (``error_deleting`` on failure)."""
        def begin(conn: sa.Connection) -> None:
            row = db.get_snapshot(conn, ctx, snapshot_id)
            allowed = None if force else [s.value for s in SNAPSHOT_ACCEPTS["delete"]]
            db.save_snapshot(conn, snapshot_id, {"status": S.DELETING.value},
                             allowed if row else None)
        await self.s.db.run(begin)
        try:
            await self.s.driver.delete_snapshot(snapshot_id)
        except BackendError:
            await self.s.db.run(db.save_snapshot, snapshot_id,
                                {"status": S.ERROR_DELETING.value}, [S.DELETING])
            raise
        await self.s.db.run(db.save_snapshot, snapshot_id,
                            {"status": "deleted", "deleted": True}, [S.DELETING])
