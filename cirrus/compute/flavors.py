"""Flavor records: queries and the default set seeded on bootstrap."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import flavor_projects, flavors
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
    clash = conn.execute(sa.select(flavors.c.flavorid).where(sa.or_(
        flavors.c.flavorid == values["flavorid"], flavors.c.name == values["name"]))).first()
    if clash:
        raise exc.FlavorExists(name=values["name"], flavor_id=values["flavorid"])
    conn.execute(flavors.insert().values(created_at=utcnow(), disabled=False, **values))
    return get_flavor(conn, values["flavorid"]) or {}


def update_flavor(conn: sa.Connection, flavorid: str, values: dict[str, Any]) -> None:
    conn.execute(flavors.update().where(flavors.c.flavorid == flavorid).values(
        updated_at=utcnow(), **values))


def delete_flavor(conn: sa.Connection, flavorid: str) -> bool:
    conn.execute(flavor_projects.delete().where(flavor_projects.c.flavorid == flavorid))
    return conn.execute(flavors.delete().where(flavors.c.flavorid == flavorid)).rowcount == 1


# -- access to private flavors (Nova's flavor_projects) ------------------------------
def projects_of(conn: sa.Connection, flavorid: str) -> list[str]:
    """The projects a private flavor is open to, in the order they were added."""
    return list(conn.execute(sa.select(flavor_projects.c.project_id).where(
        flavor_projects.c.flavorid == flavorid).order_by(flavor_projects.c.id)).scalars())


def open_to(conn: sa.Connection, project_id: str | None) -> set[str]:
    """The private flavors open to ``project_id``."""
    if project_id is None:
        return set()
    return set(conn.execute(sa.select(flavor_projects.c.flavorid).where(
        flavor_projects.c.project_id == project_id)).scalars())


def visible(conn: sa.Connection, flavor: dict[str, Any] | None, project_id: str | None,
            is_admin: bool) -> dict[str, Any] | None:
    """``flavor`` if the caller may see it (public, admin, or a project it is
    open to), else None: Nova reads a private flavor as missing."""
    if flavor is None or flavor["is_public"] or is_admin:
        return flavor
    return flavor if flavor["flavorid"] in open_to(conn, project_id) else None


# A flavor as the compute API keeps it (cirrus/compute/catalog_cache.py): the
# record (None: no such flavor) and, for a private one, the projects it is open to.
FlavorAccess = tuple[dict[str, Any] | None, frozenset[str]]


def with_access(conn: sa.Connection, flavorid: str) -> FlavorAccess:
    """The flavor ``flavorid`` (or None) and, if private, the projects it is open to."""
    flavor = get_flavor(conn, flavorid)
    if flavor is None or flavor["is_public"]:
        return flavor, frozenset()
    return flavor, frozenset(projects_of(conn, flavorid))


def visible_in(access: FlavorAccess, project_id: str | None,
               is_admin: bool) -> dict[str, Any] | None:
    """:func:`visible` of a :func:`with_access` record: no read."""
    flavor, projects = access
    if flavor is None or flavor["is_public"] or is_admin or project_id in projects:
        return flavor
    return None


def add_access(conn: sa.Connection, flavorid: str, project_id: str) -> None:
    """Open a flavor to a project; :class:`FlavorAccessExists` (409) if it is."""
    if project_id in projects_of(conn, flavorid):
        raise exc.FlavorAccessExists(flavor_id=flavorid, project_id=project_id)
    try:
        with conn.begin_nested():
            conn.execute(flavor_projects.insert().values(flavorid=flavorid, project_id=project_id,
                                                         created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise exc.FlavorAccessExists(flavor_id=flavorid, project_id=project_id) from None


def remove_access(conn: sa.Connection, flavorid: str, project_id: str) -> None:
    """Close a flavor to a project; :class:`FlavorAccessNotFound` (404) if it was not open."""
    gone = conn.execute(flavor_projects.delete().where(
        flavor_projects.c.flavorid == flavorid, flavor_projects.c.project_id == project_id))
    if gone.rowcount == 0:
        raise exc.FlavorAccessNotFound(flavor_id=flavorid, project_id=project_id)
