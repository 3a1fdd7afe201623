"""Volume types, their extra specs and project access (Cinder's
``volume_types``). ``__DEFAULT__`` (made by migration 0025) is the type of a
volume created without one, as in Cinder since Train.

A private type (``is_public: false``) is seen by admins and by the projects
given access; everyone sees the public ones.
"""
from __future__ import annotations

import uuid
from typing import Any, Iterable

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.volume import exception as exc
from cirrus.volume.models import volume_type_projects, volume_types, volumes

Row = dict[str, Any]
# (classes below have a ``list`` method, which hides the builtin in their annotations)
Rows = list[Row]
Names = list[str]
DEFAULT_TYPE = "__DEFAULT__"


def _live() -> sa.ColumnElement[bool]:
    return volume_types.c.deleted.is_(False)


def _may_see(conn: sa.Connection, ctx: RequestContext, row: Row) -> bool:
    if row["is_public"] or ctx.is_admin:
        return True
    return fetch_one(conn, sa.select(volume_type_projects).where(
        volume_type_projects.c.volume_type_id == row["id"],
        volume_type_projects.c.project_id == ctx.project_id)) is not None


def get(conn: sa.Connection, ctx: RequestContext, type_id: str) -> Row:
    """The type by id (or, as Cinder allows, by name); 404 if unseen."""
    key = type_id[:255]
    row = fetch_one(conn, sa.select(volume_types).where(_live(), volume_types.c.id == key)) \
        or fetch_one(conn, sa.select(volume_types).where(_live(), volume_types.c.name == key))
    if row is None or not _may_see(conn, ctx, row):
        raise exc.VolumeTypeNotFound(volume_type_id=key)
    return row


def resolve(conn: sa.Connection, ctx: RequestContext, wanted: str | None,
            source: Row | None) -> Row:
    """The type a new volume gets: ``wanted`` (name or id; 404 if unknown),
    else its source's, else ``__DEFAULT__``."""
    if wanted is not None:
        return get(conn, ctx, wanted)
    if source is not None and source.get("volume_type_id"):
        row = fetch_one(conn, sa.select(volume_types).where(
            volume_types.c.id == source["volume_type_id"]))
        if row is not None:
            return row
    return get(conn, ctx.elevated(), DEFAULT_TYPE)


def is_multiattach(vtype: Row) -> bool:
    """Cinder's ``multiattach="<is> True"`` extra spec: its volumes are multiattach."""
    return str((vtype.get("extra_specs") or {}).get("multiattach", "")).lower() == "<is> true"


def by_id(conn: sa.Connection, ids: Iterable[str]) -> dict[str, Row]:
    wanted = list(ids)
    if not wanted:
        return {}
    return {r["id"]: r for r in fetch_all(conn, sa.select(volume_types).where(
        volume_types.c.id.in_(wanted)))}


