"""Flavor records: queries and the default set seeded on bootstrap."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import flavors
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.db.rows import PreparedRead

# (flavorid, name, vcpus, memory_mb, root_gb) as in OpenStack's classic set.
DEFAULT_FLAVORS = (
    ("1", "m1.tiny", 1, 512, 1),
    ("2", "m1.small", 1, 2048, 20),
    ("3", "m1.medium", 2, 4096, 40),
    ("4", "m1.large", 4, 8192, 80),
    ("5", "m1.xlarge", 8, 16384, 160),
)


def seed_default_flavors(conn: sa.Connection) -> None:
    """Insert the default flavors the first time only."""
    if conn.execute(sa.select(sa.func.count()).select_from(flavors)).scalar_one():
        return
    now = utcnow()
    conn.execute(flavors.insert(), [
        {"flavorid": fid, "name": name, "vcpus": vcpus, "memory_mb": ram, "root_gb": disk,
         "ephemeral_gb": 0, "swap": 0, "rxtx_factor": 1.0, "is_public": True,
         "disabled": False, "extra_specs": {}, "created_at": now}
        for fid, name, vcpus, ram, disk in DEFAULT_FLAVORS])


# Every create reads its flavor: built once.
_FLAVOR = PreparedRead(sa.select(flavors).where(flavors.c.flavorid == sa.bindparam("flavorid")))


def get_flavor(conn: sa.Connection, flavorid: str) -> dict[str, Any] | None:
    """The flavor ``flavorid``, or None."""
    return _FLAVOR.first(conn, flavorid=flavorid)


def list_flavors(conn: sa.Connection) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(flavors).order_by(flavors.c.memory_mb, flavors.c.flavorid))


def create_flavor(conn: sa.Connection, values: dict[str, Any]) -> dict[str, Any]:
    """Insert a flavor; FlavorExists (409) on a duplicate id or name."""
    from cirrus.compute.exception import FlavorExists

    clash = conn.execute(sa.select(flavors.c.flavorid).where(sa.or_(
        flavors.c.flavorid == values["flavorid"], flavors.c.name == values["name"]))).first()
    if clash:
        raise FlavorExists(name=values["name"], flavor_id=values["flavorid"])
    conn.execute(flavors.insert().values(created_at=utcnow(), disabled=False, **values))
    return get_flavor(conn, values["flavorid"]) or {}


def update_flavor(conn: sa.Connection, flavorid: str, values: dict[str, Any]) -> None:
    conn.execute(flavors.update().where(flavors.c.flavorid == flavorid).values(
        updated_at=utcnow(), **values))


def delete_flavor(conn: sa.Connection, flavorid: str) -> bool:
    return conn.execute(flavors.delete().where(flavors.c.flavorid == flavorid)).rowcount == 1
