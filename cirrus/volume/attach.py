"""Attachments: Cinder's attachments API (3.27/3.44) and the legacy
volume actions Nova used before it (``os-reserve`` … ``os-detach``).

States (volume / attachment):

* ``attachment_create`` — ``available`` (or ``in-use`` for a multiattach
  volume) → ``reserved`` / ``reserved``; with a connector it goes on to
  ``attachment_update``;
* ``attachment_update`` — → ``attaching`` / ``attaching``, returns the
  connection info the host plugs;
* ``attachment_complete`` — → ``in-use`` / ``attached``;
* ``attachment_delete`` — the attachment goes; the volume is ``available``
  once none is left (``in-use`` while others remain).

Each step is one transaction with a guarded save, so an attach racing a
delete or a second attach of a single-attach volume gets a 400 and changes
nothing.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.volume import db
from cirrus.volume import exception as exc
from cirrus.volume.cinder import ConnectionInfo, Connector
from cirrus.volume.models import volume_attachment, volumes
from cirrus.volume.service import Storage
from cirrus.volume.states import AttachStatus as A
from cirrus.volume.states import VolumeStatus as V

Row = dict[str, Any]
# A volume in these states may get a second attachment for its own instance.
MOVABLE = frozenset({V.IN_USE.value, V.RESERVED.value, V.ATTACHING.value})
# (classes below have a ``list`` method, which hides the builtin in their annotations)
Rows = list[Row]


def _reserve_action(volume: Row) -> str:
    return "reserve_multiattach" if volume["multiattach"] else "reserve"


def settle(conn: sa.Connection, volume_id: str) -> None:
    """The volume's status from what is left attached (after a detach)."""
    left = db.attachments_of(conn, [volume_id])[volume_id]
    attached = [a for a in left if a["attach_status"] == A.ATTACHED.value]
    if attached:
        values = {"status": V.IN_USE, "attach_status": A.ATTACHED.value}
    elif left:
        values = {"status": V.RESERVED, "attach_status": A.RESERVED.value}
    else:
        values = {"status": V.AVAILABLE, "attach_status": A.DETACHED.value}
    db.save_volume(conn, volume_id, values)


