"""Network service v2.0 HTTP API (Neutron subset): thin handlers over the service."""
from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.network import bulk, listing, tags
from cirrus.network import exception as exc
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network.common import select_fields
from cirrus.network.agent_routes import ROUTES as AGENT_ROUTES
from cirrus.network.l3.routes import ROUTES as L3_ROUTES
from cirrus.network.models import networks, ports, security_group_rules, security_groups, subnets
from cirrus.network.port_filters import fixed_ip_filter
from cirrus.network.quota_routes import ROUTES as QUOTA_ROUTES
from cirrus.network.schema import parse
from cirrus.network.subnetpool_routes import ROUTES as SUBNETPOOL_ROUTES
from cirrus.network.tag_routes import ROUTES as TAG_ROUTES
from cirrus.network.validators import storable

# What the API does (each is tested): no address scopes, segments, availability
# zone listing, QoS, DVR/HA routers or L3 flavors, so none of their aliases.
EXTENSIONS = ("security-group", "port-security", "auto-allocated-topology", "binding",
              "quotas", "quota_details", "quota-check-limit",
              "dns-integration", "dns-domain-ports", "extra_dhcp_opt", "external-net",
              "net-mtu", "net-mtu-writable", "allowed-address-pairs",
              "standard-attr-description", "standard-attr-timestamp", "standard-attr-tag",
              "tag-creation", "tag-ports-during-bulk-creation", "project-id",
              "ip-substring-filtering", "pagination", "sorting", "fields", "provider",
              "network_availability_zone",
              "router", "ext-gw-mode", "extraroute", "extraroute-atomic",
              "fip-port-details", "agent", "subnet_allocation", "default-subnetpools")


def _svc(request: Request) -> Any:
    return request.app.state.network


def _param(request: Request, name: str = "id") -> str:
    """A path parameter the database can be asked about: an id or project id
    it cannot hold (a NUL, a lone surrogate, far too long) names nothing."""
    value = request.path_params[name]
    if len(value) > 255 or storable(value):
        raise exc.ResourceNotFound()
    return value


async def versions(request: Request) -> Response:
    base = request.app.state.settings.public_url.rstrip("/") + "/network"
    return reply({"versions": [{"id": "v2.0", "status": "CURRENT",
                                "links": [{"rel": "self", "href": f"{base}/v2.0/"}]}]})


async def version_v2(request: Request) -> Response:
    base = request.app.state.settings.public_url.rstrip("/") + "/network/v2.0"
    return reply({"resources": [{"name": n, "collection": c,
                                 "links": [{"rel": "self", "href": f"{base}/{c}"}]}
                                for n, c in (("network", "networks"), ("subnet", "subnets"),
                                             ("port", "ports"))]})


def _extension(alias: str) -> dict[str, Any]:
    return {"alias": alias, "name": alias, "description": alias, "links": [],
            "updated": "2024-01-01T00:00:00Z"}


async def extensions(request: Request) -> Response:
    return reply({"extensions": [_extension(a) for a in EXTENSIONS]})


async def show_extension(request: Request) -> Response:
    alias = request.path_params["alias"]
    if alias not in EXTENSIONS:
        raise exc.ResourceNotFound()
    return reply({"extension": _extension(alias)})


# -- networks ------------------------------------------------------------------
def _network_views(conn: sa.Connection, rows: list[dict[str, Any]],
                   admin: bool) -> list[dict[str, Any]]:
    tags.attach(conn, rows)
    subs = net_db.subnets_of(conn, [r["id"] for r in rows])
    by_net: dict[str, list[str]] = {}
    for s in subs:
        by_net.setdefault(s["network_id"], []).append(s["id"])
    return [net_db.network_view(r, by_net.get(r["id"], []), admin) for r in rows]


async def list_networks(request: Request) -> Response:
    ctx = context(request)
    svc = _svc(request)

    filters = listing.filters(request)
    tagged = tags.filter_clause(networks.c.id, filters)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        columns = {**net_db.NETWORK_COLUMNS, **(net_db.PROVIDER_COLUMNS if ctx.is_admin else {})}
        rows = svc.list_rows(conn, ctx, networks, filters, columns,
                             net_db.visible_networks_clause(ctx), tagged)
        return _network_views(conn, rows, ctx.is_admin)
    return listing.page(request, await request.app.state.db.read(load), "networks")


def _created(resource: str, views: list[dict[str, Any]], many: bool) -> Response:
    """201 with the one created resource, or the list a bulk create made."""
    return reply({f"{resource}s": views} if many else {resource: views[0]}, status=201)


async def create_network(request: Request) -> Response:
    ctx = context(request)
    rows, many = await bulk.create(_svc(request), ctx, "network", await json_body(request))
    return _created("network", [net_db.network_view(row, [], ctx.is_admin) for row in rows], many)


async def show_network(request: Request) -> Response:
    ctx = context(request)

    def load(conn: sa.Connection) -> dict[str, Any]:
        return _network_views(conn, [net_db.get_network(conn, ctx, _param(request))],
                              ctx.is_admin)[0]
    view = await request.app.state.db.read(load)
    return reply({"network": select_fields(view, request.query_params.getlist("fields"))})


