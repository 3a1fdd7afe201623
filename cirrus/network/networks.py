"""Networks and subnets: the records, their rules, their views."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.db.rows import PreparedRead
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network import ipam, subnet_rules, subnetpools, tags
from cirrus.network import security_groups as sg_db
from cirrus.network.common import new_id, owned, timestamps_view
from cirrus.network.models import floatingips, ip_allocations, networks, ports, subnets
from cirrus.network.segments import Segment, SegmentConfig, allocate, check_mtu

NETWORK_COLUMNS = {"id": "id", "name": "name", "project_id": "project_id",
                   "tenant_id": "project_id", "shared": "shared", "router:external": "router_external",
                   "status": "status", "admin_state_up": "admin_state_up", "mtu": "mtu"}
# Filters only admins may list by (the attributes only they see).
PROVIDER_COLUMNS = {"provider:network_type": "network_type",
                    "provider:physical_network": "physical_network",
                    "provider:segmentation_id": "segmentation_id"}
SUBNET_COLUMNS = {"id": "id", "name": "name", "network_id": "network_id", "project_id": "project_id",
                  "tenant_id": "project_id", "ip_version": "ip_version", "cidr": "cidr",
                  "enable_dhcp": "enable_dhcp", "gateway_ip": "gateway_ip",
                  "subnetpool_id": "subnetpool_id"}


def visible_network(ctx: RequestContext, row: dict[str, Any]) -> bool:
    """The caller's own networks, and shared or external ones (to any project)."""
    return owned(ctx, row) or (bool(ctx.project_id) and (row["shared"] or row["router_external"]))


def visible_networks_clause(ctx: RequestContext) -> Any:
    """:func:`visible_network` as a WHERE clause (None: every row, for admins)."""
    if ctx.is_admin:
        return None
    if not ctx.project_id:
        return sa.false()
    return sa.or_(networks.c.project_id == ctx.project_id, networks.c.shared.is_(True),
                  networks.c.router_external.is_(True))


def visible_subnets_clause(ctx: RequestContext) -> Any:
    """The caller's own subnets and those of its own and shared networks (an
    external network's subnets are its owner's to see, as in Neutron without
    ``subnet-external-network``)."""
    if ctx.is_admin:
        return None
    if not ctx.project_id:
        return sa.false()
    return sa.or_(subnets.c.project_id == ctx.project_id, subnets.c.network_id.in_(
        sa.select(networks.c.id).where(sa.or_(networks.c.project_id == ctx.project_id,
                                              networks.c.shared.is_(True)))))


# Built once: boots, port creations and deletions read networks by id.
_NETWORK_BY_ID = PreparedRead(sa.select(networks).where(networks.c.id == sa.bindparam("w_id")))


def network_by_id(conn: sa.Connection, net_id: str) -> dict[str, Any] | None:
    """The network row ``net_id``, or None (no visibility check)."""
    return _NETWORK_BY_ID.first(conn, w_id=net_id)


def get_network(conn: sa.Connection, ctx: RequestContext, net_id: str) -> dict[str, Any]:
    row = network_by_id(conn, net_id)
    if row is None or not visible_network(ctx, row):
        raise exc.NetworkNotFound(net_id=net_id)
    return row


# Built once: a boot reads its network's subnets.
_SUBNETS_OF_ONE = PreparedRead(sa.select(subnets).where(
    subnets.c.network_id == sa.bindparam("w_network")).order_by(subnets.c.created_at, subnets.c.id))


# A boot's one read of its network (``BootRead``): the network, each of its
# subnets (a row each, the subnet's columns as ``subnet_<name>``; one row of
# NULLs without any) and the project's default group (DEFAULT_GROUP_COLUMNS).
_SUBNET_PREFIX = "subnet_"


def boot_read_of(source: Any, where: Any) -> PreparedRead:
    """The read of a boot's network from ``source`` (joined to ``networks``)
    where ``where``, its subnets and the project's (``w_project``) default group."""
    return PreparedRead(
        sa.select(networks, *(c.label(_SUBNET_PREFIX + c.name) for c in subnets.c),
                  *sg_db.DEFAULT_GROUP_COLUMNS)
        .select_from(source.outerjoin(subnets, subnets.c.network_id == networks.c.id))
        .where(where).order_by(subnets.c.created_at, subnets.c.id))


