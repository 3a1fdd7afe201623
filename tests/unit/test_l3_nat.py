"""A router's NAT as nft text, and the namespace changes the agent derives from specs."""
from __future__ import annotations

import pytest

from cirrus.network.l3 import nat
from cirrus.network.l3.router_info import (NamespaceState, as_built, host_commands,
                                           namespace_commands, wanted_routes)
from cirrus.network.l3.spec import FloatingIP, Gateway, Route, RouterPort, RouterSpec
from cirrus.network.model import devname
from tests.unit.test_firewall_render import chain, nft_accepts

QG = "3333333333-gw-port"
QG_DEV = '"qg-3333333333-"'
A = RouterPort("1111111111-a", "net-a", "fa:16:3e:00:00:01", ("10.0.0.1/24",), "brqa")
B = RouterPort("2222222222-b", "net-b", "fa:16:3e:00:00:02", ("10.0.1.1/24", "2001:db8::1/64"),
               "brqb")
GW_PORT = RouterPort(QG, "net-ext", "fa:16:3e:00:00:03", ("203.0.113.2/24", "2001:db8:f::2/64"),
                     "brqext")
FIP_A = FloatingIP("203.0.113.10", "10.0.0.5")
FIP_B = FloatingIP("203.0.113.9", "10.0.1.7")
EAST_WEST = f"oifname != {QG_DEV} ct status & dnat == 0 accept"
GW_SNAT = f"oifname {QG_DEV} ip saddr {{ 10.0.0.0/24, 10.0.1.0/24 }} snat to 203.0.113.2"
HAIRPIN = "ct status dnat ip saddr { 10.0.0.0/24, 10.0.1.0/24 } masquerade"
DNAT_BOTH = "dnat to ip daddr map { 203.0.113.9 : 10.0.1.7, 203.0.113.10 : 10.0.0.5 }"


def router(*fips: FloatingIP, snat: bool = True, gateway: bool = True,
           gw_port: RouterPort = GW_PORT) -> RouterSpec:
    gw = Gateway(gw_port, ("203.0.113.1", "2001:db8:f::1"), snat) if gateway else None
    return RouterSpec("r1", interfaces=(A, B), gateway=gw, floating_ips=fips)


V6_ONLY_GW = RouterPort(QG, "net-ext", "fa:16:3e:00:00:03", ("2001:db8:f::2/64",), "brqext")


@pytest.mark.parametrize("spec, prerouting, postrouting, forward", [
    pytest.param(router(gateway=False), [], [], ["ct status dnat drop"], id="no-gateway"),
    pytest.param(router(), [], [EAST_WEST, GW_SNAT], ["ct status dnat drop"], id="snat"),
    pytest.param(router(snat=False), [], [EAST_WEST], ["ct status dnat drop"], id="snat-off"),
    pytest.param(router(gw_port=V6_ONLY_GW), [], [EAST_WEST], ["ct status dnat drop"],
                 id="gateway-without-ipv4"),
    pytest.param(router(FIP_A), ["dnat to ip daddr map { 203.0.113.10 : 10.0.0.5 }"],
                 [EAST_WEST, "snat to ip saddr map { 10.0.0.5 : 203.0.113.10 }", GW_SNAT, HAIRPIN],
                 ["ct status dnat ct original ip daddr . ct reply ip saddr != "
                  "{ 203.0.113.10 . 10.0.0.5 } drop"], id="floating"),
    pytest.param(router(FIP_A, FIP_B), [DNAT_BOTH],
                 [EAST_WEST, "snat to ip saddr map { 10.0.0.5 : 203.0.113.10, "
                  "10.0.1.7 : 203.0.113.9 }", GW_SNAT, HAIRPIN],
                 ["ct status dnat ct original ip daddr . ct reply ip saddr != "
                  "{ 203.0.113.9 . 10.0.1.7, 203.0.113.10 . 10.0.0.5 } drop"],
                 id="two-floating-sorted-by-address"),
    pytest.param(router(FIP_A, snat=False), ["dnat to ip daddr map { 203.0.113.10 : 10.0.0.5 }"],
                 [EAST_WEST, "snat to ip saddr map { 10.0.0.5 : 203.0.113.10 }", HAIRPIN],
                 ["ct status dnat ct original ip daddr . ct reply ip saddr != "
                  "{ 203.0.113.10 . 10.0.0.5 } drop"], id="floating-without-snat"),
    pytest.param(router(FloatingIP("2001:db8:f::10", "2001:db8::5")), [],
                 [EAST_WEST, GW_SNAT], ["ct status dnat drop"], id="ipv6-is-never-natted"),
])
def test_render(spec: RouterSpec, prerouting: list[str], postrouting: list[str],
                forward: list[str]) -> None:
    script = nat.render(spec)
    assert chain(script, "prerouting")[1:] == prerouting
    assert chain(script, "output")[1:] == prerouting  # the router itself reaches floating IPs
    assert chain(script, "postrouting")[1:] == postrouting
    assert chain(script, "forward")[1:] == forward
    nft_accepts(script)


def test_the_table_is_replaced_in_one_transaction() -> None:
    lines = nat.render(router(FIP_A)).splitlines()
    assert lines[1:4] == ["table ip cirrus-nat", "delete table ip cirrus-nat",
                          "table ip cirrus-nat {"]
    assert lines.count("table ip cirrus-nat {") == 1