async def update_network(request: Request) -> Response:
    ctx = context(request)
    values = parse("network", await json_body(request), False)
    row = await _svc(request).update_network(ctx, _param(request), values)
    return reply({"network": await request.app.state.db.read(lambda conn: _network_views(
        conn, [net_db.get_network(conn, ctx, row["id"])], ctx.is_admin)[0])})


async def delete_network(request: Request) -> Response:
    await _svc(request).delete_network(context(request), _param(request))
    return no_content()


# -- subnets -------------------------------------------------------------------
async def list_subnets(request: Request) -> Response:
    ctx = context(request)
    svc = _svc(request)

    filters = listing.filters(request)
    tagged = tags.filter_clause(subnets.c.id, filters)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = svc.list_rows(conn, ctx, subnets, filters, net_db.SUBNET_COLUMNS,
                             net_db.visible_subnets_clause(ctx), tagged)
        return [net_db.subnet_view(r) for r in tags.attach(conn, rows)]
    return listing.page(request, await request.app.state.db.read(load), "subnets")


async def create_subnet(request: Request) -> Response:
    rows, many = await bulk.create(_svc(request), context(request), "subnet",
                                   await json_body(request))
    return _created("subnet", [net_db.subnet_view(row) for row in rows], many)


def _subnet(conn: sa.Connection, ctx: Any, subnet_id: str) -> dict[str, Any]:
    return net_db.subnet_view(tags.attach(conn, [net_db.get_subnet(conn, ctx, subnet_id)])[0])


async def show_subnet(request: Request) -> Response:
    view = await request.app.state.db.read(_subnet, context(request), _param(request))
    return reply({"subnet": select_fields(view, request.query_params.getlist("fields"))})


async def update_subnet(request: Request) -> Response:
    ctx = context(request)
    values = parse("subnet", await json_body(request), False)
    subnet_id = _param(request)
    await _svc(request).update_subnet(ctx, subnet_id, values)
    return reply({"subnet": await request.app.state.db.read(_subnet, ctx, subnet_id)})


async def delete_subnet(request: Request) -> Response:
    await _svc(request).delete_subnet(context(request), _param(request))
    return no_content()


# -- ports ---------------------------------------------------------------------
def _port_views(conn: sa.Connection, rows: list[dict[str, Any]],
                 dns_domain: str) -> list[dict[str, Any]]:
    fixed = port_db.fixed_ips_of(conn, [r["id"] for r in rows])
    return [port_db.port_view(r, fixed[r["id"]], dns_domain) for r in tags.attach(conn, rows)]


def _ports_by_id(request: Request, ids: list[str]) -> Callable[[sa.Connection], list[dict[str, Any]]]:
    """A read of the views of ports ``ids`` (the caller's), in that order."""
    ctx, domain = context(request), request.app.state.settings.dns_domain
    return lambda conn: _port_views(conn, [port_db.get_port(conn, ctx, i) for i in ids], domain)


async def list_ports(request: Request) -> Response:
    ctx = context(request)
    svc = _svc(request)
    filters = listing.filters(request)
    matches = fixed_ip_filter(filters.pop("fixed_ips", []))
    tagged = tags.filter_clause(ports.c.id, filters)
    domain = request.app.state.settings.dns_domain

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = svc.list_rows(conn, ctx, ports, filters, port_db.PORT_COLUMNS, where=tagged)
        return [view for view in _port_views(conn, rows, domain) if matches(view["fixed_ips"])]
    return listing.page(request, await request.app.state.db.read(load), "ports")


async def create_port(request: Request) -> Response:
    rows, many = await bulk.create(_svc(request), context(request), "port",
                                   await json_body(request))
    views = await request.app.state.db.read(_ports_by_id(request, [r["id"] for r in rows]))
    return _created("port", views, many)


async def show_port(request: Request) -> Response:
    views = await request.app.state.db.read(_ports_by_id(request, [_param(request)]))
    return reply({"port": select_fields(views[0], request.query_params.getlist("fields"))})


async def update_port(request: Request) -> Response:
    ctx = context(request)
    row = await _svc(request).update_port(ctx, _param(request),
                                          parse("port", await json_body(request), False))
    views = await request.app.state.db.read(_ports_by_id(request, [row["id"]]))
    return reply({"port": views[0]})


async def delete_port(request: Request) -> Response:
    await _svc(request).delete_port(context(request), _param(request))
    return no_content()


# -- security groups -------------------------------------------------------------
async def list_groups(request: Request) -> Response:
    ctx = context(request)
    svc = _svc(request)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        if ctx.project_id:
            sg_db.ensure_default(conn, ctx.project_id)
        filters = listing.filters(request)
        tagged = tags.filter_clause(security_groups.c.id, filters)
        rows = svc.list_rows(conn, ctx, security_groups, filters,
                             {"id": "id", "name": "name", "project_id": "project_id",
                              "tenant_id": "project_id"}, where=tagged)
        rules = sg_db.rules_of(conn, [r["id"] for r in tags.attach(conn, rows)])
        return [sg_db.group_view(r, rules[r["id"]]) for r in rows]
    return listing.page(request, await request.app.state.db.run(load), "security_groups")


