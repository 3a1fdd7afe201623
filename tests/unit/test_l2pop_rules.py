"""Rules of L2 population: the VXLAN entries each host needs from the port
bindings, the diff against what ``bridge fdb``/``ip neigh`` show, the DHCP
host election, and the host view they are computed from."""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.network import agents
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network.agents import Agent
from cirrus.network.backends.uplinks import desired_entries as host_entries
from cirrus.network.backends.uplinks import UplinkError, Uplinks, is_uplink, parse_mappings
from cirrus.network.host_view import HostView, load_host_view, networks_kept_idle
from cirrus.network.l2pop import (FLOODING_MAC, FdbEntry, L2Entries, NeighEntry, PortLocation,
                                  desired_entries, dhcp_host, diff, gateway_mac, parse_fdb,
                                  parse_neigh)
from cirrus.network.linux.vxlan import vlan_name, vxlan_name
from cirrus.network.segments import NetworkType, Segment, SegmentConfig

ENDPOINTS = {"a": "192.0.2.1", "b": "192.0.2.2", "c": "192.0.2.3"}
M1, M2, M3 = "fa:16:3e:00:00:01", "fa:16:3e:00:00:02", "fa:16:3e:00:00:03"


def flood(dst: str) -> FdbEntry:
    return FdbEntry(FLOODING_MAC, dst)


@pytest.mark.parametrize("ports, fdb, neigh", [
    # Only ports here: nothing to point anywhere.
    ([PortLocation("a", M1, ("10.0.0.3",))], set(), set()),
    # One remote port: flood to its host, its MAC and address there.
    ([PortLocation("a", M1, ("10.0.0.3",)), PortLocation("b", M2, ("10.0.0.4",))],
     {flood("192.0.2.2"), FdbEntry(M2, "192.0.2.2")}, {NeighEntry("10.0.0.4", M2)}),
    # Two ports on one remote host: one flooding entry for it.
    ([PortLocation("b", M2, ("10.0.0.4",)), PortLocation("b", M3, ("10.0.0.5", "fd00::5"))],
     {flood("192.0.2.2"), FdbEntry(M2, "192.0.2.2"), FdbEntry(M3, "192.0.2.2")},
     {NeighEntry("10.0.0.4", M2), NeighEntry("10.0.0.5", M3), NeighEntry("fd00::5", M3)}),
    # Two remote hosts: head-end replication to both.
    ([PortLocation("b", M2), PortLocation("c", M3)],
     {flood("192.0.2.2"), flood("192.0.2.3"), FdbEntry(M2, "192.0.2.2"),
      FdbEntry(M3, "192.0.2.3")}, set()),
    # A host without a tunnel address cannot be reached: no entry.
    ([PortLocation("d", M2, ("10.0.0.4",))], set(), set()),
    # MACs are compared in lower case, as ip shows them.
    ([PortLocation("b", M2.upper())], {flood("192.0.2.2"), FdbEntry(M2, "192.0.2.2")}, set()),
])
def test_desired_entries(ports: list[PortLocation], fdb: set[FdbEntry],
                         neigh: set[NeighEntry]) -> None:
    assert desired_entries("a", ENDPOINTS, ports) == L2Entries(frozenset(fdb), frozenset(neigh))


def test_a_host_sharing_our_address_is_not_a_tunnel_end() -> None:
    """Two host names on one address (a renamed host) must not loop to ourselves."""
    assert not desired_entries("a", {**ENDPOINTS, "a2": "192.0.2.1"}, [PortLocation("a2", M2)])


def _entries(fdb: set[FdbEntry] = set(), neigh: set[NeighEntry] = set()) -> L2Entries:
    return L2Entries(frozenset(fdb), frozenset(neigh))


@pytest.mark.parametrize("desired, actual, add, remove", [
    (_entries({flood("b")}), _entries(), _entries({flood("b")}), _entries()),
    (_entries(), _entries({flood("b")}, {NeighEntry("10.0.0.4", M2)}),
     _entries(), _entries({flood("b")}, {NeighEntry("10.0.0.4", M2)})),  # last port gone
    (_entries({flood("b")}), _entries({flood("b")}), _entries(), _entries()),
    # A port moved from b to c: the old entry goes, the new one comes.
    (_entries({FdbEntry(M2, "c")}), _entries({FdbEntry(M2, "b")}),
     _entries({FdbEntry(M2, "c")}), _entries({FdbEntry(M2, "b")})),
    # An address now held by another MAC: replaced, not deleted after.
    (_entries(neigh={NeighEntry("10.0.0.4", M3)}), _entries(neigh={NeighEntry("10.0.0.4", M2)}),
     _entries(neigh={NeighEntry("10.0.0.4", M3)}), _entries()),
])
def test_diff(desired: L2Entries, actual: L2Entries, add: L2Entries, remove: L2Entries) -> None:
    assert diff(desired, actual) == (add, remove)


