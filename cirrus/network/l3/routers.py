"""Routers: the records, their views, create/update/delete and static routes
(Neutron's ``l3_db``, ``extraroute_db``, ``l3_gwmode_db``).

A router's interfaces and gateway are ports owned by it (``device_owner``
``network:router_interface`` / ``network:router_gateway``, ``device_id`` the
router's id); its gateway (``gateway.py``) and interfaces (``interfaces.py``)
are changed there. Every write here runs in the caller's transaction.
"""
from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network import quotas, tags
from cirrus.network.common import new_id, owned, timestamps_view
from cirrus.network.l3 import exception as l3_exc
from cirrus.network.l3 import gateway
from cirrus.network.l3.owners import ROUTER_GATEWAY, ROUTER_INTERFACE
from cirrus.network.models import (floatingips, ip_allocations, ports, router_routes, routers,
                                   subnets)

ROUTER_COLUMNS = {"id": "id", "name": "name", "project_id": "project_id",
                  "tenant_id": "project_id", "admin_state_up": "admin_state_up",
                  "status": "status", "description": "description"}
UPDATABLE = ("name", "description", "admin_state_up")


def bad_router(msg: str) -> exc.BadRequest:
    """Neutron's ``BadRequest(resource='router')``."""
    return exc.BadRequest(reason=f"Bad router request: {msg}")


def router_by_id(conn: sa.Connection, router_id: str) -> dict[str, Any] | None:
    return fetch_one(conn, sa.select(routers).where(routers.c.id == router_id))


def get_router(conn: sa.Connection, ctx: RequestContext, router_id: str) -> dict[str, Any]:
    """The router, if the caller may see it (its project's, or any for an admin)."""
    row = router_by_id(conn, router_id)
    if row is None or not owned(ctx, row):
        raise l3_exc.RouterNotFound(router_id=router_id)
    return row