async def create_group(request: Request) -> Response:
    ctx = context(request)
    row = await _svc(request).create_security_group(
        ctx, parse("security_group", await json_body(request), True))
    rules = await request.app.state.db.read(sg_db.rules_of, [row["id"]])
    return reply({"security_group": sg_db.group_view(row, rules[row["id"]])}, status=201)


def _group(conn: sa.Connection, ctx: Any, group_id: str) -> dict[str, Any]:
    row = tags.attach(conn, [sg_db.get_group(conn, ctx, group_id)])[0]
    return sg_db.group_view(row, sg_db.rules_of(conn, [row["id"]])[row["id"]])


async def show_group(request: Request) -> Response:
    ctx = context(request)

    view = await request.app.state.db.read(_group, ctx, _param(request))
    return reply({"security_group": view})


async def update_group(request: Request) -> Response:
    ctx = context(request)
    values = parse("security_group", await json_body(request), False)
    row = await _svc(request).update_security_group(ctx, _param(request), values)
    return reply({"security_group": await request.app.state.db.read(_group, ctx, row["id"])})


async def delete_group(request: Request) -> Response:
    await _svc(request).delete_security_group(context(request), _param(request))
    return no_content()


async def list_rules(request: Request) -> Response:
    ctx = context(request)
    svc = _svc(request)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        rows = svc.list_rows(conn, ctx, security_group_rules, listing.filters(request),
                             {"id": "id", "security_group_id": "security_group_id",
                              "direction": "direction", "protocol": "protocol",
                              "ethertype": "ethertype", "project_id": "project_id",
                              "tenant_id": "project_id"})
        return [sg_db.rule_view(r) for r in rows]
    return listing.page(request, await request.app.state.db.read(load), "security_group_rules")


async def create_rule(request: Request) -> Response:
    ctx = context(request)
    row = await _svc(request).create_rule(ctx, parse("security_group_rule", await json_body(request), True))
    return reply({"security_group_rule": sg_db.rule_view(row)}, status=201)


async def show_rule(request: Request) -> Response:
    row = await request.app.state.db.read(sg_db.get_rule, context(request), _param(request))
    return reply({"security_group_rule": sg_db.rule_view(row)})


async def delete_rule(request: Request) -> Response:
    await _svc(request).delete_rule(context(request), _param(request))
    return no_content()


# -- get-me-a-network ------------------------------------------------------------
async def auto_allocated_topology(request: Request) -> Response:
    from cirrus.network.auto_allocate import get_or_create_auto_network

    ctx = context(request)
    project = _param(request, "project_id")
    policy.enforce(ctx, "network:create", {"project_id": project})
    net = await request.app.state.db.run(get_or_create_auto_network,
                                         request.app.state.settings, project, _svc(request).segments)
    return reply({"auto_allocated_topology": {"id": net["id"], "tenant_id": project,
                                              "project_id": project}})


def _crud(collection: str, list_fn: Callable, create_fn: Callable, show_fn: Callable,
          update_fn: Callable, delete_fn: Callable) -> list[Route]:
    base = f"/v2.0/{collection}"
    return [Route(base, list_fn, methods=["GET"]), Route(base, create_fn, methods=["POST"]),
            Route(base + "/{id}", show_fn, methods=["GET"]),
            Route(base + "/{id}", update_fn, methods=["PUT"]),
            Route(base + "/{id}", delete_fn, methods=["DELETE"])]


ROUTES = [
    Route("/", versions, methods=["GET"]),
    Route("/v2.0", version_v2, methods=["GET"]),
    Route("/v2.0/", version_v2, methods=["GET"]),
    Route("/v2.0/extensions", extensions, methods=["GET"]),
    Route("/v2.0/extensions/{alias}", show_extension, methods=["GET"]),
    *_crud("networks", list_networks, create_network, show_network, update_network, delete_network),
    *_crud("subnets", list_subnets, create_subnet, show_subnet, update_subnet, delete_subnet),
    *_crud("ports", list_ports, create_port, show_port, update_port, delete_port),
    *_crud("security-groups", list_groups, create_group, show_group, update_group, delete_group),
    Route("/v2.0/security-group-rules", list_rules, methods=["GET"]),
    Route("/v2.0/security-group-rules", create_rule, methods=["POST"]),
    Route("/v2.0/security-group-rules/{id}", show_rule, methods=["GET"]),
    Route("/v2.0/security-group-rules/{id}", delete_rule, methods=["DELETE"]),
    *QUOTA_ROUTES,
    *TAG_ROUTES,
    *L3_ROUTES,
    *AGENT_ROUTES,
    *SUBNETPOOL_ROUTES,
    Route("/v2.0/auto-allocated-topology/{project_id}", auto_allocated_topology, methods=["GET"]),
]
