"""``/v2.0/subnetpools``: thin handlers over ``subnetpools`` (parse → owner →
one unit of work → view)."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.context import RequestContext
from cirrus.network import authz, listing, tags
from cirrus.network import exception as exc
from cirrus.network import subnetpools as pools
from cirrus.network.common import select_fields
from cirrus.network.models import subnetpools
from cirrus.network.schema import parse
from cirrus.network.validators import storable


def _id(request: Request) -> str:
    value = request.path_params["id"]
    if len(value) > 255 or storable(value):
        raise exc.SubnetPoolNotFound(subnetpool_id="")
    return value


def _view(conn: sa.Connection, row: dict[str, Any]) -> dict[str, Any]:
    return pools.list_views(conn, tags.attach(conn, [row]))[0]


def _shown(conn: sa.Connection, ctx: RequestContext, pool_id: str) -> dict[str, Any]:
    return _view(conn, pools.get_subnetpool(conn, ctx, pool_id))


async def list_subnetpools(request: Request) -> Response:
    ctx, svc = context(request), request.app.state.network
    filters = listing.filters(request)
    tagged = tags.filter_clause(subnetpools.c.id, filters)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = svc.list_rows(conn, ctx, subnetpools, filters, pools.COLUMNS,
                             pools.visible_clause(ctx), tagged)
        return pools.list_views(conn, tags.attach(conn, rows))
    return listing.page(request, await request.app.state.db.read(load), "subnetpools")


async def create_subnetpool(request: Request) -> Response:
    ctx = context(request)
    values = parse("subnetpool", await json_body(request), True)
    project = authz.owner_of_new(ctx, values, "subnetpool")

    def unit(conn: sa.Connection) -> dict[str, Any]:
        row = pools.create_subnetpool(conn, ctx, values, project)
        if values.get("tags"):
            tags.add_tags(conn, "subnetpool", row["id"], values["tags"])
        return _view(conn, row)
    return reply({"subnetpool": await request.app.state.db.run(unit)}, status=201)


async def show_subnetpool(request: Request) -> Response:
    view = await request.app.state.db.read(_shown, context(request), _id(request))
    return reply({"subnetpool": select_fields(view, request.query_params.getlist("fields"))})


async def update_subnetpool(request: Request) -> Response:
    ctx = context(request)
    values = parse("subnetpool", await json_body(request), False)
    pool_id = _id(request)

    def unit(conn: sa.Connection) -> dict[str, Any]:
        pools.update_subnetpool(conn, ctx, pool_id, values)
        return _shown(conn, ctx, pool_id)
    return reply({"subnetpool": await request.app.state.db.run(unit)})


async def delete_subnetpool(request: Request) -> Response:
    ctx, pool_id = context(request), _id(request)

    def unit(conn: sa.Connection) -> None:
        pools.delete_subnetpool(conn, ctx, pool_id)
        tags.delete_tags(conn, [pool_id])
    await request.app.state.db.run(unit)
    return no_content()


ROUTES = [
    Route("/v2.0/subnetpools", list_subnetpools, methods=["GET"]),
    Route("/v2.0/subnetpools", create_subnetpool, methods=["POST"]),
    Route("/v2.0/subnetpools/{id}", show_subnetpool, methods=["GET"]),
    Route("/v2.0/subnetpools/{id}", update_subnetpool, methods=["PUT"]),
    Route("/v2.0/subnetpools/{id}", delete_subnetpool, methods=["DELETE"]),
]