def routes_of(conn: sa.Connection, router_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {r: [] for r in router_ids}
    if router_ids:
        for row in conn.execute(sa.select(router_routes).where(
                router_routes.c.router_id.in_(router_ids)).order_by(
                router_routes.c.destination, router_routes.c.nexthop)):
            out[row.router_id].append({"destination": row.destination, "nexthop": row.nexthop})
    return out


def router_views(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API's routers for ``rows``, with their gateways and routes."""
    gw_ids = [r["gw_port_id"] for r in rows if r["gw_port_id"]]
    gw_ports = {p["id"]: p for p in fetch_all(conn, sa.select(ports.c.id, ports.c.network_id)
                                              .where(ports.c.id.in_(gw_ids)))} if gw_ids else {}
    gw_ips: dict[str, list[dict[str, str]]] = {p: [] for p in gw_ids}
    if gw_ids:
        for ip in conn.execute(sa.select(ip_allocations).where(
                ip_allocations.c.port_id.in_(gw_ids)).order_by(ip_allocations.c.ip_address)):
            gw_ips[ip.port_id].append({"subnet_id": ip.subnet_id, "ip_address": ip.ip_address})
    routes = routes_of(conn, [r["id"] for r in rows])
    return [router_view(r, gw_ports.get(r["gw_port_id"] or ""),
                        gw_ips.get(r["gw_port_id"] or "", []), routes[r["id"]])
            for r in tags.attach(conn, rows)]


def router_view(row: dict[str, Any], gw_port: dict[str, Any] | None,
                gw_ips: list[dict[str, str]], routes: list[dict[str, str]]) -> dict[str, Any]:
    info = None if gw_port is None else {"network_id": gw_port["network_id"],
                                         "external_fixed_ips": gw_ips,
                                         "enable_snat": row["enable_snat"]}
    return {"id": row["id"], "name": row["name"], "tenant_id": row["project_id"],
            "project_id": row["project_id"], "admin_state_up": row["admin_state_up"],
            "status": row["status"], "description": row["description"],
            "external_gateway_info": info, "routes": routes, **timestamps_view(row)}


def create_router(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                  values: dict[str, Any], project: str) -> dict[str, Any]:
    """A router of ``project`` (the caller may create it there), with its
    gateway if ``values`` asks for one."""
    if "routes" in values:
        raise exc.BadRequest(reason="Attribute 'routes' not allowed in POST")
    quotas.check(conn, settings, "router", project)
    row = {"id": new_id(), "name": values.get("name", ""), "project_id": project,
           "description": values.get("description", ""),
           "admin_state_up": values.get("admin_state_up", True), "status": "ACTIVE",
           "gw_port_id": None, "enable_snat": True, "host": "", "created_at": utcnow(),
           "updated_at": None}
    conn.execute(routers.insert().values(**row))
    if values.get("external_gateway_info"):
        gateway.set_gateway(conn, ctx, settings, row, values["external_gateway_info"], "create")
    return router_by_id(conn, row["id"]) or row


def update_router(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                  router_id: str, values: dict[str, Any]) -> dict[str, Any]:
    """Apply ``values`` (name, description, admin state, gateway, routes)."""
    row = get_router(conn, ctx, router_id)
    authz.enforce(ctx, "network:update", "router", row)
    if "external_gateway_info" in values:
        gateway.set_gateway(conn, ctx, settings, row, values["external_gateway_info"], "update")
    if "routes" in values:
        set_routes(conn, row["id"], values["routes"] or [])
    plain = {k: values[k] for k in UPDATABLE if k in values}
    conn.execute(routers.update().where(routers.c.id == row["id"]).values(
        updated_at=utcnow(), **plain))
    return router_by_id(conn, row["id"]) or row


def delete_router(conn: sa.Connection, ctx: RequestContext, router_id: str) -> None:
    """Delete the router and its gateway: 409 while it has interfaces
    (``RouterInUse``) or floating IPs use its gateway."""
    row = get_router(conn, ctx, router_id)
    authz.enforce(ctx, "network:delete", "router", row)
    attached = conn.execute(sa.select(ports.c.id).where(
        ports.c.device_id == row["id"], ports.c.device_owner == ROUTER_INTERFACE)
        .order_by(ports.c.seq)).scalars().all()
    if attached:
        raise l3_exc.RouterInUse(router_id=row["id"],
                                 reason="has ports still attached: " + ", ".join(attached))
    gateway.clear_gateway(conn, row)
    tags.delete_tags(conn, [row["id"]])
    conn.execute(routers.delete().where(routers.c.id == row["id"]))


# -- extraroute ------------------------------------------------------------------
def router_cidrs(conn: sa.Connection, router_id: str) -> list[tuple[Any, str]]:
    """(subnet network, router's address) of each address of the router's
    interfaces and gateway: where its nexthops may be."""
    rows = conn.execute(sa.select(subnets.c.cidr, ip_allocations.c.ip_address)
                        .join(ip_allocations, ip_allocations.c.subnet_id == subnets.c.id)
                        .join(ports, ports.c.id == ip_allocations.c.port_id)
                        .where(ports.c.device_id == router_id,
                               ports.c.device_owner.in_((ROUTER_INTERFACE, ROUTER_GATEWAY))))
    return [(ipaddress.ip_network(r.cidr), r.ip_address) for r in rows]


def check_routes(conn: sa.Connection, router_id: str, routes: list[dict[str, str]]) -> None:
    """400 unless every nexthop is on a subnet the router is attached to and
    is not one of the router's own addresses (Neutron's ``_validate_routes``)."""
    attached = router_cidrs(conn, router_id)
    own = {address for _, address in attached}
    for route in routes:
        nexthop = ipaddress.ip_address(route["nexthop"])
        if not any(nexthop.version == net.version and nexthop in net for net, _ in attached):
            raise l3_exc.InvalidRoutes(routes=routes,
                                       reason="the nexthop is not connected with router")
        if route["nexthop"] in own:
            raise l3_exc.InvalidRoutes(routes=routes, reason="the nexthop is used by router")


def set_routes(conn: sa.Connection, router_id: str, routes: list[dict[str, str]]) -> None:
    """The router's static routes become exactly ``routes``."""
    check_routes(conn, router_id, routes)
    conn.execute(router_routes.delete().where(router_routes.c.router_id == router_id))
    if routes:
        conn.execute(router_routes.insert(), [
            {"router_id": router_id, "destination": str(ipaddress.ip_network(r["destination"])),
             "nexthop": r["nexthop"]} for r in routes])


def change_routes(conn: sa.Connection, ctx: RequestContext, router_id: str,
                  routes: list[dict[str, str]], adding: bool) -> dict[str, Any]:
    """``extraroute-atomic``: add ``routes`` to the router's (those it has
    already stay once) or remove them (those it lacks are ignored)."""
    row = get_router(conn, ctx, router_id)
    authz.enforce(ctx, "network:update", "router", row)
    current = routes_of(conn, [row["id"]])[row["id"]]
    given = [{"destination": str(ipaddress.ip_network(r["destination"])),
              "nexthop": r["nexthop"]} for r in routes]
    if adding:
        new = current + [r for r in given if r not in current]
    else:
        new = [r for r in current if r not in given]
    set_routes(conn, row["id"], new)
    conn.execute(routers.update().where(routers.c.id == row["id"]).values(updated_at=utcnow()))
    return router_by_id(conn, row["id"]) or row


def routes_via(conn: sa.Connection, router_id: str, cidr: str) -> list[dict[str, str]]:
    """The router's routes whose nexthop is inside ``cidr``."""
    net = ipaddress.ip_network(cidr)
    return [r for r in routes_of(conn, [router_id])[router_id]
            if ipaddress.ip_address(r["nexthop"]) in net]


def floatingips_via(conn: sa.Connection, router_id: str, cidr: str) -> bool:
    """Whether a floating IP reaches a fixed address inside ``cidr`` through the router."""
    net = ipaddress.ip_network(cidr)
    return any(ipaddress.ip_address(a) in net for a in conn.execute(
        sa.select(floatingips.c.fixed_ip_address).where(
            floatingips.c.router_id == router_id,
            floatingips.c.fixed_ip_address.is_not(None))).scalars())
