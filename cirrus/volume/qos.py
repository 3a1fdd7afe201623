"""QoS specs (Cinder's ``qos_specs``): named sets of limits an admin
associates with volume types. The file backend enforces none of them (a
``front-end`` spec is for the hypervisor to apply; compute does not yet)."""
from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.exception import Conflict, Invalid, NotFound
from cirrus.volume.models import qos_specs, volume_types

Row = dict[str, Any]
# (classes below have a ``list`` method, which hides the builtin in their annotations)
Rows = list[Row]
Names = list[str]


class QoSSpecsNotFound(NotFound):
    msg_fmt = "No such QoS spec %(specs_id)s."


class QoSSpecsExists(Conflict):
    msg_fmt = "QoS Specs %(specs_id)s already exists."


class QoSSpecsInUse(Invalid):
    code = 400
    msg_fmt = "QoS Specs %(specs_id)s is still associated with entities."


class QoSSpecsKeyNotFound(NotFound):
    msg_fmt = "QoS spec %(specs_id)s has no spec with key %(specs_key)s."


def _get(conn: sa.Connection, specs_id: str) -> Row:
    row = fetch_one(conn, sa.select(qos_specs).where(qos_specs.c.id == specs_id[:64],
                                                     qos_specs.c.deleted.is_(False)))
    if row is None:
        raise QoSSpecsNotFound(specs_id=specs_id[:64])
    return row


def _types_of(conn: sa.Connection, specs_id: str) -> Rows:
    return fetch_all(conn, sa.select(volume_types.c.id, volume_types.c.name).where(
        volume_types.c.qos_specs_id == specs_id, volume_types.c.deleted.is_(False)))


class QoSSpecs:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, name: str, consumer: str, specs: dict[str, str]) -> Row:
        def insert(conn: sa.Connection) -> Row:
            if fetch_one(conn, sa.select(qos_specs.c.id).where(
                    qos_specs.c.name == name, qos_specs.c.deleted.is_(False))):
                raise QoSSpecsExists(specs_id=name)
            row = {"id": str(uuid.uuid4()), "name": name, "consumer": consumer,
                   "specs": specs, "created_at": utcnow(), "deleted": False}
            conn.execute(qos_specs.insert().values(**row))
            return row
        return await self.db.run(insert)

    async def list(self) -> Rows:
        return await self.db.read(fetch_all, sa.select(qos_specs).where(
            qos_specs.c.deleted.is_(False)).order_by(qos_specs.c.created_at))

    async def get(self, specs_id: str) -> Row:
        return await self.db.read(_get, specs_id)

    async def delete(self, specs_id: str, force: bool) -> None:
        def remove(conn: sa.Connection) -> None:
            row = _get(conn, specs_id)
            if _types_of(conn, row["id"]) and not force:
                raise QoSSpecsInUse(specs_id=row["id"])
            conn.execute(volume_types.update().where(volume_types.c.qos_specs_id == row["id"])
                         .values(qos_specs_id=None))
            conn.execute(qos_specs.update().where(qos_specs.c.id == row["id"])
                         .values(deleted=True, updated_at=utcnow()))
        await self.db.run(remove)

    async def set_keys(self, specs_id: str, specs: dict[str, str], remove: Names) -> None:
        def change(conn: sa.Connection) -> None:
            row = _get(conn, specs_id)
            new = {**row["specs"], **specs}
            for key in remove:
                if key not in new:
                    raise QoSSpecsKeyNotFound(specs_id=row["id"], specs_key=key[:255])
                del new[key]
            conn.execute(qos_specs.update().where(qos_specs.c.id == row["id"])
                         .values(specs=new, updated_at=utcnow()))
        await self.db.run(change)

    async def associations(self, specs_id: str) -> Rows:
        def read(conn: sa.Connection) -> Rows:
            return [{"association_type": "volume_type", "id": t["id"], "name": t["name"]}
                    for t in _types_of(conn, _get(conn, specs_id)["id"])]
        return await self.db.read(read)

    async def associate(self, specs_id: str, type_id: str | None, on: bool) -> None:
        """Associate (``on``) or disassociate a type; every type when ``type_id`` is None."""
        def change(conn: sa.Connection) -> None:
            row = _get(conn, specs_id)
            q = volume_types.update().where(volume_types.c.deleted.is_(False))
            if type_id is None:
                conn.execute(q.where(volume_types.c.qos_specs_id == row["id"])
                             .values(qos_specs_id=None))
                return
            vtype = fetch_one(conn, sa.select(volume_types).where(
                volume_types.c.id == type_id[:64], volume_types.c.deleted.is_(False)))
            if vtype is None:
                raise NotFound(f"Volume type {type_id[:64]} could not be found.")
            if on and vtype["qos_specs_id"] not in (None, row["id"]):
                raise Invalid(f"Type {vtype['id']} is already associated with another qos specs: "
                              f"{vtype['qos_specs_id']}")
            conn.execute(q.where(volume_types.c.id == vtype["id"])
                         .values(qos_specs_id=row["id"] if on else None))
        await self.db.run(change)
