"""The service catalog's regions, services and endpoints (Keystone's
``/v3/regions``, ``/v3/services``, ``/v3/endpoints``).

cirrus's own services are built in (:meth:`IdentityService.catalog`, from the
settings): they are listed and shown beside what an operator adds here, and
cannot be changed or deleted through the API (403). The built-in region is
the cloud's ``region`` setting. Added services and endpoints reach tokens'
catalogs as the built-in ones do (:func:`entries`).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.identity import models as m
from cirrus.identity.exception import (DuplicateEntry, EndpointNotFound, ForbiddenAction,
                                       RegionNotFound, ServiceNotFound)


@dataclass(frozen=True)
class BuiltIn:
    """The catalog the settings make: its region and services (each with its
    ``endpoints``), as :meth:`IdentityService.catalog` returns them."""

    region: str
    services: list[dict[str, Any]]

    def service(self, ident: str) -> dict[str, Any] | None:
        return next((s for s in self.services if s["id"] == ident), None)

    def endpoints(self) -> list[dict[str, Any]]:
        return [{**e, "service_id": s["id"], "enabled": True}
                for s in self.services for e in s["endpoints"]]


_READONLY = "it is built into cirrus's catalog (its settings make it)"


# -- regions --------------------------------------------------------------------

def regions(conn: sa.Connection, builtin: BuiltIn, parent: str | None = None
            ) -> list[dict[str, Any]]:
    rows = fetch_all(conn, sa.select(m.regions).order_by(m.regions.c.id))
    if not any(r["id"] == builtin.region for r in rows):
        rows.insert(0, {"id": builtin.region, "description": "", "parent_region_id": None})
    return [r for r in rows if parent is None or r["parent_region_id"] == parent]


def region(conn: sa.Connection, builtin: BuiltIn, ident: str) -> dict[str, Any]:
    found = next((r for r in regions(conn, builtin) if r["id"] == ident), None)
    if found is None:
        raise RegionNotFound(region_id=ident)
    return found


def create_region(conn: sa.Connection, builtin: BuiltIn, values: dict[str, Any]
                  ) -> dict[str, Any]:
    ident = values.get("id") or uuid.uuid4().hex
    if values.get("parent_region_id"):
        region(conn, builtin, values["parent_region_id"])
    if any(r["id"] == ident for r in regions(conn, builtin)):
        raise DuplicateEntry(kind="region")
    conn.execute(m.regions.insert().values(**{**values, "id": ident}, created_at=utcnow()))
    return region(conn, builtin, ident)


def update_region(conn: sa.Connection, builtin: BuiltIn, ident: str, values: dict[str, Any]
                  ) -> dict[str, Any]:
    if values.get("parent_region_id"):
        if values["parent_region_id"] == ident:
            raise ForbiddenAction(reason="a region cannot be its own parent")
        region(conn, builtin, values["parent_region_id"])
    if fetch_one(conn, sa.select(m.regions).where(m.regions.c.id == ident)) is None:
        region(conn, builtin, ident)  # 404, or the built-in one's 403
        raise ForbiddenAction(reason=f"region {ident}: {_READONLY}")
    if values:
        conn.execute(m.regions.update().where(m.regions.c.id == ident).values(
            **values, updated_at=utcnow()))
    return region(conn, builtin, ident)


def delete_region(conn: sa.Connection, builtin: BuiltIn, ident: str) -> None:
    if ident == builtin.region:
        raise ForbiddenAction(reason=f"region {ident}: {_READONLY}")
    if not conn.execute(m.regions.delete().where(m.regions.c.id == ident)).rowcount:
        raise RegionNotFound(region_id=ident)
    conn.execute(m.regions.update().where(m.regions.c.parent_region_id == ident)
                 .values(parent_region_id=None))


# -- services -----------------------------------------------------------------------

def services(conn: sa.Connection, builtin: BuiltIn) -> list[dict[str, Any]]:
    own = [{"id": s["id"], "type": s["type"], "name": s["name"], "enabled": True,
            "description": s["name"]} for s in builtin.services]
    return own + fetch_all(conn, sa.select(m.catalog_services).order_by(
        m.catalog_services.c.created_at, m.catalog_services.c.id))


def service(conn: sa.Connection, builtin: BuiltIn, ident: str) -> dict[str, Any]:
    found = next((s for s in services(conn, builtin) if s["id"] == ident), None)
    if found is None:
        raise ServiceNotFound(service_id=ident)
    return found


def _writable(conn: sa.Connection, builtin: BuiltIn, table: sa.Table, ident: str,
              missing: type[Exception], field: str) -> None:
    """403 for a built-in service or endpoint, 404 for one not there."""
    if fetch_one(conn, sa.select(table.c.id).where(table.c.id == ident)) is not None:
        return
    if builtin.service(ident) or any(e["id"] == ident for e in builtin.endpoints()):
        raise ForbiddenAction(reason=f"{ident}: {_READONLY}")
    raise missing(**{field: ident})


def create_service(conn: sa.Connection, values: dict[str, Any]) -> str:
    ident = uuid.uuid4().hex
    conn.execute(m.catalog_services.insert().values(**values, id=ident, created_at=utcnow()))
    return ident


def update_service(conn: sa.Connection, builtin: BuiltIn, ident: str,
                   values: dict[str, Any]) -> None:
    _writable(conn, builtin, m.catalog_services, ident, ServiceNotFound, "service_id")
    if values:
        conn.execute(m.catalog_services.update().where(m.catalog_services.c.id == ident)
                     .values(**values, updated_at=utcnow()))


def delete_service(conn: sa.Connection, builtin: BuiltIn, ident: str) -> None:
    """The service and its endpoints."""
    _writable(conn, builtin, m.catalog_services, ident, ServiceNotFound, "service_id")
    conn.execute(m.catalog_endpoints.delete().where(m.catalog_endpoints.c.service_id == ident))
    conn.execute(m.catalog_services.delete().where(m.catalog_services.c.id == ident))


# -- endpoints ----------------------------------------------------------------------

def endpoints(conn: sa.Connection, builtin: BuiltIn) -> list[dict[str, Any]]:
    rows = fetch_all(conn, sa.select(m.catalog_endpoints).order_by(
        m.catalog_endpoints.c.created_at, m.catalog_endpoints.c.id))
    return builtin.endpoints() + rows


def endpoint(conn: sa.Connection, builtin: BuiltIn, ident: str) -> dict[str, Any]:
    found = next((e for e in endpoints(conn, builtin) if e["id"] == ident), None)
    if found is None:
        raise EndpointNotFound(endpoint_id=ident)
    return found


def _check_refs(conn: sa.Connection, builtin: BuiltIn, values: dict[str, Any]) -> None:
    if "service_id" in values:
        service(conn, builtin, values["service_id"])
    if values.get("region_id"):
        region(conn, builtin, values["region_id"])


def create_endpoint(conn: sa.Connection, builtin: BuiltIn, values: dict[str, Any]) -> str:
    _check_refs(conn, builtin, values)
    ident = uuid.uuid4().hex
    conn.execute(m.catalog_endpoints.insert().values(**values, id=ident, created_at=utcnow()))
    return ident


def update_endpoint(conn: sa.Connection, builtin: BuiltIn, ident: str,
                    values: dict[str, Any]) -> None:
    _writable(conn, builtin, m.catalog_endpoints, ident, EndpointNotFound, "endpoint_id")
    _check_refs(conn, builtin, values)
    if values:
        conn.execute(m.catalog_endpoints.update().where(m.catalog_endpoints.c.id == ident)
                     .values(**values, updated_at=utcnow()))


def delete_endpoint(conn: sa.Connection, builtin: BuiltIn, ident: str) -> None:
    _writable(conn, builtin, m.catalog_endpoints, ident, EndpointNotFound, "endpoint_id")
    conn.execute(m.catalog_endpoints.delete().where(m.catalog_endpoints.c.id == ident))


def entries(conn: sa.Connection) -> list[dict[str, Any]]:
    """The enabled added services with their enabled endpoints, as a token's
    catalog lists services."""
    eps = fetch_all(conn, sa.select(m.catalog_endpoints).where(
        m.catalog_endpoints.c.enabled.is_(True)))
    out = []
    for s in fetch_all(conn, sa.select(m.catalog_services).where(
            m.catalog_services.c.enabled.is_(True)).order_by(m.catalog_services.c.id)):
        out.append({"id": s["id"], "type": s["type"], "name": s["name"] or "",
                    "endpoints": [{"id": e["id"], "interface": e["interface"],
                                   "region": e["region_id"], "region_id": e["region_id"],
                                   "url": e["url"]} for e in eps if e["service_id"] == s["id"]]})
    return out
