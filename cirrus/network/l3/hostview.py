"""What one host's L3 agent must build: the :class:`RouterSpec` of each router
scheduled to it, read from the database in one transaction (the L3 side of
``host_view``)."""
from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa

from cirrus.db.engine import fetch_all
from cirrus.network.host_view import bridge_name
from cirrus.network.l3.owners import ROUTER_GATEWAY, ROUTER_INTERFACE
from cirrus.network.l3.routers import routes_of
from cirrus.network.l3.spec import FloatingIP, Gateway, Route, RouterPort, RouterSpec
from cirrus.network.models import floatingips, ip_allocations, networks, ports, routers, subnets


def load_router_specs(conn: sa.Connection, host: str) -> list[RouterSpec]:
    """The specs of the routers whose ``host`` is ``host``, by router id."""
    rows = fetch_all(conn, sa.select(routers).where(routers.c.host == host)
                     .order_by(routers.c.id))
    if not rows:
        return []
    ids = [r["id"] for r in rows]
    router_ports = fetch_all(conn, sa.select(
        ports.c.id, ports.c.network_id, ports.c.mac_address, ports.c.device_id,
        ports.c.device_owner, networks.c.mtu).join(networks, networks.c.id == ports.c.network_id)
        .where(ports.c.device_id.in_(ids),
               ports.c.device_owner.in_((ROUTER_INTERFACE, ROUTER_GATEWAY)))
        .order_by(ports.c.seq))
    addresses = _addresses(conn, [p["id"] for p in router_ports])
    fips = _floating_ips(conn, ids)
    routes = routes_of(conn, ids)
    return [_spec(row, [p for p in router_ports if p["device_id"] == row["id"]], addresses,
                  fips.get(row["id"], ()), routes[row["id"]]) for row in rows]


def _addresses(conn: sa.Connection, port_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Port id → its addresses with their subnets' CIDR and gateway."""
    out: dict[str, list[dict[str, Any]]] = {}
    if port_ids:
        for row in conn.execute(sa.select(ip_allocations.c.port_id, ip_allocations.c.ip_address,
                                          subnets.c.cidr, subnets.c.gateway_ip)
                                .join(subnets, subnets.c.id == ip_allocations.c.subnet_id)
                                .where(ip_allocations.c.port_id.in_(port_ids))
                                .order_by(ip_allocations.c.ip_address)):
            out.setdefault(row.port_id, []).append(dict(row._mapping))
    return out


def _floating_ips(conn: sa.Connection, router_ids: list[str]) -> dict[str, tuple[FloatingIP, ...]]:
    out: dict[str, list[FloatingIP]] = {}
    for row in conn.execute(sa.select(floatingips).where(
            floatingips.c.router_id.in_(router_ids), floatingips.c.fixed_ip_address.is_not(None))
            .order_by(floatingips.c.floating_ip_address)):
        out.setdefault(row.router_id, []).append(FloatingIP(row.floating_ip_address,
                                                            row.fixed_ip_address))
    return {router: tuple(fips) for router, fips in out.items()}


def _router_port(port: dict[str, Any], addresses: list[dict[str, Any]]) -> RouterPort:
    cidrs = tuple(f"{a['ip_address']}/{ipaddress.ip_network(a['cidr']).prefixlen}"
                  for a in addresses)
    return RouterPort(port_id=port["id"], network_id=port["network_id"],
                      mac_address=port["mac_address"], cidrs=cidrs,
                      bridge=bridge_name(port["network_id"]), mtu=port["mtu"])


def _spec(row: dict[str, Any], router_ports: list[dict[str, Any]],
          addresses: dict[str, list[dict[str, Any]]], fips: tuple[FloatingIP, ...],
          routes: list[dict[str, str]]) -> RouterSpec:
    interfaces = tuple(_router_port(p, addresses.get(p["id"], [])) for p in router_ports
                       if p["device_owner"] == ROUTER_INTERFACE)
    gateway = None
    gw_port = next((p for p in router_ports if p["id"] == row["gw_port_id"]), None)
    if gw_port is not None:
        gw_addresses = addresses.get(gw_port["id"], [])
        gateway = Gateway(port=_router_port(gw_port, gw_addresses),
                          default_gateways=tuple(a["gateway_ip"] for a in gw_addresses
                                                 if a["gateway_ip"]),
                          enable_snat=bool(row["enable_snat"]))
    return RouterSpec(router_id=row["id"], interfaces=interfaces, gateway=gateway,
                      floating_ips=fips if gateway is not None else (),
                      routes=tuple(Route(r["destination"], r["nexthop"]) for r in routes),
                      admin_state_up=bool(row["admin_state_up"]))
