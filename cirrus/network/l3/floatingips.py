"""Floating IPs: an address of a ``router:external`` network (held by a
``network:floatingip`` port there), optionally associated with a fixed IPv4
address of a port that a router with a gateway on that network reaches
(Neutron's ``l3_db`` floating IP half, and ``fip-port-details``)."""
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
from cirrus.network import ports as port_db
from cirrus.network import quotas, tags
from cirrus.network.common import new_id, owned, timestamps_view
from cirrus.network.l3 import exception as l3_exc
from cirrus.network.l3.owners import FLOATINGIP, ROUTER_GATEWAY, ROUTER_INTERFACE
from cirrus.network.l3.router_ports import create_service_port, no_address
from cirrus.network.models import floatingips, ip_allocations, ports, subnets
from cirrus.network.networks import get_network, subnets_of

FIP_COLUMNS = {"id": "id", "project_id": "project_id", "tenant_id": "project_id",
               "floating_ip_address": "floating_ip_address",
               "floating_network_id": "floating_network_id", "router_id": "router_id",
               "port_id": "fixed_port_id", "fixed_ip_address": "fixed_ip_address",
               "status": "status", "description": "description"}
_PORT_DETAILS = ("name", "network_id", "mac_address", "admin_state_up", "status", "device_id",
                 "device_owner")


def bad_fip(msg: str) -> exc.BadRequest:
    """Neutron's ``BadRequest(resource='floatingip')``."""
    return exc.BadRequest(reason=f"Bad floatingip request: {msg}")


def get_floatingip(conn: sa.Connection, ctx: RequestContext, fip_id: str) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(floatingips).where(floatingips.c.id == fip_id))
    if row is None or not owned(ctx, row):
        raise l3_exc.FloatingIPNotFound(floatingip_id=fip_id)
    return row


