"""A router's interfaces (``add_router_interface``/``remove_router_interface``):
ports of the router on internal subnets, by subnet (a new port holding the
subnet's gateway address) or by an existing port of the caller's. One router
never has two interfaces on overlapping subnets, nor one on an external
network (that is its gateway's place)."""
from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network import ipam
from cirrus.network import ports as port_db
from cirrus.network.l3 import exception as l3_exc
from cirrus.network.l3.owners import DHCP, ROUTER_INTERFACE
from cirrus.network.l3.router_ports import create_service_port
from cirrus.network.l3.routers import bad_router, floatingips_via, get_router, routes_via
from cirrus.network.l3.scheduler import schedule_router
from cirrus.network.models import ip_allocations, ports, subnets
from cirrus.network.networks import get_subnet, network_by_id


def interface_info(router: dict[str, Any], port: dict[str, Any],
                   subnet_ids: list[str]) -> dict[str, Any]:
    """The answer of both interface actions (Neutron's ``_make_router_interface_info``)."""
    return {"id": router["id"], "tenant_id": port["project_id"],
            "project_id": port["project_id"], "port_id": port["id"],
            "network_id": port["network_id"], "subnet_id": subnet_ids[-1] if subnet_ids else None,
            "subnet_ids": subnet_ids}


def _interface_subnets(conn: sa.Connection, router_id: str) -> list[dict[str, Any]]:
    """The subnets the router has interfaces on."""
    return [dict(r._mapping) for r in conn.execute(
        sa.select(subnets.c.id, subnets.c.cidr).distinct()
        .join(ip_allocations, ip_allocations.c.subnet_id == subnets.c.id)
        .join(ports, ports.c.id == ip_allocations.c.port_id)
        .where(ports.c.device_id == router_id, ports.c.device_owner == ROUTER_INTERFACE))]


def _check_new_subnets(conn: sa.Connection, router_id: str, new: list[dict[str, Any]]) -> None:
    """400 if ``new`` subnets are on the router already or overlap its others."""
    for existing in _interface_subnets(conn, router_id):
        for subnet in new:
            if subnet["id"] == existing["id"]:
                raise bad_router(f"Router already has a port on subnet {subnet['id']}")
            a, b = ipaddress.ip_network(existing["cidr"]), ipaddress.ip_network(subnet["cidr"])
            if a.version == b.version and a.overlaps(b):
                raise bad_router(f"Cidr {subnet['cidr']} of subnet {subnet['id']} overlaps "
                                 f"with cidr {existing['cidr']} of subnet {existing['id']}")


def _internal_network(conn: sa.Connection, network_id: str) -> dict[str, Any]:
    network = network_by_id(conn, network_id) or {}
    if network.get("router_external"):
        raise bad_router(f"Router interface cannot be attached to external network "
                         f"{network_id}")
    return network


def add_interface(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                  router_id: str, info: dict[str, str]) -> dict[str, Any]:
    """Attach the router to ``info``'s subnet or port; its interface info."""
    router = get_router(conn, ctx, router_id)
    authz.enforce(ctx, "network:update", "router", router)
    if "port_id" in info:
        port, subnet_ids = _add_by_port(conn, ctx, router, info["port_id"])
    else:
        port, subnet_ids = _add_by_subnet(conn, ctx, settings, router, info["subnet_id"])
    schedule_router(conn, router["id"], float(settings.service_down_time))
    return interface_info(router, port, subnet_ids)


def _add_by_subnet(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                   router: dict[str, Any], subnet_id: str) -> tuple[dict[str, Any], list[str]]:
    subnet = get_subnet(conn, ctx, subnet_id)
    network = _internal_network(conn, subnet["network_id"])
    if not subnet["gateway_ip"]:
        raise bad_router("Subnet for router interface must have a gateway IP")
    _check_new_subnets(conn, router["id"], [subnet])
    port, _ = create_service_port(conn, ctx, settings, network, ROUTER_INTERFACE, router["id"],
                                  subnet["project_id"], [])
    ipam.allocate_gateway(conn, subnet, port["id"])
    if subnet["enable_dhcp"] and subnet["ip_version"] == 4:
        ensure_dhcp_address(conn, ctx, settings, network, subnet)
    return port, [subnet["id"]]