@dataclass
class BootRead:
    """A boot's network as its allocation reads it, in one statement."""

    network: dict[str, Any]
    subnets: list[dict[str, Any]]  # as subnets_of gives them
    groups: dict[str, Any]  # the project's DEFAULT_GROUP_COLUMNS

    @property
    def default_groups(self) -> list[str] | None:
        """``resolve(["default"])``: the default group's id (None: not made
        yet), or its error — raised only when asked, where resolve would."""
        return sg_db.resolved_default(self.groups)


def boot_read(read: PreparedRead, conn: sa.Connection, **params: Any) -> BootRead | None:
    """``read`` (built by :func:`boot_read_of`) run; None without a network."""
    rows = read.all(conn, **params)
    if not rows:
        return None
    network = {c.name: rows[0][c.name] for c in networks.c}
    found = [{c.name: row[_SUBNET_PREFIX + c.name] for c in subnets.c} for row in rows
             if row[_SUBNET_PREFIX + "id"] is not None]
    return BootRead(network, found, {c.name: rows[0][c.name]
                                     for c in sg_db.DEFAULT_GROUP_COLUMNS})


_NETWORK_FOR_BOOT = boot_read_of(networks, networks.c.id == sa.bindparam("w_network"))


def network_for_boot(conn: sa.Connection, project_id: str, network_id: str) -> BootRead | None:
    """A boot's network by id (no visibility check), its subnets and
    ``project_id``'s default group, in one read; None if there is no such network."""
    return boot_read(_NETWORK_FOR_BOOT, conn, w_project=project_id, w_network=network_id)


def subnets_to_allocate(conn: sa.Connection, network_id: str
                        ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``subnets_of`` one network, and the number of addresses allocated on
    each subnet by id as this transaction sees it (the IPAM's first guess, see
    ipam.allocate_ip): the subnet's ``allocated`` counter, read with its row."""
    rows = _SUBNETS_OF_ONE.all(conn, w_network=network_id)
    return rows, counts_to_allocate(conn, rows)


def counts_to_allocate(conn: sa.Connection, rows: list[dict[str, Any]]) -> dict[str, int]:
    """The addresses allocated on each subnet of ``rows`` (read in this
    transaction) by id, as this transaction sees them."""
    return {row["id"]: ipam.with_earlier_units(conn, row["id"], row["allocated"]) for row in rows}


def subnets_of(conn: sa.Connection, network_ids: list[str]) -> list[dict[str, Any]]:
    if not network_ids:
        return []
    if len(network_ids) == 1:
        return _SUBNETS_OF_ONE.all(conn, w_network=network_ids[0])
    return fetch_all(conn, sa.select(subnets).where(subnets.c.network_id.in_(network_ids))
                     .order_by(subnets.c.created_at, subnets.c.id))


def network_view(row: dict[str, Any], subnet_ids: list[str], admin: bool = False) -> dict[str, Any]:
    """The API's network; the ``provider:*`` attributes for admins only
    (Neutron's provider extension policy)."""
    provider = Segment.of(row).view() if admin else {}
    return {"id": row["id"], "name": row["name"], "tenant_id": row["project_id"],
            "project_id": row["project_id"], "shared": row["shared"],
            "router:external": row["router_external"],
            "port_security_enabled": row["port_security_enabled"], "mtu": row["mtu"],
            "status": row["status"], "admin_state_up": row["admin_state_up"],
            "description": row["description"], "subnets": subnet_ids,
            "availability_zone_hints": [], "availability_zones": ["nova"],
            "ipv4_address_scope": None, "ipv6_address_scope": None, "is_default": False,
            "l2_adjacency": True, "dns_domain": row.get("dns_domain") or "",
            **provider, **timestamps_view(row)}


def subnet_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "network_id": row["network_id"],
            "tenant_id": row["project_id"], "project_id": row["project_id"],
            "ip_version": row["ip_version"], "cidr": row["cidr"], "gateway_ip": row["gateway_ip"],
            "enable_dhcp": row["enable_dhcp"], "dns_nameservers": row["dns_nameservers"],
            "host_routes": row["host_routes"], "allocation_pools": row["allocation_pools"],
            "ipv6_address_mode": row["ipv6_address_mode"], "ipv6_ra_mode": row["ipv6_ra_mode"],
            "description": row["description"], "subnetpool_id": row.get("subnetpool_id"),
            "service_types": [],
            "dns_publish_fixed_ip": False, **timestamps_view(row)}


