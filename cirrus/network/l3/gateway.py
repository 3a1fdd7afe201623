"""A router's external gateway (``external_gateway_info``, ``ext-gw-mode``):
its port on a ``router:external`` network, its fixed IPs and SNAT. Choosing
the fixed IPs or turning SNAT off is for admins (Neutron's
``<verb>_router:external_gateway_info:{external_fixed_ips,enable_snat}``)."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network import ports as port_db
from cirrus.network.l3 import exception as l3_exc
from cirrus.network.l3.owners import ROUTER_GATEWAY
from cirrus.network.l3.router_ports import create_service_port, no_address
from cirrus.network.l3.scheduler import schedule_router
from cirrus.network.models import floatingips, routers, subnets
from cirrus.network.networks import get_network


def _check_rights(ctx: RequestContext, info: dict[str, Any], verb: str) -> None:
    for key in ("external_fixed_ips", "enable_snat"):
        if key in info:
            authz.admin_only(ctx, f"{verb}_router:external_gateway_info:{key}")


def _external_network(conn: sa.Connection, ctx: RequestContext, info: dict[str, Any]
                      ) -> dict[str, Any]:
    network = get_network(conn, ctx, info["network_id"])
    if not network["router_external"]:
        raise exc.BadRequest(reason=f"Bad router request: Network {network['id']} is not an "
                                    f"external network")
    gateways = set(conn.execute(sa.select(subnets.c.gateway_ip).where(
        subnets.c.network_id == network["id"])).scalars())
    for ip in info.get("external_fixed_ips") or []:
        if ip.get("ip_address") in gateways:
            raise exc.BadRequest(reason=f"Bad router request: External IP {ip['ip_address']} "
                                        f"is the same as the gateway IP")
    return network


def set_gateway(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                router: dict[str, Any], info: dict[str, Any] | None, verb: str) -> None:
    """Make the router's gateway ``info`` (None or ``{}``: no gateway)."""
    if not info:
        clear_gateway(conn, router)
        return
    _check_rights(ctx, info, verb)
    network = _external_network(conn, ctx, info)
    current = port_db.port_by_id(conn, router["gw_port_id"]) if router["gw_port_id"] else None
    snat = info.get("enable_snat", True)
    if current is not None and current["network_id"] == network["id"]:
        if "external_fixed_ips" in info:
            port_db.update_port(conn, ctx.elevated(), current["id"],
                                {"fixed_ips": info["external_fixed_ips"]})
        _save(conn, router["id"], gw_port_id=current["id"], enable_snat=snat)
        return
    clear_gateway(conn, router)
    port, fixed = create_service_port(conn, ctx, settings, network, ROUTER_GATEWAY, router["id"],
                                      "", info.get("external_fixed_ips"))
    if not fixed:
        raise no_address(network["id"])
    _save(conn, router["id"], gw_port_id=port["id"], enable_snat=snat)
    schedule_router(conn, router["id"], float(settings.service_down_time))


def clear_gateway(conn: sa.Connection, router: dict[str, Any]) -> None:
    """Remove the router's gateway: 409 while floating IPs reach guests
    through it (``RouterExternalGatewayInUseByFloatingIp``)."""
    if not router["gw_port_id"]:
        return
    port = port_db.port_by_id(conn, router["gw_port_id"])
    used = conn.execute(sa.select(floatingips.c.id).where(
        floatingips.c.router_id == router["id"])).first()
    if used is not None and port is not None:
        raise l3_exc.RouterExternalGatewayInUseByFloatingIp(router_id=router["id"],
                                                            net_id=port["network_id"])
    _save(conn, router["id"], gw_port_id=None, enable_snat=True)
    if port is not None:
        port_db.delete_port_row(conn, port)
    router["gw_port_id"] = None


def _save(conn: sa.Connection, router_id: str, **values: Any) -> None:
    conn.execute(routers.update().where(routers.c.id == router_id).values(
        updated_at=utcnow(), **values))