class Attachments:
    def __init__(self, storage: Storage) -> None:
        self.s = storage

    # -- the attachments API ---------------------------------------------------
    async def create(self, ctx: RequestContext, volume_id: str, instance_uuid: str | None,
                     connector: Connector | None, mode: str = "rw") -> Row:
        def insert(conn: sa.Connection) -> Row:
            volume = db.get_volume(conn, ctx, volume_id)
            live = db.attachments_of(conn, [volume_id])[volume_id]
            # Cinder's override for a move: a second attachment of a volume to
            # the instance it is attached to (the destination host's).
            moving = (bool(live) and instance_uuid is not None
                      and volume["status"] in MOVABLE
                      and all(a["instance_uuid"] == instance_uuid for a in live))
            if not moving:
                db.check_volume(volume, _reserve_action(volume))
            if not volume["multiattach"] and live and not moving:
                raise exc.InvalidVolume(reason="Volume is already attached and is not multiattach.")
            row: Row = {"id": str(uuid.uuid4()), "volume_id": volume_id,
                        "instance_uuid": instance_uuid, "attach_status": A.RESERVED.value,
                        "attach_mode": mode, "created_at": utcnow(), "deleted": False}
            conn.execute(volume_attachment.insert().values(**row))
            if volume["status"] != V.IN_USE.value and not moving:
                db.save_volume(conn, volume_id, {"status": V.RESERVED,
                                                 "attach_status": A.RESERVED.value},
                               [volume["status"]], "reserve")
            return row
        row = await self.s.db.run(insert)
        if connector:
            return await self.update(ctx, row["id"], connector)
        return await self.get(ctx, row["id"])

    async def get(self, ctx: RequestContext, attachment_id: str) -> Row:
        return await self.s.db.read(db.get_attachment, ctx, attachment_id)

    async def list(self, ctx: RequestContext, all_tenants: bool,
                   filters: dict[str, str]) -> Rows:
        def select(conn: sa.Connection) -> Rows:
            q = sa.select(volume_attachment, volumes.c.project_id).join(
                volumes, volumes.c.id == volume_attachment.c.volume_id).where(
                volume_attachment.c.deleted.is_(False), volumes.c.deleted.is_(False))
            if not (ctx.is_admin and all_tenants):
                q = q.where(volumes.c.project_id == ctx.project_id)
            for key in ("volume_id", "instance_uuid", "attach_status"):
                if key in filters:
                    q = q.where(volume_attachment.c[key] == filters[key])
            if "instance_id" in filters:
                q = q.where(volume_attachment.c.instance_uuid == filters["instance_id"])
            return fetch_all(conn, q.order_by(volume_attachment.c.created_at))
        return await self.s.db.read(select)

    async def update(self, ctx: RequestContext, attachment_id: str, connector: Connector,
                     mountpoint: str | None = None) -> Row:
        """Export the volume to ``connector``'s host: the attachment's connection info."""
        att = await self.get(ctx, attachment_id)
        volume = await self.s.db.read(db.get_volume, ctx, att["volume_id"])
        # The export is made before the transaction (a backend may start a
        # daemon): one the save below refuses is the export supervisor's orphan.
        info = await self.connection_info(volume, connector, att["attach_mode"])

        def change(conn: sa.Connection) -> None:
            att = db.get_attachment(conn, ctx, attachment_id)
            volume = db.get_volume(conn, ctx, att["volume_id"])
            conn.execute(volume_attachment.update().where(volume_attachment.c.id == att["id"])
                         .values(connector=dict(connector), connection_info=dict(info),
                                 attached_host=connector.get("host"), mountpoint=mountpoint,
                                 attach_status=A.ATTACHING.value, updated_at=utcnow()))
            if volume["status"] != V.IN_USE.value:
                db.save_volume(conn, volume["id"], {"status": V.ATTACHING,
                                                    "attach_status": A.ATTACHING.value},
                               [V.RESERVED, V.ATTACHING], "update an attachment")
        await self.s.db.run(change)
        return await self.get(ctx, attachment_id)

    async def connection_info(self, volume: Row, connector: Connector,
                              mode: str) -> ConnectionInfo:
        info = await asyncio.to_thread(self.s.driver.initialize_connection, volume["id"],
                                       connector, mode)
        info["data"].setdefault("access_mode", mode)
        # As Cinder's drivers give it: the host names the disk after it (the
        # guest's serial, /dev/disk/by-id).
        info["data"].setdefault("volume_id", volume["id"])
        return info

    async def release(self, volume_id: str, connector: Connector | None) -> None:
        """The backend's export of the volume undone once no attachment left
        is exported (a resize's new attachment is not until the new host
        updates it)."""
        left = await self.s.db.read(db.attachments_of, [volume_id])
        if not any(a["connection_info"] for a in left[volume_id]):
            await asyncio.to_thread(self.s.driver.terminate_connection, volume_id, connector)

    async def complete(self, ctx: RequestContext, attachment_id: str) -> None:
        def change(conn: sa.Connection) -> None:
            # No connector needed (as Cinder): Nova completes the attachment
            # of a shelved-offloaded server's volume, plugged at unshelve.
            att = db.get_attachment(conn, ctx, attachment_id)
            conn.execute(volume_attachment.update().where(volume_attachment.c.id == att["id"])
                         .values(attach_status=A.ATTACHED.value, attach_time=utcnow(),
                                 updated_at=utcnow()))
            db.save_volume(conn, att["volume_id"], {"status": V.IN_USE,
                                                    "attach_status": A.ATTACHED.value},
                           [V.ATTACHING, V.IN_USE, V.RESERVED], "complete an attachment")
        await self.s.db.run(change)

    async def delete(self, ctx: RequestContext, attachment_id: str) -> None:
        def remove(conn: sa.Connection) -> Row:
            att = db.get_attachment(conn, ctx, attachment_id)
            detach(conn, att["id"])
            settle(conn, att["volume_id"])
            return att
        att = await self.s.db.run(remove)
        await self.release(att["volume_id"], att.get("connector"))

    # -- the legacy actions ----------------------------------------------------
    async def reserve(self, ctx: RequestContext, volume_id: str) -> None:
        def change(conn: sa.Connection) -> None:
            volume = db.get_volume(conn, ctx, volume_id)
            db.check_volume(volume, _reserve_action(volume))
            db.save_volume(conn, volume_id, {"status": V.ATTACHING}, [volume["status"]],
                           "reserve")
        await self.s.db.run(change)

    async def move(self, ctx: RequestContext, volume_id: str, action: str,
                   to: V) -> None:
        """``os-unreserve``, ``os-begin_detaching``, ``os-roll_detaching``:
        one guarded move (unreserve goes back to what the attachments say)."""
        def change(conn: sa.Connection) -> None:
            volume = db.get_volume(conn, ctx, volume_id)
            if action == "unreserve" and volume["status"] == V.ATTACHING.value:
                settle(conn, volume_id)
                return
            db.check_volume(volume, action)
            db.save_volume(conn, volume_id, {"status": to}, [volume["status"]], action)
        await self.s.db.run(change)

    async def attach(self, ctx: RequestContext, volume_id: str, instance_uuid: str | None,
                     host_name: str | None, mountpoint: str, mode: str) -> None:
        """``os-attach``: record the attachment made outside this API."""
        def change(conn: sa.Connection) -> None:
            volume = db.get_volume(conn, ctx, volume_id)
            db.check_volume(volume, "attach")
            if volume["status"] == V.IN_USE.value and not volume["multiattach"]:
                raise exc.InvalidVolume(reason="Volume is already attached and is not multiattach.")
            now = utcnow()
            conn.execute(volume_attachment.insert().values(
                id=str(uuid.uuid4()), volume_id=volume_id, instance_uuid=instance_uuid,
                attached_host=host_name, mountpoint=mountpoint, attach_mode=mode,
                attach_status=A.ATTACHED.value, attach_time=now, created_at=now, deleted=False))
            db.save_volume(conn, volume_id, {"status": V.IN_USE, "attach_status": "attached"},
                           [volume["status"]], "attach")
        await self.s.db.run(change)

    async def detach(self, ctx: RequestContext, volume_id: str,
                     attachment_id: str | None, force: bool = False) -> None:
        """``os-detach``: end one attachment (or every one when none is named);
        ``os-force_detach`` (admin, ``force``) whatever the volume's state."""
        def change(conn: sa.Connection) -> None:
            volume = db.get_volume(conn, ctx, volume_id)
            if not force:
                db.check_volume(volume, "detach")
            live = db.attachments_of(conn, [volume_id])[volume_id]
            chosen = [a for a in live if attachment_id in (None, a["id"])]
            if attachment_id is not None and not chosen:
                raise exc.AttachmentNotFound(attachment_id=attachment_id[:64])
            for att in chosen:
                detach(conn, att["id"])
            settle(conn, volume_id)
        await self.s.db.run(change)
        await self.release(volume_id, None)

    async def initialize_connection(self, ctx: RequestContext, volume_id: str,
                                    connector: Connector) -> ConnectionInfo:
        volume = await self.s.db.read(db.get_volume, ctx, volume_id)
        if volume["status"] not in (V.ATTACHING.value, V.IN_USE.value, V.AVAILABLE.value,
                                    V.RESERVED.value, V.DETACHING.value):
            raise exc.InvalidVolume(reason=f"Volume status must be available, attaching or "
                                           f"in-use, but current status is: {volume['status']}.")
        mode = "ro" if (volume["admin_metadata"] or {}).get("readonly") == "True" else "rw"
        return await self.connection_info(volume, connector, mode)

    async def terminate_connection(self, ctx: RequestContext, volume_id: str,
                                   connector: Connector) -> None:
        await self.s.db.read(db.get_volume, ctx, volume_id)
        await self.release(volume_id, connector)


def detach(conn: sa.Connection, attachment_id: str) -> None:
    """Mark one attachment gone (the caller settles the volume's status)."""
    conn.execute(volume_attachment.update().where(volume_attachment.c.id == attachment_id)
                 .values(deleted=True, attach_status=A.DETACHED.value, detach_time=utcnow(),
                         updated_at=utcnow()))