def create_network(conn: sa.Connection, ctx: RequestContext, values: dict[str, Any],
                   config: SegmentConfig | None = None,
                   segment: Segment | None = None) -> dict[str, Any]:
    """A network from ``values`` on ``segment`` (checked by the caller; None:
    the tenant type of ``config``, default local), its MTU at most what the
    segment's underlay carries (400 beyond; default that maximum)."""
    config = config or SegmentConfig()

    def insert(seg: Segment) -> dict[str, Any]:
        mtu = values.get("mtu", config.max_mtu(seg))
        check_mtu(config, seg, mtu)
        row = {"id": new_id(), "name": values.get("name", ""),
               "project_id": values.get("project_id") or ctx.project_id,
               "shared": values.get("shared", False),
               "router_external": values.get("router_external", False),
               "port_security_enabled": values.get("port_security_enabled", True),
               "mtu": mtu, "status": "ACTIVE", "admin_state_up": values.get("admin_state_up", True),
               "description": values.get("description", ""),
               "auto_allocated": values.get("auto_allocated", False), "created_at": utcnow(),
               "network_type": seg.network_type.value, "physical_network": seg.physical_network,
               "segmentation_id": seg.segmentation_id,
               "dns_domain": values.get("dns_domain", "")}
        conn.execute(networks.insert().values(**row))
        return row
    return allocate(conn, config, segment, insert)


def update_network(conn: sa.Connection, ctx: RequestContext, net_id: str,
                   values: dict[str, Any], config: SegmentConfig | None = None) -> dict[str, Any]:
    """Apply ``values`` (checked columns) to network ``net_id``: 404 unless the
    caller sees it, 403 unless it may change it, 400 for an MTU its segment
    cannot carry."""
    row = get_network(conn, ctx, net_id)
    authz.enforce(ctx, "network:update", "network", row)
    if "mtu" in values:
        check_mtu(config or SegmentConfig(), Segment.of(row), values["mtu"])
    if values:
        conn.execute(networks.update().where(networks.c.id == row["id"]).values(
            updated_at=utcnow(), **values))
    return row


def delete_network(conn: sa.Connection, ctx: RequestContext, net_id: str) -> dict[str, Any]:
    """Delete network ``net_id`` with its subnets: 404 unless the caller sees
    it, 403 unless it may delete it, 409 while ports use it."""
    row = get_network(conn, ctx, net_id)
    authz.enforce(ctx, "network:delete", "network", row)
    in_use = conn.execute(sa.select(ports.c.id).where(
        ports.c.network_id == net_id, _holds_network,
        ports.c.device_owner != "network:floatingip")).first()
    if in_use:
        raise exc.NetworkInUse(net_id=net_id)
    # Its floating IPs go with it (Neutron's, associated or not).
    conn.execute(floatingips.delete().where(floatingips.c.floating_network_id == net_id))
    gone = [net_id, *conn.execute(sa.select(ports.c.id).where(ports.c.network_id == net_id))
            .scalars(), *conn.execute(sa.select(subnets.c.id).where(subnets.c.network_id == net_id))
            .scalars()]
    tags.delete_tags(conn, gone)
    conn.execute(ports.delete().where(ports.c.network_id == net_id))
    conn.execute(subnets.delete().where(subnets.c.network_id == net_id))
    conn.execute(networks.delete().where(networks.c.id == net_id))
    return row


# The ports that keep a network or subnet from going: all but the DHCP
# ports the network service made for itself (a router's interfaces, gateways
# and floating IPs go through the L3 API first, as in Neutron).
_holds_network = sa.or_(~ports.c.device_owner.like("network:%"),
                        ports.c.device_owner.in_(("network:router_interface",
                                                  "network:router_gateway",
                                                  "network:floatingip")))


def _check_cidr(conn: sa.Connection, network_id: str, cidr: str, version: int | None) -> Any:
    try:
        net = ipaddress.ip_network(cidr, strict=True)
    except ValueError as err:
        raise exc.InvalidInput(reason=f"'{cidr}' is not a valid IP subnet: {err}") from None
    if version is not None and net.version != version:
        raise exc.InvalidInput(reason=f"Cidr {cidr} does not match ip_version {version}")
    for other in subnets_of(conn, [network_id]):
        other_net = ipaddress.ip_network(other["cidr"])
        if other_net.version == net.version and other_net.overlaps(net):
            raise exc.InvalidInput(reason=f"Requested subnet with cidr: {cidr} for network: "
                                          f"{network_id} overlaps with another subnet")
    return net