class VolumeTypes:
    """Volume type administration (admins write; everyone reads what they see)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def list(self, ctx: RequestContext, is_public: bool | None) -> Rows:
        def select(conn: sa.Connection) -> Rows:
            rows = fetch_all(conn, sa.select(volume_types).where(_live())
                             .order_by(volume_types.c.created_at))
            if is_public is not None and ctx.is_admin:
                rows = [r for r in rows if r["is_public"] == is_public]
            return [r for r in rows if _may_see(conn, ctx, r)]
        return await self.db.read(select)

    async def get(self, ctx: RequestContext, type_id: str) -> Row:
        return await self.db.read(get, ctx, type_id)

    async def default(self, ctx: RequestContext) -> Row:
        return await self.db.read(get, ctx.elevated(), DEFAULT_TYPE)

    async def create(self, ctx: RequestContext, name: str, description: str | None,
                     is_public: bool, extra_specs: dict[str, str]) -> Row:
        def insert(conn: sa.Connection) -> Row:
            if fetch_one(conn, sa.select(volume_types.c.id).where(
                    _live(), volume_types.c.name == name)) is not None:
                raise exc.VolumeTypeExists(name=name)
            row = {"id": str(uuid.uuid4()), "name": name, "description": description,
                   "is_public": is_public, "extra_specs": extra_specs, "created_at": utcnow(),
                   "deleted": False}
            conn.execute(volume_types.insert().values(**row))
            return row
        return await self.db.run(insert)

    async def update(self, ctx: RequestContext, type_id: str, values: Row) -> Row:
        def change(conn: sa.Connection) -> Row:
            row = get(conn, ctx, type_id)
            name = values.get("name")
            if name is not None and name != row["name"] and fetch_one(
                    conn, sa.select(volume_types.c.id).where(_live(),
                                                            volume_types.c.name == name)):
                raise exc.VolumeTypeExists(name=name)
            if row["name"] == DEFAULT_TYPE and name not in (None, DEFAULT_TYPE):
                raise exc.InvalidVolumeType(reason="The default volume type cannot be renamed.")
            conn.execute(volume_types.update().where(volume_types.c.id == row["id"])
                         .values(updated_at=utcnow(), **values))
            return {**row, **values}
        return await self.db.run(change)

    async def delete(self, ctx: RequestContext, type_id: str) -> None:
        def remove(conn: sa.Connection) -> None:
            row = get(conn, ctx, type_id)
            if row["name"] == DEFAULT_TYPE:
                raise exc.InvalidVolumeType(reason="Default volume type can not be deleted.")
            if fetch_one(conn, sa.select(volumes.c.id).where(
                    volumes.c.volume_type_id == row["id"], volumes.c.deleted.is_(False))):
                raise exc.VolumeTypeInUse(volume_type_id=row["id"])
            conn.execute(volume_types.update().where(volume_types.c.id == row["id"])
                         .values(deleted=True, updated_at=utcnow()))
        await self.db.run(remove)

    async def set_specs(self, ctx: RequestContext, type_id: str, specs: dict[str, str]
                        ) -> dict[str, str]:
        def change(conn: sa.Connection) -> dict[str, str]:
            row = get(conn, ctx, type_id)
            merged = {**(row["extra_specs"] or {}), **specs}
            conn.execute(volume_types.update().where(volume_types.c.id == row["id"])
                         .values(extra_specs=merged, updated_at=utcnow()))
            return merged
        return await self.db.run(change)

    async def delete_spec(self, ctx: RequestContext, type_id: str, key: str) -> None:
        def change(conn: sa.Connection) -> None:
            row = get(conn, ctx, type_id)
            specs = dict(row["extra_specs"] or {})
            if key not in specs:
                raise exc.VolumeTypeExtraSpecsNotFound(volume_type_id=row["id"],
                                                       extra_specs_key=key[:255])
            del specs[key]
            conn.execute(volume_types.update().where(volume_types.c.id == row["id"])
                         .values(extra_specs=specs, updated_at=utcnow()))
        await self.db.run(change)

    async def access(self, ctx: RequestContext, type_id: str) -> Names:
        def select(conn: sa.Connection) -> Names:
            row = get(conn, ctx, type_id)
            if row["is_public"]:
                raise exc.VolumeTypeAccessNotFound(volume_type_id=row["id"], project_id="")
            return [r[0] for r in conn.execute(sa.select(volume_type_projects.c.project_id)
                                               .where(volume_type_projects.c.volume_type_id
                                                      == row["id"]))]
        return await self.db.read(select)

    async def set_access(self, ctx: RequestContext, type_id: str, project_id: str,
                         grant: bool) -> None:
        def change(conn: sa.Connection) -> None:
            row = get(conn, ctx, type_id)
            if row["is_public"]:
                raise exc.InvalidVolumeType(reason="Type access modification is not "
                                                   "applicable to public volume type.")
            where = (volume_type_projects.c.volume_type_id == row["id"],
                     volume_type_projects.c.project_id == project_id)
            exists = fetch_one(conn, sa.select(volume_type_projects).where(*where)) is not None
            if grant and exists:
                raise exc.VolumeTypeAccessExists(volume_type_id=row["id"], project_id=project_id)
            if not grant and not exists:
                raise exc.VolumeTypeAccessNotFound(volume_type_id=row["id"],
                                                   project_id=project_id)
            if grant:
                conn.execute(volume_type_projects.insert().values(
                    volume_type_id=row["id"], project_id=project_id))
            else:
                conn.execute(volume_type_projects.delete().where(*where))
        await self.db.run(change)