def floatingip_views(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API's floating IPs, with the details of their ports (``fip-port-details``)."""
    port_ids = [r["fixed_port_id"] for r in rows if r["fixed_port_id"]]
    details = {p["id"]: p for p in fetch_all(conn, sa.select(ports).where(
        ports.c.id.in_(port_ids)))} if port_ids else {}
    return [floatingip_view(r, details.get(r["fixed_port_id"] or ""))
            for r in tags.attach(conn, rows)]


def floatingip_view(row: dict[str, Any], port: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": row["id"], "tenant_id": row["project_id"], "project_id": row["project_id"],
            "floating_ip_address": row["floating_ip_address"],
            "floating_network_id": row["floating_network_id"], "router_id": row["router_id"],
            "port_id": row["fixed_port_id"], "fixed_ip_address": row["fixed_ip_address"],
            "status": row["status"], "description": row["description"],
            "port_details": {k: port[k] for k in _PORT_DETAILS} if port else None,
            "dns_name": "", "dns_domain": "", **timestamps_view(row)}


def _fixed_ips_request(conn: sa.Connection, network: dict[str, Any],
                       values: dict[str, Any]) -> list[dict[str, Any]]:
    """The floating port's one IPv4 address: the one asked for, or the next
    free one of the subnet asked for, or of the network's first IPv4 subnet."""
    v4 = [s for s in subnets_of(conn, [network["id"]]) if s["ip_version"] == 4]
    if values.get("subnet_id") and values["subnet_id"] not in {s["id"] for s in v4}:
        raise bad_fip(f"Subnet {values['subnet_id']} is not an IPv4 subnet of external "
                      f"network {network['id']}")
    item: dict[str, Any] = {}
    if values.get("floating_ip_address"):
        item["ip_address"] = values["floating_ip_address"]
    if values.get("subnet_id"):
        item["subnet_id"] = values["subnet_id"]
    if not item:
        if not v4:
            raise no_address(network["id"])
        item["subnet_id"] = v4[0]["id"]
    return [item]


def create_floatingip(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                      values: dict[str, Any], project: str) -> dict[str, Any]:
    """A floating IP of ``project`` (the caller may create it there) on the
    external network ``values`` names, associated if it names a port."""
    if values.get("floating_ip_address"):
        authz.admin_only(ctx, "create_floatingip:floating_ip_address")
    if values.get("fixed_ip_address") and not values.get("port_id"):
        raise bad_fip("fixed_ip_address cannot be specified without a port_id")
    network = get_network(conn, ctx, values["floating_network_id"])
    if not network["router_external"]:
        raise bad_fip(f"Network {network['id']} is not a valid external network")
    quotas.check(conn, settings, "floatingip", project)
    fip_id = new_id()
    try:
        port, fixed = create_service_port(conn, ctx, settings, network, FLOATINGIP, fip_id, "",
                                          _fixed_ips_request(conn, network, values))
    except exc.IpAddressGenerationFailure:
        raise l3_exc.ExternalIpAddressExhausted(net_id=network["id"]) from None
    row = {"id": fip_id, "project_id": project, "description": values.get("description", ""),
           "floating_ip_address": fixed[0]["ip_address"], "floating_network_id": network["id"],
           "floating_port_id": port["id"], "fixed_port_id": None, "fixed_ip_address": None,
           "router_id": None, "status": "DOWN", "created_at": utcnow(), "updated_at": None}
    if values.get("port_id"):
        row.update(_association(conn, ctx, row, values))
    conn.execute(floatingips.insert().values(**row))
    return row


def update_floatingip(conn: sa.Connection, ctx: RequestContext, fip_id: str,
                      values: dict[str, Any]) -> dict[str, Any]:
    """Associate (``port_id``), disassociate (``port_id: null``) or describe."""
    row = get_floatingip(conn, ctx, fip_id)
    authz.enforce(ctx, "network:update", "floatingip", row)
    changes: dict[str, Any] = {}
    if "description" in values:
        changes["description"] = values["description"]
    if values.get("fixed_ip_address") and not values.get("port_id"):
        raise bad_fip("fixed_ip_address cannot be specified without a port_id")
    if "port_id" in values:
        changes.update(_association(conn, ctx, row, values) if values["port_id"] else
                       {"fixed_port_id": None, "fixed_ip_address": None, "router_id": None,
                        "status": "DOWN"})
    conn.execute(floatingips.update().where(floatingips.c.id == row["id"]).values(
        updated_at=utcnow(), **changes))
    return get_floatingip(conn, ctx, row["id"])


def delete_floatingip(conn: sa.Connection, ctx: RequestContext, fip_id: str) -> None:
    row = get_floatingip(conn, ctx, fip_id)
    authz.enforce(ctx, "network:delete", "floatingip", row)
    tags.delete_tags(conn, [row["id"]])
    conn.execute(floatingips.delete().where(floatingips.c.id == row["id"]))
    port = port_db.port_by_id(conn, row["floating_port_id"])
    if port is not None:
        port_db.delete_port_row(conn, port)


# -- association -----------------------------------------------------------------
def _association(conn: sa.Connection, ctx: RequestContext, fip: dict[str, Any],
                 values: dict[str, Any]) -> dict[str, Any]:
    """The columns associating ``fip`` with ``values``' port (and fixed IP)."""
    port = port_db.get_port(conn, ctx, values["port_id"])
    if port["project_id"] != fip["project_id"] and not ctx.is_admin:
        raise bad_fip(f"Cannot process floating IP association with Port {port['id']}, since "
                      f"that port is owned by a different project")
    if port["device_owner"].startswith("network:"):
        raise bad_fip(f"Port {port['id']} is unable to be assigned a floating IP")
    subnet_id, address = _internal_address(conn, port, values.get("fixed_ip_address"))
    router_id = router_for_floatingip(conn, port, subnet_id, fip["floating_network_id"])
    taken = conn.execute(sa.select(floatingips.c.id).where(
        floatingips.c.fixed_port_id == port["id"], floatingips.c.fixed_ip_address == address,
        floatingips.c.id != fip["id"])).scalar()
    if taken is not None:
        raise l3_exc.FloatingIPPortAlreadyAssociated(
            port_id=port["id"], fip_id=fip["id"], floating_ip_address=fip["floating_ip_address"],
            fixed_ip=address, net_id=fip["floating_network_id"])
    return {"fixed_port_id": port["id"], "fixed_ip_address": address, "router_id": router_id,
            "status": "ACTIVE"}


def _internal_address(conn: sa.Connection, port: dict[str, Any],
                      wanted: str | None) -> tuple[str, str]:
    """(subnet id, address) of the port's fixed IPv4 address to associate."""
    fixed = port_db.fixed_ips_of(conn, [port["id"]])[port["id"]]
    if wanted:
        if ipaddress.ip_address(wanted).version != 4:
            raise bad_fip(f"Cannot process floating IP association with {wanted}, since that "
                          f"is not an IPv4 address")
        found = [ip for ip in fixed if ip["ip_address"] == wanted]
        if not found:
            raise bad_fip(f"Port {port['id']} does not have fixed ip {wanted}")
        return found[0]["subnet_id"], wanted
    v4 = [ip for ip in fixed if ipaddress.ip_address(ip["ip_address"]).version == 4]
    if not v4:
        raise bad_fip(f"Cannot add floating IP to port {port['id']} that has no fixed IPv4 "
                      f"addresses")
    if len(v4) > 1:
        raise bad_fip(f"Port {port['id']} has multiple fixed IPv4 addresses.  Must provide a "
                      f"specific IPv4 address when assigning a floating IP")
    return v4[0]["subnet_id"], v4[0]["ip_address"]


def router_for_floatingip(conn: sa.Connection, port: dict[str, Any], subnet_id: str,
                          external_network_id: str) -> str:
    """A router with an interface on ``subnet_id`` and a gateway on the
    external network (the one holding the subnet's gateway address first);
    404 ``ExternalGatewayForFloatingIPNotFound`` if none."""
    gw = ports.alias("gw")
    rows = conn.execute(
        sa.select(ports.c.device_id, ip_allocations.c.ip_address)
        .join(ip_allocations, ip_allocations.c.port_id == ports.c.id)
        .join(gw, sa.and_(gw.c.device_id == ports.c.device_id,
                          gw.c.device_owner == ROUTER_GATEWAY,
                          gw.c.network_id == external_network_id))
        .where(ports.c.device_owner == ROUTER_INTERFACE,
               ports.c.network_id == port["network_id"],
               ip_allocations.c.subnet_id == subnet_id)
        .order_by(ports.c.seq)).all()
    if not rows:
        raise l3_exc.ExternalGatewayForFloatingIPNotFound(
            subnet_id=subnet_id, external_network_id=external_network_id, port_id=port["id"])
    gateway_ip = conn.execute(sa.select(subnets.c.gateway_ip).where(
        subnets.c.id == subnet_id)).scalar()
    return str(next((r.device_id for r in rows if r.ip_address == gateway_ip), rows[0].device_id))