def test_parse_what_ip_shows() -> None:
    fdb = [{"mac": "FA:16:3E:00:00:02", "dst": "192.0.2.2", "flags": ["self"], "state": "permanent"},
           {"mac": "00:00:00:00:00:00", "dst": "192.0.2.3", "flags": ["self"], "state": "permanent"},
           {"mac": "2e:47:96:17:d5:4b", "vlan": 1, "master": "brq1", "state": "permanent"}]
    assert parse_fdb(fdb) == {FdbEntry(M2, "192.0.2.2"), flood("192.0.2.3")}
    neigh = [{"dst": "10.0.0.4", "lladdr": M2, "state": ["PERMANENT"]},
             {"dst": "10.0.0.9", "lladdr": M3, "state": ["STALE"]},
             {"dst": "10.0.0.7", "state": ["FAILED"]}]
    assert parse_neigh(neigh) == {NeighEntry("10.0.0.4", M2)}


def test_dhcp_host_election_is_stable_and_moves_little() -> None:
    networks = [str(uuid.UUID(int=n)) for n in range(200)]
    hosts = ["h1", "h2", "h3"]
    before = {n: dhcp_host(n, hosts) for n in networks}
    assert before == {n: dhcp_host(n, list(reversed(hosts))) for n in networks}  # order-free
    assert set(before.values()) == set(hosts)  # spread over the hosts
    after = {n: dhcp_host(n, [*hosts, "h4"]) for n in networks}
    # A host joining takes some networks; none moves between the old hosts.
    assert all(after[n] in (before[n], "h4") for n in networks)
    assert 0 < sum(after[n] == "h4" for n in networks) < len(networks)
    assert dhcp_host(networks[0], []) is None


def test_gateway_mac_is_per_network_and_never_a_ports() -> None:
    mac = gateway_mac("net-1")
    assert mac == gateway_mac("net-1") != gateway_mac("net-2")
    assert mac.startswith("fa:16:3f:") and len(mac.split(":")) == 6


@pytest.mark.parametrize("vni, name", [(1, "vxlan-1"), (16777215, "vxlan-16777215")])
def test_vxlan_names_fit(vni: int, name: str) -> None:
    assert vxlan_name(vni) == name and len(name) <= 15


@pytest.mark.parametrize("interface, vlan, name", [
    ("eth1", 100, "eth1.100"), ("enp0s31f6long", 4094, "enp0s31f6l.4094")])
def test_vlan_names_fit(interface: str, vlan: int, name: str) -> None:
    assert vlan_name(interface, vlan) == name and len(name) <= 15


def test_interface_mappings() -> None:
    assert parse_mappings("physnet1:eth1, physnet2:bond0") == {"physnet1": "eth1",
                                                               "physnet2": "bond0"}
    with pytest.raises(ValueError):
        parse_mappings("physnet1")


@pytest.mark.parametrize("dev, uplink", [("vxlan-5", True), ("eth1.100", True), ("eth1", True),
                                         ("tap0123456789a", False)])
def test_uplinks_are_told_from_taps(dev: str, uplink: bool) -> None:
    assert is_uplink(dev) is uplink


# -- the host view the entries are computed from --------------------------------------
ADMIN = RequestContext(project_id="p", roles=["admin"])
VXLAN = SegmentConfig(tenant_type=NetworkType.VXLAN)


def _network(conn: sa.Connection, config: SegmentConfig = VXLAN) -> tuple[dict[str, Any], str]:
    net = net_db.create_network(conn, ADMIN, {"name": "n", "project_id": "p"}, config)
    net_db.create_subnet(conn, ADMIN, {"network_id": net["id"], "cidr": "10.9.0.0/24"})
    return net, "10.9.0.1"


def _port(conn: sa.Connection, net: dict[str, Any], host: str) -> dict[str, Any]:
    row = port_db.create_port(conn, ADMIN, {"network_id": net["id"], "project_id": "p",
                                            "security_groups": [], "binding_host_id": host},
                              "fa:16:3e:00:00:00")
    row["ip"] = port_db.fixed_ips_of(conn, [row["id"]])[row["id"]][0]["ip_address"]
    return row


def _register(conn: sa.Connection, *hosts: str) -> None:
    for host in hosts:
        agents.report(conn, Agent(host, ENDPOINTS[host]))


