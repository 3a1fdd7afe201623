"""What one compute host's networking needs from the database, in one read.

The ``linuxbridge`` backend renders DHCP and firewall state from a
:class:`HostView` and re-reads it every few seconds, which is how changes made
in the API process (security group rules, subnets) reach the host.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from cirrus.db.engine import fetch_all
from cirrus.network.agents import DHCP, Agent, alive_agents, disabled_hosts
from cirrus.network.backends.firewall import PortFilter, Rule
from cirrus.network.l2pop import dhcp_host
from cirrus.network.model import devname
from cirrus.network.models import (ip_allocations, networks, ports, routers, security_groups,
                                   subnets)
from cirrus.network.security_groups import rules_of
from cirrus.network.segments import NetworkType


def bridge_name(network_id: str) -> str:
    """The Linux bridge of a network (the VIF model's ``network.bridge``)."""
    return "brq" + network_id[:11]


@dataclass
class HostView:
    """Ports bound to one host with their networks, subnets and filters; for
    networks spanning hosts, their ports everywhere and their DHCP host."""

    networks: dict[str, dict[str, Any]] = field(default_factory=dict)
    subnets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Port rows bound here, each with ``fixed_ips``: [{subnet_id, ip_address}].
    ports: list[dict[str, Any]] = field(default_factory=list)
    filters: list[PortFilter] = field(default_factory=list)
    # The network agents alive, by host.
    agents: dict[str, Agent] = field(default_factory=dict)
    # Spanning networks of ``networks`` (those with ports here, and those this
    # host serves DHCP for): the host serving their DHCP (None: no agent may),
    # and every port bound to them on any host (with ``fixed_ips``).
    dhcp_hosts: dict[str, str | None] = field(default_factory=dict)
    span_ports: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Subnets whose gateway address a router interface holds (routed by an
    # L3 router, not the host): subnet id → the address the bridge holds
    # instead, its DHCP port's (None: none yet, the bridge holds no address there).
    routed: dict[str, str | None] = field(default_factory=dict)

    def bridge_subnets(self, network_id: str) -> list[dict[str, Any]]:
        """The network's subnets as the host bridge holds them: a routed
        subnet with its DHCP port's address in place of the gateway (the
        router holds the gateway; guests must not see two)."""
        out = []
        for subnet in self.subnets.get(network_id, []):
            if subnet["id"] in self.routed:
                subnet = {**subnet, "gateway_ip": self.routed[subnet["id"]]}
            out.append(subnet)
        return out

    def dhcp_subnets(self, network_id: str) -> list[dict[str, Any]]:
        """The network's subnets as its DHCP server hands them out: the real
        gateway as the router, and on a routed subnet the bridge's own
        address (``dhcp_server_ip``) as the next hop to the metadata proxy,
        which listens on the bridge, not in the router."""
        return [{**s, "dhcp_server_ip": self.routed[s["id"]]} if self.routed.get(s["id"]) else s
                for s in self.subnets.get(network_id, [])]

    def ports_of(self, network_id: str) -> list[dict[str, Any]]:
        return [p for p in self.ports if p["network_id"] == network_id]

    def serves_dhcp(self, network_id: str, host: str) -> bool:
        """Whether ``host`` runs the network's dnsmasq and holds its gateway:
        a local network's every host, a spanning network's DHCP host."""
        return network_id not in self.dhcp_hosts or self.dhcp_hosts[network_id] == host

    def dhcp_ports(self, network_id: str) -> list[dict[str, Any]]:
        """The ports the network's DHCP server answers here."""
        if network_id in self.dhcp_hosts:
            return self.span_ports.get(network_id, [])
        return self.ports_of(network_id)


def load_host_view(conn: sa.Connection, host: str, down_time: float = 60.0) -> HostView:
    """Everything bound to ``host`` (``binding_host_id``), and the spanning
    networks it serves DHCP for, read in one transaction (``down_time``: how
    recent an agent's report must be to count it alive)."""
    rows = _bound_ports(conn, ports.c.binding_host_id == host)
    view = HostView(ports=rows, agents=alive_agents(conn, down_time))
    disabled = disabled_hosts(conn, DHCP)  # taken down by an admin: serves none
    candidates = sorted(h for h, agent in view.agents.items() if agent.dhcp and h not in disabled)
    elected = {net: dhcp_host(net, candidates) for net in _spanning_in_use(conn)}
    local = {r["network_id"] for r in rows} | _router_networks(conn, host)
    net_ids = sorted(local | {net for net, chosen in elected.items() if chosen == host})
    view.dhcp_hosts = {net: elected[net] for net in net_ids if net in elected}
    if view.dhcp_hosts:
        for port in _bound_ports(conn, sa.and_(ports.c.network_id.in_(sorted(view.dhcp_hosts)),
                                               ports.c.binding_host_id != "")):
            view.span_ports.setdefault(port["network_id"], []).append(port)
    if net_ids:
        view.networks = {n["id"]: n for n in fetch_all(
            conn, sa.select(networks).where(networks.c.id.in_(net_ids)))}
        for sub in fetch_all(conn, sa.select(subnets).where(subnets.c.network_id.in_(net_ids))
                             .order_by(subnets.c.created_at, subnets.c.id)):
            view.subnets.setdefault(sub["network_id"], []).append(sub)
        view.routed = _routed_subnets(conn, net_ids)
    view.filters = _filters(conn, rows)
    return view


def _router_networks(conn: sa.Connection, host: str) -> set[str]:
    """The networks of the ports of routers this host's L3 agent serves:
    their bridges must be here for the routers' devices."""
    return set(conn.execute(sa.select(ports.c.network_id).distinct().join(
        routers, routers.c.id == ports.c.device_id).where(
        routers.c.host == host, ports.c.device_owner.in_(
            ("network:router_interface", "network:router_gateway")))).scalars())


def _routed_subnets(conn: sa.Connection, net_ids: list[str]) -> dict[str, str | None]:
    """Subnets of ``net_ids`` whose gateway a router interface holds, each
    with the address of its network's DHCP port there (None if it has none)."""
    holders = sa.select(ip_allocations.c.subnet_id).join(
        ports, ports.c.id == ip_allocations.c.port_id).join(
        subnets, subnets.c.id == ip_allocations.c.subnet_id).where(
        ports.c.network_id.in_(net_ids), ports.c.device_owner == "network:router_interface",
        ip_allocations.c.ip_address == subnets.c.gateway_ip)
    routed: dict[str, str | None] = {sid: None for sid in conn.execute(holders).scalars()}
    if routed:
        for row in conn.execute(sa.select(ip_allocations.c.subnet_id, ip_allocations.c.ip_address)
                                .join(ports, ports.c.id == ip_allocations.c.port_id)
                                .where(ip_allocations.c.subnet_id.in_(sorted(routed)),
                                       ports.c.device_owner == "network:dhcp")
                                .order_by(ip_allocations.c.ip_address)):
            routed[row.subnet_id] = routed[row.subnet_id] or row.ip_address
    return routed


def _bound_ports(conn: sa.Connection, where: Any) -> list[dict[str, Any]]:
    """Port rows matching ``where`` with their ``fixed_ips``, in creation order."""
    rows = fetch_all(conn, sa.select(ports).where(where).order_by(ports.c.seq))
    fixed = _fixed_ips(conn, [r["id"] for r in rows])
    for row in rows:
        row["fixed_ips"] = fixed.get(row["id"], [])
    return rows


def _spanning_in_use(conn: sa.Connection) -> list[str]:
    """Networks spanning hosts with a port bound somewhere."""
    return [r.id for r in conn.execute(
        sa.select(networks.c.id).where(
            networks.c.network_type != NetworkType.LOCAL.value,
            sa.exists().where(ports.c.network_id == networks.c.id,
                              ports.c.binding_host_id != "")))]


def networks_kept_idle(conn: sa.Connection, network_ids: list[str]) -> set[str]:
    """Which of ``network_ids`` keep their bridge on a host with no port of
    theirs bound: local networks that still exist (a spanning network's
    bridge goes, and its tunnels with it)."""
    if not network_ids:
        return set()
    return {r.id for r in conn.execute(sa.select(networks.c.id).where(
        networks.c.id.in_(network_ids), networks.c.network_type == NetworkType.LOCAL.value))}


def networks_of_bridges(conn: sa.Connection, bridges: list[str]) -> dict[str, str]:
    """Bridge name → id of the existing network it belongs to (after a restart
    the backend only knows the bridges' names)."""
    found: dict[str, str] = {}
    for bridge in bridges:
        prefix = bridge[len("brq"):]
        net_id = conn.execute(sa.select(networks.c.id).where(
            networks.c.id.like(prefix + "%"))).scalar()
        if net_id is not None:
            found[bridge] = net_id
    return found


def _fixed_ips(conn: sa.Connection, port_ids: list[str]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    if port_ids:
        for row in conn.execute(sa.select(ip_allocations).where(
                ip_allocations.c.port_id.in_(port_ids)).order_by(ip_allocations.c.ip_address)):
            out.setdefault(row.port_id, []).append(
                {"subnet_id": row.subnet_id, "ip_address": row.ip_address})
    return out


def _filters(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[PortFilter]:
    """Firewall input for the bound ports: rules of their groups, remote
    groups expanded to the fixed addresses of their ports on any host."""
    group_ids = sorted({g for r in rows if r["port_security_enabled"]
                        for g in r["security_groups"] or []})
    rules = rules_of(conn, group_ids)
    remote_ids = sorted({rule["remote_group_id"] for group in rules.values() for rule in group
                         if rule["remote_group_id"]})
    members = _group_addresses(conn, remote_ids)
    filters = []
    for row in rows:
        port_rules: list[Rule] = []
        if row["port_security_enabled"]:
            for group_id in row["security_groups"] or []:
                for rule in rules.get(group_id, []):
                    remote = rule["remote_group_id"]
                    port_rules.append(Rule(
                        direction=rule["direction"], ethertype=rule["ethertype"],
                        protocol=rule["protocol"], port_range_min=rule["port_range_min"],
                        port_range_max=rule["port_range_max"],
                        remote_ip_prefix=rule["remote_ip_prefix"],
                        remote_ips=tuple(members.get(remote, ())) if remote else None,
                        id=rule["id"]))
        filters.append(PortFilter(
            id=row["id"], devname=devname(row["id"]), bridge=bridge_name(row["network_id"]),
            mac=row["mac_address"], ips=tuple(ip["ip_address"] for ip in row["fixed_ips"]),
            port_security=bool(row["port_security_enabled"]), rules=tuple(port_rules),
            pairs=_pairs(row)))
    return filters


def _pairs(row: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The port's allowed address pairs as (MAC, address): its own MAC where
    the pair names none. A port without port security has none to enforce."""
    if not row["port_security_enabled"]:
        return ()
    return tuple((pair.get("mac_address") or row["mac_address"], pair["ip_address"])
                 for pair in row["allowed_address_pairs"] or [])


def _group_addresses(conn: sa.Connection, group_ids: list[str]) -> dict[str, list[str]]:
    """Group id → fixed addresses of every port in it. Membership is a JSON
    list on the port, so candidates are the ports of the groups' projects."""
    if not group_ids:
        return {}
    projects = [r.project_id for r in conn.execute(
        sa.select(security_groups.c.project_id).where(security_groups.c.id.in_(group_ids)))]
    candidates = conn.execute(sa.select(ports.c.id, ports.c.security_groups).where(
        ports.c.project_id.in_(set(projects)))).all()
    wanted = set(group_ids)
    by_port = {c.id: wanted.intersection(c.security_groups or []) for c in candidates}
    by_port = {pid: groups for pid, groups in by_port.items() if groups}
    fixed = _fixed_ips(conn, list(by_port))
    out: dict[str, list[str]] = {g: [] for g in group_ids}
    for pid, groups in by_port.items():
        for group in groups:
            out[group].extend(ip["ip_address"] for ip in fixed.get(pid, []))
    return out
