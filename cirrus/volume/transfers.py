"""Volume transfers (Cinder's ``transfer/api.py``): a project offers one of
its volumes; whoever holds the transfer's id and auth key takes it into
their own project. The volume is ``awaiting-transfer`` meanwhile; the auth
key is shown once, at create, and only its salted SHA-256 is kept."""
from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import NotFound
from cirrus.volume import db, quotas
from cirrus.volume import exception as exc
from cirrus.volume.models import snapshots, transfers, volumes
from cirrus.volume.service import Storage
from cirrus.volume.states import VolumeStatus as V

Row = dict[str, Any]
# (classes below have a ``list`` method, which hides the builtin in their annotations)
Rows = list[Row]


class TransferNotFound(NotFound):
    msg_fmt = "Transfer %(transfer_id)s could not be found."


def _hash(salt: str, key: str) -> str:
    return hashlib.sha256((salt + key).encode()).hexdigest()


class Transfers:
    def __init__(self, storage: Storage) -> None:
        self.s = storage

    async def create(self, ctx: RequestContext, volume_id: str, name: str | None,
                     no_snapshots: bool) -> Row:
        """The transfer, with its ``auth_key`` (never shown again)."""
        key, salt = secrets.token_hex(8), secrets.token_hex(8)

        def insert(conn: sa.Connection) -> Row:
            volume = db.get_volume(conn, ctx, volume_id)
            db.check_volume(volume, "transfer")
            row: Row = {"id": str(uuid.uuid4()), "volume_id": volume_id,
                        "source_project_id": volume["project_id"], "name": name, "salt": salt,
                        "crypt_hash": _hash(salt, key), "no_snapshots": no_snapshots,
                        "accepted": False, "created_at": utcnow(), "deleted": False,
                        "destination_project_id": None}
            conn.execute(transfers.insert().values(**row))
            db.save_volume(conn, volume_id, {"status": V.AWAITING_TRANSFER}, [V.AVAILABLE],
                           "transfer")
            return row
        return {**await self.s.db.run(insert), "auth_key": key}

    @staticmethod
    def _get(conn: sa.Connection, ctx: RequestContext, transfer_id: str,
             any_project: bool = False) -> Row:
        row = fetch_one(conn, sa.select(transfers).where(
            transfers.c.id == transfer_id[:64], transfers.c.deleted.is_(False)))
        if row is None or not (any_project or ctx.is_admin
                               or row["source_project_id"] == ctx.project_id):
            raise TransferNotFound(transfer_id=transfer_id[:64])
        return row

    async def get(self, ctx: RequestContext, transfer_id: str) -> Row:
        return await self.s.db.read(self._get, ctx, transfer_id)

    async def list(self, ctx: RequestContext, all_tenants: bool) -> Rows:
        q = sa.select(transfers).where(transfers.c.deleted.is_(False))
        if not (ctx.is_admin and all_tenants):
            q = q.where(transfers.c.source_project_id == ctx.project_id)
        return await self.s.db.read(fetch_all, q.order_by(transfers.c.created_at))

    async def delete(self, ctx: RequestContext, transfer_id: str) -> None:
        def remove(conn: sa.Connection) -> None:
            row = self._get(conn, ctx, transfer_id)
            conn.execute(transfers.update().where(transfers.c.id == row["id"])
                         .values(deleted=True, updated_at=utcnow()))
            db.save_volume(conn, row["volume_id"], {"status": V.AVAILABLE},
                           [V.AWAITING_TRANSFER], "cancel a transfer")
        await self.s.db.run(remove)

    async def accept(self, ctx: RequestContext, transfer_id: str, auth_key: str) -> Row:
        """Move the volume (and its snapshots, unless ``no_snapshots``) into
        the caller's project; 400 for a wrong key, 413 over the taker's quota."""
        def take(conn: sa.Connection) -> Row:
            assert ctx.project_id is not None
            row = self._get(conn, ctx, transfer_id, any_project=True)
            if not hmac.compare_digest(row["crypt_hash"], _hash(row["salt"], auth_key)):
                raise exc.InvalidInput(reason=f"Attempt to transfer {row['volume_id']} with "
                                              "invalid auth key.")
            volume = fetch_one(conn, sa.select(volumes).where(volumes.c.id == row["volume_id"]))
            assert volume is not None
            quotas.check_volume(conn, self.s.settings, ctx.project_id, volume["size"])
            db.save_volume(conn, volume["id"], {"status": V.AVAILABLE,
                                                "project_id": ctx.project_id,
                                                "user_id": ctx.user_id or ""},
                           [V.AWAITING_TRANSFER], "accept a transfer")
            if not row["no_snapshots"]:
                conn.execute(snapshots.update().where(snapshots.c.volume_id == volume["id"])
                             .values(project_id=ctx.project_id))
            conn.execute(transfers.update().where(transfers.c.id == row["id"]).values(
                accepted=True, deleted=True, destination_project_id=ctx.project_id,
                updated_at=utcnow()))
            return row
        return await self.s.db.run(take)