def create_subnet(conn: sa.Connection, ctx: RequestContext, values: dict[str, Any],
                  network: dict[str, Any] | None = None) -> dict[str, Any]:
    """A subnet from ``values`` (its project, if absent, the caller's) on its
    network (``network``, when the caller read it), checked by subnet_rules."""
    if network is None:
        network = get_network(conn, ctx, values["network_id"])
    pool = subnetpools.pool_for_subnet(conn, ctx, values)
    if pool is None and not values.get("cidr"):
        raise exc.BadRequest(reason="A cidr must be specified in the absence of a subnet pool")
    if pool is not None and values.get("ip_version", pool["ip_version"]) != pool["ip_version"]:
        raise exc.BadRequest(reason=f"Cannot allocate IPv{values['ip_version']} subnet from "
                                    f"IPv{pool['ip_version']} subnet pool")
    cidr = (subnetpools.allocate(conn, pool, values.get("cidr"), values.get("prefixlen"))
            if pool is not None else values["cidr"])
    net = _check_cidr(conn, network["id"], cidr, values.get("ip_version"))
    row = {"id": new_id(), "network_id": network["id"],
           "subnetpool_id": pool["id"] if pool is not None else None,
           "project_id": values.get("project_id") or ctx.project_id, "name": values.get("name", ""),
           "ip_version": net.version, "cidr": str(net),
           **subnet_rules.for_create(net, values),
           "ipv6_address_mode": values.get("ipv6_address_mode"),
           "ipv6_ra_mode": values.get("ipv6_ra_mode"), "description": values.get("description", ""),
           "created_at": utcnow()}
    conn.execute(subnets.insert().values(**row))
    if ipam.is_auto_address(row):
        _address_existing_ports(conn, row)
    return row


def _address_existing_ports(conn: sa.Connection, subnet: dict[str, Any]) -> None:
    """A new automatic-address subnet gives each port already on its network
    its EUI-64 address there, as Neutron does (router interfaces excepted)."""
    for port in conn.execute(sa.select(ports.c.id, ports.c.mac_address).where(
            ports.c.network_id == subnet["network_id"],
            ~ports.c.device_owner.like("network:router%"))):
        ipam.allocate_eui64(conn, subnet, port.id, port.mac_address)


def update_subnet(conn: sa.Connection, ctx: RequestContext, subnet_id: str,
                  values: dict[str, Any]) -> None:
    """Apply ``values`` to subnet ``subnet_id``, checked against it by
    subnet_rules: 404 unless the caller sees it, 403 unless it may change it."""
    row = get_subnet(conn, ctx, subnet_id)
    authz.enforce(ctx, "network:update", "subnet", row)
    values = subnet_rules.for_update(row, values)
    if values:
        conn.execute(subnets.update().where(subnets.c.id == row["id"]).values(
            updated_at=utcnow(), **values))


def get_subnet(conn: sa.Connection, ctx: RequestContext, subnet_id: str) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(subnets).where(subnets.c.id == subnet_id))
    if row is None:
        raise exc.SubnetNotFound(subnet_id=subnet_id)
    if not owned(ctx, row):
        network = network_by_id(conn, row["network_id"])
        if network is None or not (owned(ctx, network) or network["shared"]):
            raise exc.SubnetNotFound(subnet_id=subnet_id)
    return row


def delete_subnet(conn: sa.Connection, ctx: RequestContext, subnet_id: str) -> dict[str, Any]:
    """Delete subnet ``subnet_id``: 404 unless the caller sees it, 403 unless
    it may delete it, 409 while a port has an address on it (but for the
    automatic ones of SLAAC and DHCPv6-stateless subnets)."""
    row = get_subnet(conn, ctx, subnet_id)
    authz.enforce(ctx, "network:delete", "subnet", row)
    # The EUI-64 addresses of an automatic-address subnet go with it (Neutron
    # removes them from the ports); only a router's interface holds it.
    holders = ports.c.device_owner.like("network:router%") if ipam.is_auto_address(row) \
        else _holds_network
    used = conn.execute(sa.select(ip_allocations.c.port_id).join(
        ports, ports.c.id == ip_allocations.c.port_id).where(
        ip_allocations.c.subnet_id == subnet_id, holders)).first()
    if used:
        raise exc.SubnetInUse(subnet_id=subnet_id)
    conn.execute(ip_allocations.delete().where(ip_allocations.c.subnet_id == subnet_id))
    tags.delete_tags(conn, [subnet_id])
    conn.execute(subnets.delete().where(subnets.c.id == subnet_id))
    return row