def test_render_does_not_depend_on_order() -> None:
    assert nat.render(router(FIP_A, FIP_B)) == nat.render(router(FIP_B, FIP_A))


@pytest.mark.parametrize("spec, expected", [
    pytest.param(router(gateway=False), set(), id="no-gateway-no-default"),
    pytest.param(router(), {("0.0.0.0/0", "203.0.113.1"), ("::/0", "2001:db8:f::1")},
                 id="default-per-family"),
    pytest.param(RouterSpec("r1", interfaces=(A,), routes=(Route("10.9.0.0/16", "10.0.0.254"),
                                                           Route("10.8.0.7", "10.0.0.253"))),
                 {("10.9.0.0/16", "10.0.0.254"), ("10.8.0.7/32", "10.0.0.253")}, id="static"),
    pytest.param(RouterSpec("r1", interfaces=(A,), gateway=Gateway(GW_PORT, ("203.0.113.1",)),
                            routes=(Route("10.9.0.0/16", "10.0.0.254"),), admin_state_up=False),
                 set(), id="admin-down-routes-nothing"),
])
def test_wanted_routes(spec: RouterSpec, expected: set[tuple[str, str]]) -> None:
    assert wanted_routes(spec) == expected


def test_devices_and_floating_addresses_on_the_gateway() -> None:
    devices = as_built(router(FIP_A, FloatingIP("2001:db8:f::10", "2001:db8::5"))).devices
    assert sorted(devices) == ["qg-3333333333-", "qr-1111111111-", "qr-2222222222-"]
    assert devices["qg-3333333333-"].cidrs == {"203.0.113.2/24", "2001:db8:f::2/64",
                                              "203.0.113.10/32"}
    assert devices["qr-2222222222-"].cidrs == {"10.0.1.1/24", "2001:db8::1/64"}
    assert all(len(name) <= 15 for name in devices)


QG_NAME, QR_A, QR_B = "qg-3333333333-", "qr-1111111111-", "qr-2222222222-"
EMPTY = NamespaceState({}, {}, frozenset())


@pytest.mark.parametrize("before, after, expected", [
    pytest.param(router(FIP_A), router(FIP_A), [], id="same-spec-nothing"),
    pytest.param(router(), router(FIP_A), [f"addr add 203.0.113.10/32 dev {QG_NAME}"],
                 id="associate"),
    pytest.param(router(FIP_A), router(FIP_B), [f"addr add 203.0.113.9/32 dev {QG_NAME}",
                                                f"addr del 203.0.113.10/32 dev {QG_NAME}"],
                 id="move-floating"),
    pytest.param(router(), RouterSpec("r1", interfaces=(A, B)),
                 ["route del 0.0.0.0/0 via 203.0.113.1", "route del ::/0 via 2001:db8:f::1",
                  f"link del dev {QG_NAME}"], id="gateway-cleared"),
    pytest.param(router(), RouterSpec("r1", interfaces=(A, B), admin_state_up=False,
                                      gateway=Gateway(GW_PORT, ("203.0.113.1",))),
                 ["route del 0.0.0.0/0 via 203.0.113.1", "route del ::/0 via 2001:db8:f::1",
                  f"link set dev {QR_A} down", f"link set dev {QR_B} down",
                  f"link set dev {QG_NAME} down"], id="admin-down"),
    pytest.param(RouterSpec("r1", interfaces=(A,)),
                 RouterSpec("r1", interfaces=(A,), routes=(Route("10.9.0.0/16", "10.0.0.254"),)),
                 ["route replace 10.9.0.0/16 via 10.0.0.254"], id="static-route-added"),
])
def test_namespace_commands(before: RouterSpec, after: RouterSpec, expected: list[str]) -> None:
    assert namespace_commands(as_built(after), as_built(before)) == expected


def test_a_new_router_is_built_from_nothing() -> None:
    spec = RouterSpec("r1", interfaces=(A,), gateway=Gateway(GW_PORT, ("203.0.113.1",)))
    assert host_commands(spec, as_built(spec), EMPTY) == [
        f"link add {devname(A.port_id)} type veth peer name {QR_A} netns qrouter-r1",
        f"link set dev {devname(A.port_id)} master brqa mtu 1500 up",
        f"link add {devname(QG)} type veth peer name {QG_NAME} netns qrouter-r1",
        f"link set dev {devname(QG)} master brqext mtu 1500 up"]
    assert namespace_commands(as_built(spec), EMPTY) == [
        f"link set dev {QR_A} address fa:16:3e:00:00:01 mtu 1500 up",
        f"addr add 10.0.0.1/24 dev {QR_A}",
        f"link set dev {QG_NAME} address fa:16:3e:00:00:03 mtu 1500 up",
        f"addr add 2001:db8:f::2/64 dev {QG_NAME} nodad", f"addr add 203.0.113.2/24 dev {QG_NAME}",
        "route replace 0.0.0.0/0 via 203.0.113.1"]


def test_a_port_moved_to_another_bridge_is_re_enslaved_only() -> None:
    moved = RouterSpec("r1", interfaces=(RouterPort(A.port_id, "net-a", A.mac_address, A.cidrs,
                                                    "brqz", 1450),))
    before = as_built(RouterSpec("r1", interfaces=(A,)))
    assert host_commands(moved, as_built(moved), before) == [
        f"link set dev {devname(A.port_id)} master brqz mtu 1450 up"]
    assert namespace_commands(as_built(moved), before) == [f"link set dev {QR_A} mtu 1450"]
