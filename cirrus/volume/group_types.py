"""Group types (Cinder 3.11) with their group specs: admins write, everyone
reads the public ones. Groups themselves are not implemented; the types are
kept so that clients managing them work."""
from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.exception import Conflict, NotFound
from cirrus.volume.models import group_types

Row = dict[str, Any]
Rows = list[Row]  # (GroupTypes.list hides the builtin in the class)


class GroupTypeNotFound(NotFound):
    msg_fmt = "Group type %(group_type_id)s could not be found."


class GroupTypeExists(Conflict):
    msg_fmt = "Group Type %(id)s already exists."


class GroupTypeSpecsNotFound(NotFound):
    msg_fmt = "Group Type %(group_type_id)s has no specs with key %(key)s."


def _get(conn: sa.Connection, ctx: RequestContext, type_id: str) -> Row:
    row = fetch_one(conn, sa.select(group_types).where(
        group_types.c.deleted.is_(False),
        sa.or_(group_types.c.id == type_id[:64], group_types.c.name == type_id[:255])))
    if row is None or not (row["is_public"] or ctx.is_admin):
        raise GroupTypeNotFound(group_type_id=type_id[:64])
    return row


class GroupTypes:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def list(self, ctx: RequestContext, is_public: bool | None) -> Rows:
        rows = await self.db.read(fetch_all, sa.select(group_types).where(
            group_types.c.deleted.is_(False)).order_by(group_types.c.created_at))
        if not ctx.is_admin:
            is_public = True
        return [r for r in rows if is_public is None or r["is_public"] == is_public]

    async def get(self, ctx: RequestContext, type_id: str) -> Row:
        return await self.db.read(_get, ctx, type_id)

    async def create(self, values: Row) -> Row:
        def insert(conn: sa.Connection) -> Row:
            if fetch_one(conn, sa.select(group_types.c.id).where(
                    group_types.c.deleted.is_(False), group_types.c.name == values["name"])):
                raise GroupTypeExists(id=values["name"])
            row = {"id": str(uuid.uuid4()), "created_at": utcnow(), "deleted": False, **values}
            conn.execute(group_types.insert().values(**row))
            return row
        return await self.db.run(insert)

    async def update(self, ctx: RequestContext, type_id: str, values: Row) -> Row:
        """Change fields (``group_specs`` merged; ``drop_spec`` removes one key)."""
        def change(conn: sa.Connection) -> Row:
            row = _get(conn, ctx, type_id)
            new = dict(values)
            if "group_specs" in new or "drop_spec" in new:
                specs = {**(row["group_specs"] or {}), **new.pop("group_specs", {})}
                drop = new.pop("drop_spec", None)
                if drop is not None and specs.pop(drop, None) is None:
                    raise GroupTypeSpecsNotFound(group_type_id=row["id"], key=drop[:255])
                new["group_specs"] = specs
            conn.execute(group_types.update().where(group_types.c.id == row["id"])
                         .values(updated_at=utcnow(), **new))
            return {**row, **new}
        return await self.db.run(change)

    async def delete(self, ctx: RequestContext, type_id: str) -> None:
        await self.update(ctx, type_id, {"deleted": True})
