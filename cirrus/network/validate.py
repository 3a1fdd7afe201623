"""Checks of a server create's networks before the 202 (Nova's
``validate_networks``): requests that can never work are refused, and the
port quota says how many of the servers fit."""
from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.network import exception as exc
from cirrus.network import ipam
from cirrus.network import ports as port_db
from cirrus.network import quotas
from cirrus.network.allocate import available_networks
from cirrus.network.models import ip_allocations
from cirrus.network.models import ports as port_table
from cirrus.network.networks import subnets_of
from cirrus.network.validators import shown


def check_requests(conn: sa.Connection, settings: Settings, ctx: RequestContext,
                   requested_networks: Any, num_instances: int,
                   count_ports: bool = True) -> int:
    """The requested ports and networks checked (PortInUse, NetworkNotFound,
    ExternalNetworkAttachForbidden, the fixed IPs); how many of
    ``num_instances`` the port quota leaves room for (all of them unless
    ``count_ports``: the create's statement checks it)."""
    net_ids, port_count = [], 0
    for req in requested_networks:
        if req.get("port_id"):
            port = port_db.get_port(conn, ctx, req["port_id"])
            if port["device_id"]:
                raise exc.PortInUse(port_id=req["port_id"])
            port_count += 1
        elif req.get("network_id"):
            net_ids.append(req["network_id"])
    nets = available_networks(conn, ctx, ctx.project_id or "", net_ids)
    for net in nets:
        if net["router_external"] and not net["shared"] and not ctx.is_admin:
            raise exc.ExternalNetworkAttachForbidden(network_uuid=net["id"])
    _check_fixed_ips(conn, [(r["network_id"], r["fixed_ip"]) for r in requested_networks
                            if r.get("fixed_ip") and not r.get("port_id")])
    if not count_ports:
        return num_instances
    count = 1 if port_count else num_instances
    return ports_fit(conn, settings, ctx.project_id or "", len(net_ids), count)


def ports_fit(conn: sa.Connection, settings: Settings, project_id: str, per_instance: int,
              num_instances: int) -> int:
    """How many of ``num_instances`` servers needing ``per_instance`` new
    ports each the project's port quota leaves room for (Nova's
    ``validate_networks``); PortLimitExceeded if it is over already."""
    if not per_instance:
        return num_instances
    # The project's own limit when an admin set one: read even when the
    # default is unlimited.
    limit, used = quotas.port_limit_and_use(conn, settings, project_id)
    return ports_fit_in(limit, used, per_instance, num_instances)


def ports_fit_in(limit: int, used: int, per_instance: int, num_instances: int) -> int:
    """:func:`ports_fit` of the project's port ``limit`` and ``used`` ports,
    read already (a create's statement carries the read on PostgreSQL)."""
    if limit < 0:
        return num_instances
    if used > limit:
        raise exc.PortLimitExceeded(f"The number of defined ports: {used} is over the "
                                    f"limit: {limit}")
    return min(num_instances, (limit - used) // per_instance)


def _check_fixed_ips(conn: sa.Connection, requested: list[tuple[str, Any]]) -> None:
    """Each (network id, fixed IP) of a server create is an address a subnet
    of the network can give and no port holds, asked once (Nova refuses
    these at the API, with 400)."""
    for i, (net_id, address) in enumerate(requested):
        if (net_id, address) in requested[:i]:
            raise exc.InvalidFixedIp(reason=f"Fixed IP {shown(address)} is requested more than "
                                            f"once on network {net_id}.")
        subnets = subnets_of(conn, [net_id])
        subnet_id = port_db.subnet_for_address(subnets, address)
        if subnet_id is None:
            raise exc.InvalidFixedIp(reason=f"IP address {shown(address)} is not a valid IP for "
                                            f"any subnet on network {net_id}.")
        subnet = next(s for s in subnets if s["id"] == subnet_id)
        reason = ipam.unusable_reason(subnet, address)
        if reason:
            raise exc.InvalidFixedIp(reason=reason)
        holder = conn.execute(sa.select(port_table.c.device_id).select_from(ip_allocations.join(
            port_table, port_table.c.id == ip_allocations.c.port_id)).where(
            ip_allocations.c.network_id == net_id,
            ip_allocations.c.ip_address == str(ipaddress.ip_address(address)))).first()
        if holder is not None:
            raise exc.FixedIpAlreadyInUse(address=address, instance_uuid=holder.device_id)
