"""Regions, services and endpoints: reading and writing them is the admin's
(Keystone's ``identity:list_regions`` … ``identity:delete_endpoint``; its
reader rules are system-scoped, which cirrus's admin is)."""
from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import json_body, no_content, reply
from cirrus.identity import catalog, schema
from cirrus.identity.catalog import BuiltIn
from cirrus.identity.exception import (EndpointNotFound, RegionNotFound, ServiceNotFound)
from cirrus.identity.http import base, listing, path_id, query, require_admin

F = schema.CATALOG_FIELDS


def _builtin(request: Request) -> BuiltIn:
    return BuiltIn(request.app.state.settings.region, request.app.state.identity.catalog())


def _link(request: Request, collection: str, ident: str) -> dict[str, str]:
    return {"self": f"{base(request)}/{collection}/{ident}"}


def region_view(request: Request, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "description": row["description"] or "",
            "parent_region_id": row["parent_region_id"],
            "links": _link(request, "regions", row["id"])}


def service_view(request: Request, row: dict[str, Any]) -> dict[str, Any]:
    out = {k: row[k] for k in ("id", "type", "name", "enabled", "description")}
    return {**out, "links": _link(request, "services", row["id"])}


def endpoint_view(request: Request, row: dict[str, Any]) -> dict[str, Any]:
    region = row.get("region_id")
    return {"id": row["id"], "service_id": row["service_id"], "interface": row["interface"],
            "url": row["url"], "region_id": region, "region": region,
            "enabled": row["enabled"], "links": _link(request, "endpoints", row["id"])}


async def _run(request: Request, fn: Callable[..., Any], *args: Any) -> Any:
    return await request.app.state.db.run(fn, *args)


# -- regions ------------------------------------------------------------------------

async def list_regions(request: Request) -> Response:
    require_admin(request)
    rows = await request.app.state.db.read(catalog.regions, _builtin(request),
                                           query(request, "parent_region_id", schema.NAME_MAX))
    return reply(listing(request, "regions", [region_view(request, r) for r in rows]))


async def create_region(request: Request) -> Response:
    """``POST /v3/regions`` (an id may be given) or ``PUT /v3/regions/{id}``."""
    require_admin(request)
    values = schema.resource_body(await json_body(request), "region", F["region"])
    if "id" in request.path_params:
        values["id"] = path_id(request, "id", RegionNotFound, "region_id")
    row = await _run(request, catalog.create_region, _builtin(request), values)
    return reply({"region": region_view(request, row)}, status=201)


def _region_id(request: Request) -> str:
    return path_id(request, "id", RegionNotFound, "region_id")


async def show_region(request: Request) -> Response:
    require_admin(request)
    row = await request.app.state.db.read(catalog.region, _builtin(request), _region_id(request))
    return reply({"region": region_view(request, row)})


async def update_region(request: Request) -> Response:
    require_admin(request)
    values = schema.resource_body(await json_body(request), "region", F["region"])
    values.pop("id", None)
    row = await _run(request, catalog.update_region, _builtin(request), _region_id(request),
                     values)
    return reply({"region": region_view(request, row)})


async def delete_region(request: Request) -> Response:
    require_admin(request)
    await _run(request, catalog.delete_region, _builtin(request), _region_id(request))
    return no_content()


# -- services -----------------------------------------------------------------------

def _service_id(request: Request) -> str:
    return path_id(request, "id", ServiceNotFound, "service_id")


async def list_services(request: Request) -> Response:
    require_admin(request)
    kind = query(request, "type", schema.NAME_MAX)
    rows = await request.app.state.db.read(catalog.services, _builtin(request))
    return reply(listing(request, "services", [service_view(request, r) for r in rows
                                               if kind in (None, r["type"])]))


async def show_service(request: Request) -> Response:
    require_admin(request)
    row = await request.app.state.db.read(catalog.service, _builtin(request),
                                          _service_id(request))
    return reply({"service": service_view(request, row)})


async def create_service(request: Request) -> Response:
    require_admin(request)
    values = schema.resource_body(await json_body(request), "service", F["service"], ("type",))
    builtin = _builtin(request)

    def create(conn: sa.Connection) -> dict[str, Any]:
        return catalog.service(conn, builtin, catalog.create_service(conn, values))
    row = await _run(request, create)
    return reply({"service": service_view(request, row)}, status=201)


