"""Encryption specs of a volume type (Cinder's ``volume_type_encryption``
extension, ``/types/{id}/encryption``): admins write them while no volume
of the type exists; a volume of an encrypted type shows ``encrypted``.

The specs are recorded only: no backend encrypts and no compute driver
plugs an encrypted volume yet (the compute API refuses the attach, 400).
"""
from __future__ import annotations

import uuid
from typing import Any, Iterable, TypedDict

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.volume import exception as exc
from cirrus.volume import types
from cirrus.volume.models import volume_type_encryption as enc
from cirrus.volume.models import volumes

Row = dict[str, Any]


class EncryptionSpecs(TypedDict, total=False):
    """A checked request body (the schema has run)."""

    provider: str
    cipher: str | None
    key_size: int | None
    control_location: str


def encrypted_types(conn: sa.Connection, type_ids: Iterable[str]) -> set[str]:
    """Which of ``type_ids`` have encryption specs."""
    wanted = [t for t in type_ids if t]
    if not wanted:
        return set()
    return {r["volume_type_id"] for r in fetch_all(
        conn, sa.select(enc.c.volume_type_id).where(enc.c.volume_type_id.in_(wanted)))}


def _of(conn: sa.Connection, type_id: str) -> Row | None:
    return fetch_one(conn, sa.select(enc).where(enc.c.volume_type_id == type_id))


def _check_unused(conn: sa.Connection, type_id: str, action: str) -> None:
    if fetch_one(conn, sa.select(volumes.c.id).where(
            volumes.c.volume_type_id == type_id, volumes.c.deleted.is_(False))):
        raise exc.VolumeTypeEncryptionInUse(action=action)


class TypeEncryption:
    """Create, read, change and delete a type's encryption specs."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, ctx: RequestContext, type_id: str) -> Row | None:
        """The type's specs, None when it has none (404 for an unknown type)."""
        def select(conn: sa.Connection) -> Row | None:
            return _of(conn, types.get(conn, ctx, type_id)["id"])
        return await self.db.read(select)

    async def create(self, ctx: RequestContext, type_id: str, specs: EncryptionSpecs) -> Row:
        def insert(conn: sa.Connection) -> Row:
            vtype = types.get(conn, ctx, type_id)
            _check_unused(conn, vtype["id"], "create")
            if _of(conn, vtype["id"]) is not None:
                raise exc.VolumeTypeEncryptionExists(type_id=vtype["id"])
            row: Row = {"cipher": None, "key_size": None, **specs,
                        "volume_type_id": vtype["id"], "encryption_id": str(uuid.uuid4()),
                        "created_at": utcnow()}
            conn.execute(enc.insert().values(**row))
            return row
        return await self.db.run(insert)

    async def update(self, ctx: RequestContext, type_id: str, specs: EncryptionSpecs) -> None:
        def change(conn: sa.Connection) -> None:
            vtype = types.get(conn, ctx, type_id)
            _check_unused(conn, vtype["id"], "update")
            if _of(conn, vtype["id"]) is None:
                raise exc.VolumeTypeEncryptionNotFound(type_id=vtype["id"])
            if specs:
                conn.execute(enc.update().where(enc.c.volume_type_id == vtype["id"])
                             .values(updated_at=utcnow(), **specs))
        await self.db.run(change)

    async def delete(self, ctx: RequestContext, type_id: str) -> None:
        def remove(conn: sa.Connection) -> None:
            vtype = types.get(conn, ctx, type_id)
            _check_unused(conn, vtype["id"], "delete")
            if conn.execute(enc.delete().where(enc.c.volume_type_id == vtype["id"])
                            ).rowcount == 0:
                raise exc.VolumeTypeEncryptionNotFound(type_id=vtype["id"])
        await self.db.run(remove)
