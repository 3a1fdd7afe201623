"""Block device mapping records of volumes (Nova's ``BlockDeviceMapping``
object's queries): find one by volume, save what attach and detach learn,
remove one. Each function runs in the caller's transaction."""
from __future__ import annotations

import uuid as uuidlib
from typing import Any

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import block_device_mappings as b
from cirrus.db.base import utcnow
from cirrus.db.rows import PreparedRead

Bdm = dict[str, Any]  # a block_device_mappings row


# Read by every delete on its host: compiled once (round ten).
_VOLUME_BDMS = PreparedRead(sa.select(b).where(b.c.instance_uuid == sa.bindparam("w_uuid"),
                                               b.c.destination_type == "volume").order_by(b.c.id))


def volume_bdms(conn: sa.Connection, instance_uuid: str) -> list[Bdm]:
    """The instance's mappings of volumes (destination ``volume``), in order."""
    return _VOLUME_BDMS.all(conn, w_uuid=instance_uuid)


def by_volume(conn: sa.Connection, instance_uuid: str, volume_id: str) -> Bdm:
    """The mapping of ``volume_id`` on the instance; VolumeBDMNotFound if none."""
    row = conn.execute(sa.select(b).where(b.c.instance_uuid == instance_uuid,
                                          b.c.volume_id == volume_id)).mappings().first()
    if row is None:
        raise exc.VolumeBDMNotFound(instance=instance_uuid, volume_id=volume_id)
    return dict(row)


def for_volume(conn: sa.Connection, volume_id: str) -> list[Bdm]:
    """Every mapping of ``volume_id``, whatever the instance (one per
    attachment of a multiattach volume)."""
    return [dict(r) for r in conn.execute(sa.select(b).where(b.c.volume_id == volume_id)
                                          .order_by(b.c.id)).mappings()]


def device_names(conn: sa.Connection, instance_uuid: str) -> list[str]:
    """The device names the instance's mappings hold."""
    return [r for r in conn.execute(sa.select(b.c.device_name).where(
        b.c.instance_uuid == instance_uuid, b.c.device_name.is_not(None))).scalars()]


def create(conn: sa.Connection, instance_uuid: str, values: Bdm) -> Bdm:
    """A new mapping of the instance (a volume being attached); the row."""
    row = {"uuid": str(uuidlib.uuid4()), "instance_uuid": instance_uuid,
           "created_at": utcnow(), **values}
    row["id"] = conn.execute(b.insert().values(row).returning(b.c.id)).scalar_one()
    return row


def update(conn: sa.Connection, bdm_id: int, values: Bdm) -> None:
    conn.execute(b.update().where(b.c.id == bdm_id).values(updated_at=utcnow(), **values))


def destroy(conn: sa.Connection, bdm_id: int) -> None:
    conn.execute(b.delete().where(b.c.id == bdm_id))