async def update_service(request: Request) -> Response:
    require_admin(request)
    values = schema.resource_body(await json_body(request), "service", F["service"])
    builtin, ident = _builtin(request), _service_id(request)

    def update(conn: sa.Connection) -> dict[str, Any]:
        catalog.update_service(conn, builtin, ident, values)
        return catalog.service(conn, builtin, ident)
    row = await _run(request, update)
    return reply({"service": service_view(request, row)})


async def delete_service(request: Request) -> Response:
    require_admin(request)
    await _run(request, catalog.delete_service, _builtin(request), _service_id(request))
    return no_content()


# -- endpoints ----------------------------------------------------------------------

def _endpoint_id(request: Request) -> str:
    return path_id(request, "id", EndpointNotFound, "endpoint_id")


async def list_endpoints(request: Request) -> Response:
    require_admin(request)
    service_id, interface = query(request, "service_id"), query(request, "interface")
    region = query(request, "region_id", schema.NAME_MAX)
    rows = await request.app.state.db.read(catalog.endpoints, _builtin(request))
    rows = [r for r in rows if service_id in (None, r["service_id"])
            and interface in (None, r["interface"]) and region in (None, r["region_id"])]
    return reply(listing(request, "endpoints", [endpoint_view(request, r) for r in rows]))


async def show_endpoint(request: Request) -> Response:
    require_admin(request)
    row = await request.app.state.db.read(catalog.endpoint, _builtin(request),
                                          _endpoint_id(request))
    return reply({"endpoint": endpoint_view(request, row)})


def _endpoint_values(body: Any, creating: bool) -> tuple[dict[str, Any], str | None]:
    """The stored values, and a region named the legacy way (``region``),
    which Keystone makes when it does not exist yet."""
    values = schema.resource_body(body, "endpoint", F["endpoint"],
                                  ("service_id", "interface", "url") if creating else ())
    legacy = values.pop("region", None)
    if legacy and not values.get("region_id"):
        values["region_id"] = legacy
        return values, legacy
    return values, None


async def save_endpoint(request: Request) -> Response:
    """``POST /v3/endpoints`` and ``PATCH /v3/endpoints/{id}``."""
    require_admin(request)
    creating = "id" not in request.path_params
    ident = None if creating else _endpoint_id(request)
    values, legacy = _endpoint_values(await json_body(request), creating)
    builtin = _builtin(request)

    def save(conn: sa.Connection) -> dict[str, Any]:
        if legacy and legacy not in {r["id"] for r in catalog.regions(conn, builtin)}:
            catalog.create_region(conn, builtin, {"id": legacy})
        if ident is None:
            return catalog.endpoint(conn, builtin, catalog.create_endpoint(conn, builtin, values))
        catalog.update_endpoint(conn, builtin, ident, values)
        return catalog.endpoint(conn, builtin, ident)
    row = await _run(request, save)
    return reply({"endpoint": endpoint_view(request, row)}, status=201 if creating else 200)


async def delete_endpoint(request: Request) -> Response:
    require_admin(request)
    await _run(request, catalog.delete_endpoint, _builtin(request), _endpoint_id(request))
    return no_content()


ROUTES = [
    Route("/v3/regions", list_regions, methods=["GET"]),
    Route("/v3/regions", create_region, methods=["POST"]),
    Route("/v3/regions/{id}", show_region, methods=["GET"]),
    Route("/v3/regions/{id}", create_region, methods=["PUT"]),
    Route("/v3/regions/{id}", update_region, methods=["PATCH"]),
    Route("/v3/regions/{id}", delete_region, methods=["DELETE"]),
    Route("/v3/services", list_services, methods=["GET"]),
    Route("/v3/services", create_service, methods=["POST"]),
    Route("/v3/services/{id}", show_service, methods=["GET"]),
    Route("/v3/services/{id}", update_service, methods=["PATCH"]),
    Route("/v3/services/{id}", delete_service, methods=["DELETE"]),
    Route("/v3/endpoints", list_endpoints, methods=["GET"]),
    Route("/v3/endpoints", save_endpoint, methods=["POST"]),
    Route("/v3/endpoints/{id}", show_endpoint, methods=["GET"]),
    Route("/v3/endpoints/{id}", save_endpoint, methods=["PATCH"]),
    Route("/v3/endpoints/{id}", delete_endpoint, methods=["DELETE"]),
]
