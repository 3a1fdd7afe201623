"""``/v2.0/{resource}/{id}/tags[/{tag}]``: Neutron's tag API, thin handlers.

Whoever sees the resource reads its tags; changing them is an update of the
resource (a member of its project, or an admin): 404 for a resource the
caller cannot see, 403 for one it sees but may not change (a shared
network). Statuses as Neutron's: a tag added 201, a tag checked or removed
204, the list replaced 200, tags created (POST) 201.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.context import RequestContext
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network import subnetpools
from cirrus.network.l3 import floatingips as fip_db
from cirrus.network.l3 import routers as router_db
from cirrus.network import tags
from cirrus.network.validators import storable

Getter = Callable[[sa.Connection, RequestContext, str], dict[str, Any]]
Handler = Callable[[Request], Awaitable[Response]]

# collection → (how to find one the caller can see, its noun in policy names)
RESOURCES: dict[str, tuple[Getter, str]] = {
    "networks": (net_db.get_network, "network"),
    "subnets": (net_db.get_subnet, "subnet"),
    "ports": (port_db.get_port, "port"),
    "security-groups": (sg_db.get_group, "security_group"),
    "routers": (router_db.get_router, "router"),
    "floatingips": (fip_db.get_floatingip, "floatingip"),
    "subnetpools": (subnetpools.get_subnetpool, "subnetpool"),
}


def _ids(request: Request) -> tuple[str, str]:
    """The resource id and the tag of the path (URL-decoded by the router;
    "" on the routes of the whole list)."""
    resource_id = request.path_params["id"]
    if len(resource_id) > 255 or storable(resource_id):
        raise exc.ResourceNotFound()
    tag = request.path_params.get("tag", "")
    if "tag" in request.path_params:
        tags.check_tag(tag)
    return resource_id, tag


def _find(conn: sa.Connection, ctx: RequestContext, collection: str, resource_id: str,
          writing: bool) -> dict[str, Any]:
    getter, noun = RESOURCES[collection]
    row = getter(conn, ctx, resource_id)
    if writing:
        authz.enforce(ctx, "network:update", noun, row)
    return row


def _handlers(collection: str) -> dict[str, Handler]:
    """The seven tag handlers of one collection."""
    kind = tags.RESOURCE_TYPES[collection]

    async def run(request: Request, writing: bool,
                  work: Callable[[sa.Connection, str, str], Any]) -> Any:
        ctx = context(request)
        resource_id, tag = _ids(request)

        def unit(conn: sa.Connection) -> Any:
            row = _find(conn, ctx, collection, resource_id, writing)
            return work(conn, row["id"], tag)
        db = request.app.state.db
        return await (db.run(unit) if writing else db.read(unit))

    async def index(request: Request) -> Response:
        found = await run(request, False, lambda conn, rid, _: tags.tags_of(conn, [rid])[rid])
        return reply({"tags": found})

    async def show(request: Request) -> Response:
        found = await run(request, False, lambda conn, rid, tag: tag in tags.tags_of(
            conn, [rid])[rid])
        if not found:
            raise exc.TagNotFound(tag=request.path_params["tag"])
        return no_content()

    async def update(request: Request) -> Response:
        await run(request, True, lambda conn, rid, tag: tags.add_tags(conn, kind, rid, [tag]))
        return Response(status_code=201)

    async def update_all(request: Request) -> Response:
        wanted = tags.parse_tags_body(await json_body(request))
        await run(request, True, lambda conn, rid, _: tags.replace_tags(conn, kind, rid, wanted))
        return reply({"tags": wanted})

    async def create(request: Request) -> Response:
        wanted = tags.parse_tags_body(await json_body(request))
        await run(request, True, lambda conn, rid, _: tags.add_tags(conn, kind, rid, wanted))
        return reply({"tags": wanted}, status=201)

    async def delete(request: Request) -> Response:
        removed = await run(request, True, lambda conn, rid, tag: tags.remove_tag(conn, rid, tag))
        if not removed:
            raise exc.TagNotFound(tag=request.path_params["tag"])
        return no_content()

    async def delete_all(request: Request) -> Response:
        await run(request, True, lambda conn, rid, _: tags.delete_tags(conn, [rid]))
        return no_content()

    return {"index": index, "show": show, "update": update, "update_all": update_all,
            "create": create, "delete": delete, "delete_all": delete_all}


def _routes(collection: str) -> list[Route]:
    h = _handlers(collection)
    base = f"/v2.0/{collection}/{{id}}/tags"
    return [Route(base, h["index"], methods=["GET"]),
            Route(base, h["update_all"], methods=["PUT"]),
            Route(base, h["create"], methods=["POST"]),
            Route(base, h["delete_all"], methods=["DELETE"]),
            Route(base + "/{tag}", h["show"], methods=["GET"]),
            Route(base + "/{tag}", h["update"], methods=["PUT"]),
            Route(base + "/{tag}", h["delete"], methods=["DELETE"])]


ROUTES = [route for collection in RESOURCES for route in _routes(collection)]
