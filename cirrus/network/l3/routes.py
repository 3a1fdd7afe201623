"""``/v2.0/routers`` and ``/v2.0/floatingips``: thin handlers over
``routers``, ``interfaces``, ``gateway`` and ``floatingips`` (parse →
ownership → one unit of work → view)."""
from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.network import authz, listing, tags
from cirrus.network import exception as exc
from cirrus.network.common import select_fields
from cirrus.network.l3 import floatingips as fip_db
from cirrus.network.l3 import interfaces
from cirrus.network.l3 import routers as router_db
from cirrus.network.l3.schema import parse_interface, parse_routes_change
from cirrus.network.models import floatingips, routers
from cirrus.network.schema import parse
from cirrus.network.validators import storable


def _id(request: Request) -> str:
    value = request.path_params["id"]
    if len(value) > 255 or storable(value):
        raise exc.ResourceNotFound()
    return value


def _show(request: Request, resource: str, view: dict[str, Any], status: int = 200) -> Response:
    return reply({resource: select_fields(view, request.query_params.getlist("fields"))},
                 status=status)


# -- routers ---------------------------------------------------------------------
def _router_view(conn: sa.Connection, row: dict[str, Any]) -> dict[str, Any]:
    return router_db.router_views(conn, [row])[0]


async def list_routers(request: Request) -> Response:
    ctx, svc = context(request), request.app.state.network
    filters = listing.filters(request)
    tagged = tags.filter_clause(routers.c.id, filters)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = svc.list_rows(conn, ctx, routers, filters, router_db.ROUTER_COLUMNS, where=tagged)
        return router_db.router_views(conn, rows)
    return listing.page(request, await request.app.state.db.read(load), "routers")


async def _create(request: Request, resource: str, create: Callable[..., dict[str, Any]],
                  view: Callable[[sa.Connection, dict[str, Any]], dict[str, Any]]) -> Response:
    """Parse a create body, check who will own the new ``resource``, create
    it and show it, in one unit of work."""
    ctx, settings = context(request), request.app.state.settings
    values = parse(resource, await json_body(request), True)
    project = authz.owner_of_new(ctx, values, resource)
    shown = await request.app.state.db.run(
        lambda conn: view(conn, create(conn, ctx, settings, values, project)))
    return _show(request, resource, shown, 201)


async def create_router(request: Request) -> Response:
    return await _create(request, "router", router_db.create_router, _router_view)


async def show_router(request: Request) -> Response:
    ctx = context(request)
    view = await request.app.state.db.read(
        lambda conn: _router_view(conn, router_db.get_router(conn, ctx, _id(request))))
    return _show(request, "router", view)


async def update_router(request: Request) -> Response:
    ctx, settings = context(request), request.app.state.settings
    values = parse("router", await json_body(request), False)
    view = await request.app.state.db.run(lambda conn: _router_view(
        conn, router_db.update_router(conn, ctx, settings, _id(request), values)))
    return _show(request, "router", view)


async def delete_router(request: Request) -> Response:
    await request.app.state.db.run(router_db.delete_router, context(request), _id(request))
    return no_content()


async def add_router_interface(request: Request) -> Response:
    ctx, settings = context(request), request.app.state.settings
    info = parse_interface(await json_body(request), removing=False)
    return reply(await request.app.state.db.run(interfaces.add_interface, ctx, settings,
                                                _id(request), info))


async def remove_router_interface(request: Request) -> Response:
    info = parse_interface(await json_body(request), removing=True)
    return reply(await request.app.state.db.run(interfaces.remove_interface, context(request),
                                                _id(request), info))


async def add_extraroutes(request: Request) -> Response:
    return await _change_routes(request, adding=True)


async def remove_extraroutes(request: Request) -> Response:
    return await _change_routes(request, adding=False)


async def _change_routes(request: Request, adding: bool) -> Response:
    ctx = context(request)
    given = parse_routes_change(await json_body(request))
    view = await request.app.state.db.run(lambda conn: _router_view(
        conn, router_db.change_routes(conn, ctx, _id(request), given, adding)))
    return reply({"router": view})


# -- floating IPs ----------------------------------------------------------------
async def list_floatingips(request: Request) -> Response:
    ctx, svc = context(request), request.app.state.network
    filters = listing.filters(request)
    tagged = tags.filter_clause(floatingips.c.id, filters)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = svc.list_rows(conn, ctx, floatingips, filters, fip_db.FIP_COLUMNS, where=tagged)
        return fip_db.floatingip_views(conn, rows)
    return listing.page(request, await request.app.state.db.read(load), "floatingips")


def _fip_view(conn: sa.Connection, row: dict[str, Any]) -> dict[str, Any]:
    return fip_db.floatingip_views(conn, [row])[0]


async def create_floatingip(request: Request) -> Response:
    return await _create(request, "floatingip", fip_db.create_floatingip, _fip_view)


async def show_floatingip(request: Request) -> Response:
    ctx = context(request)
    view = await request.app.state.db.read(
        lambda conn: _fip_view(conn, fip_db.get_floatingip(conn, ctx, _id(request))))
    return _show(request, "floatingip", view)


async def update_floatingip(request: Request) -> Response:
    ctx = context(request)
    values = parse("floatingip", await json_body(request), False)
    view = await request.app.state.db.run(lambda conn: _fip_view(
        conn, fip_db.update_floatingip(conn, ctx, _id(request), values)))
    return _show(request, "floatingip", view)


async def delete_floatingip(request: Request) -> Response:
    await request.app.state.db.run(fip_db.delete_floatingip, context(request), _id(request))
    return no_content()


def _crud(collection: str, *handlers: Callable[[Request], Any]) -> list[Route]:
    base = f"/v2.0/{collection}"
    list_fn, create_fn, show_fn, update_fn, delete_fn = handlers
    return [Route(base, list_fn, methods=["GET"]), Route(base, create_fn, methods=["POST"]),
            Route(base + "/{id}", show_fn, methods=["GET"]),
            Route(base + "/{id}", update_fn, methods=["PUT"]),
            Route(base + "/{id}", delete_fn, methods=["DELETE"])]


ROUTES = [
    *_crud("routers", list_routers, create_router, show_router, update_router, delete_router),
    Route("/v2.0/routers/{id}/add_router_interface", add_router_interface, methods=["PUT"]),
    Route("/v2.0/routers/{id}/remove_router_interface", remove_router_interface,
          methods=["PUT"]),
    Route("/v2.0/routers/{id}/add_extraroutes", add_extraroutes, methods=["PUT"]),
    Route("/v2.0/routers/{id}/remove_extraroutes", remove_extraroutes, methods=["PUT"]),
    *_crud("floatingips", list_floatingips, create_floatingip, show_floatingip,
           update_floatingip, delete_floatingip),
]