def test_each_host_points_at_the_others_ports_and_the_gateway(conn: sa.Connection) -> None:
    _register(conn, "a", "b", "c")
    net, gateway = _network(conn)
    on_a, on_b = _port(conn, net, "a"), _port(conn, net, "b")
    server = dhcp_host(net["id"], ["a", "b", "c"])
    views = {h: load_host_view(conn, h) for h in ("a", "b", "c")}
    # The DHCP host has the network whether or not a port of it is there.
    for host, view in views.items():
        assert (net["id"] in view.networks) == (host in ("a", "b") or host == server)
    served = views[server]
    assert served.serves_dhcp(net["id"], server)
    assert {p["id"] for p in served.dhcp_ports(net["id"])} == {on_a["id"], on_b["id"]}
    entries = host_entries(views["a"], "a", net["id"], views["a"].subnets[net["id"]])
    expected_fdb = {flood("192.0.2.2"), FdbEntry(on_b["mac_address"], "192.0.2.2")}
    expected_neigh = {NeighEntry(on_b["ip"], on_b["mac_address"])}
    if server != "a":  # the gateway lives on the DHCP host's bridge
        dst = ENDPOINTS[server]
        expected_fdb |= {flood(dst), FdbEntry(gateway_mac(net["id"]), dst)}
        expected_neigh.add(NeighEntry(gateway, gateway_mac(net["id"])))
    assert entries == L2Entries(frozenset(expected_fdb), frozenset(expected_neigh))


def test_the_last_port_of_a_host_takes_its_entries_away(conn: sa.Connection) -> None:
    _register(conn, "a", "b")
    net, _ = _network(conn)
    _port(conn, net, "a")
    on_b = _port(conn, net, "b")
    server = dhcp_host(net["id"], ["a", "b"])
    before = load_host_view(conn, "a")
    assert flood("192.0.2.2") in host_entries(before, "a", net["id"], before.subnets[net["id"]]).fdb
    port_db.update_port(conn, ADMIN, on_b["id"], {"binding_host_id": ""})
    after = load_host_view(conn, "a")
    left = host_entries(after, "a", net["id"], after.subnets[net["id"]])
    # Only the gateway keeps b in the list, and only while b serves DHCP.
    assert (flood("192.0.2.2") in left.fdb) == (server == "b")
    assert on_b["mac_address"] not in {e.mac for e in left.fdb}


def test_dead_agents_neither_serve_dhcp_nor_get_entries(conn: sa.Connection) -> None:
    _register(conn, "a", "b")
    net, _ = _network(conn)
    _port(conn, net, "a")
    conn.execute(sa.text("UPDATE network_agents SET updated_at = '2000-01-01' WHERE host = 'b'"))
    view = load_host_view(conn, "a")
    assert set(view.agents) == {"a"} and view.dhcp_hosts[net["id"]] == "a"


def test_local_networks_serve_their_own_dhcp_and_keep_idle_bridges(conn: sa.Connection) -> None:
    _register(conn, "a", "b")
    local, _ = _network(conn, SegmentConfig())
    spanning, _ = _network(conn)
    _port(conn, local, "a")
    view = load_host_view(conn, "a")
    assert view.serves_dhcp(local["id"], "a") and local["id"] not in view.dhcp_hosts
    assert networks_kept_idle(conn, [local["id"], spanning["id"], "gone"]) == {local["id"]}
    assert Segment.of(spanning).network_type == NetworkType.VXLAN


def test_an_agent_reports_again_with_a_new_address(conn: sa.Connection) -> None:
    agents.report(conn, Agent("a", "192.0.2.1"))
    agents.report(conn, Agent("a", "192.0.2.9", dhcp=False))
    assert agents.alive_agents(conn, 60) == {"a": Agent("a", "192.0.2.9", False)}


@pytest.mark.parametrize("segment, settings, reason", [
    (Segment(NetworkType.VXLAN, "", 5), {}, "local_ip is not set"),
    (Segment(NetworkType.VLAN, "physnet9", 5), {"local_ip": "192.0.2.1"},
     "'physnet9' has no interface"),
    (Segment(NetworkType.FLAT, "physnet9", 0), {"physical_interface_mappings": "physnet1:eth1"},
     "'physnet9' has no interface"),
])
async def test_a_host_that_cannot_join_a_network_says_why(
        tmp_path: Path, segment: Segment, settings: dict[str, Any], reason: str) -> None:
    uplinks = Uplinks(Settings(state_dir=tmp_path, **settings), "a")
    network = {"id": "net-1", "mtu": 1450, "network_type": segment.network_type.value,
               "physical_network": segment.physical_network,
               "segmentation_id": segment.segmentation_id}
    with pytest.raises(UplinkError, match=reason):
        await uplinks.ensure(network, [], HostView(networks={"net-1": network}))