def ensure_dhcp_address(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                        network: dict[str, Any], subnet: dict[str, Any]) -> None:
    """The network's DHCP port (``network:dhcp``, made if missing, as Neutron
    always has one) has an address on ``subnet``: with the gateway on the
    router, that is where the host's dnsmasq answers from."""
    dhcp = conn.execute(sa.select(ports.c.id).where(
        ports.c.network_id == network["id"], ports.c.device_owner == DHCP)
        .order_by(ports.c.seq)).scalar()
    if dhcp is None:
        create_service_port(conn, ctx, settings, network, DHCP, f"dhcp-{network['id']}",
                            network["project_id"], [{"subnet_id": subnet["id"]}])
        return
    fixed = port_db.fixed_ips_of(conn, [dhcp])[dhcp]
    if subnet["id"] not in {ip["subnet_id"] for ip in fixed}:
        ipam.allocate_ip(conn, subnet, dhcp)


def _add_by_port(conn: sa.Connection, ctx: RequestContext, router: dict[str, Any],
                 port_id: str) -> tuple[dict[str, Any], list[str]]:
    port = port_db.get_port(conn, ctx, port_id)
    if port["device_id"] or port["device_owner"]:
        raise exc.PortInUse(port_id=port["id"])
    _internal_network(conn, port["network_id"])
    fixed = port_db.fixed_ips_of(conn, [port["id"]])[port["id"]]
    if not fixed:
        raise bad_router("Router port must have at least one fixed IP")
    by_id = port_db.subnets_by_id(conn, [ip["subnet_id"] for ip in fixed])
    if sum(1 for s in by_id.values() if s["ip_version"] == 4) > 1:
        raise bad_router("Cannot have multiple IPv4 subnets on router port")
    _check_new_subnets(conn, router["id"], list(by_id.values()))
    port_db.update_port(conn, ctx.elevated(), port["id"],
                        {"device_id": router["id"], "device_owner": ROUTER_INTERFACE})
    return port, [ip["subnet_id"] for ip in fixed]


def remove_interface(conn: sa.Connection, ctx: RequestContext, router_id: str,
                     info: dict[str, str]) -> dict[str, Any]:
    """Detach the router from ``info``'s port or subnet, deleting the
    interface port; 409 while floating IPs or routes depend on it."""
    router = get_router(conn, ctx, router_id)
    authz.enforce(ctx, "network:update", "router", router)
    port = _interface_port(conn, router["id"], info)
    fixed = port_db.fixed_ips_of(conn, [port["id"]])[port["id"]]
    if "subnet_id" in info and info["subnet_id"] not in {ip["subnet_id"] for ip in fixed}:
        raise exc.BadRequest(reason=f"Subnet {info['subnet_id']} is not on port {port['id']}")
    for subnet in port_db.subnets_by_id(conn, [ip["subnet_id"] for ip in fixed]).values():
        if floatingips_via(conn, router["id"], subnet["cidr"]):
            raise l3_exc.RouterInterfaceInUseByFloatingIP(router_id=router["id"],
                                                          subnet_id=subnet["id"])
        if routes_via(conn, router["id"], subnet["cidr"]):
            raise l3_exc.RouterInterfaceInUseByRoute(router_id=router["id"],
                                                     subnet_id=subnet["id"])
    port_db.delete_port_row(conn, port)
    return interface_info(router, port, [ip["subnet_id"] for ip in fixed])


def _interface_port(conn: sa.Connection, router_id: str, info: dict[str, str]) -> dict[str, Any]:
    """The router's interface port that ``info`` names (its id, or a subnet it is on)."""
    if "port_id" in info:
        port = port_db.port_by_id(conn, info["port_id"])
        if port is None or port["device_id"] != router_id \
                or port["device_owner"] != ROUTER_INTERFACE:
            raise l3_exc.RouterInterfaceNotFound(router_id=router_id, port_id=info["port_id"])
        return port
    found = conn.execute(sa.select(ports.c.id).join(
        ip_allocations, ip_allocations.c.port_id == ports.c.id).where(
        ports.c.device_id == router_id, ports.c.device_owner == ROUTER_INTERFACE,
        ip_allocations.c.subnet_id == info["subnet_id"])).scalar()
    port = port_db.port_by_id(conn, found) if found else None
    if port is None:
        raise l3_exc.RouterInterfaceNotFoundForSubnet(router_id=router_id,
                                                      subnet_id=info["subnet_id"])
    return port
