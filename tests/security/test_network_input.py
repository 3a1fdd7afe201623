"""Bad input to the network API is a 4xx, never a 500, and never stored
(issue 18): every listing still answers 200 afterwards."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.security.conftest import Tenants

NET = "/network/v2.0"
LISTINGS = ("networks", "subnets", "ports", "security-groups", "security-group-rules")
LONE = "\ud800"  # a lone surrogate: json.loads accepts it, UTF-8 cannot encode it


async def _listings_answer(tenants: Tenants) -> None:
    for client in (tenants.member, tenants.admin):
        for collection in LISTINGS:
            resp = await client.get(f"{NET}/{collection}")
            assert resp.status_code == 200, (collection, resp.text)


async def _send(client: httpx.AsyncClient, method: str, url: str, body: Any) -> httpx.Response:
    # Sent as text so that lone surrogates arrive as JSON escapes.
    import json
    return await client.request(method, url, content=json.dumps(body),
                                headers={"Content-Type": "application/json"})


def _unexpected(case: Any, status: int, *responses: httpx.Response) -> list[tuple[Any, int, str]]:
    """The responses to ``case`` that are not ``status``, to report them all at once."""
    return [(case, r.status_code, r.text[:200]) for r in responses if r.status_code != status]


@pytest.fixture
async def net(tenants: Tenants) -> dict[str, Any]:
    """Project demo's network with a /24 subnet (gateway .1, pool .2–.254)."""
    resp = await tenants.member.post(f"{NET}/networks", json={"network": {"name": "n"}})
    assert resp.status_code == 201, resp.text
    network = resp.json()["network"]
    resp = await tenants.member.post(f"{NET}/subnets", json={"subnet": {
        "network_id": network["id"], "cidr": "10.0.0.0/24", "ip_version": 4}})
    assert resp.status_code == 201, resp.text
    return {**network, "subnet": resp.json()["subnet"]}


# -- ports ---------------------------------------------------------------------------
BAD_PORTS: list[tuple[str, Any, int]] = [
    ("fixed_ips", [{"ip_address": "not-an-ip"}], 400),
    ("fixed_ips", [{"ip_address": "10.0.0.256"}], 400),
    ("fixed_ips", [{"ip_address": " 10.0.0.5"}], 400),
    ("fixed_ips", [{"ip_address": 5}], 400),
    ("fixed_ips", [{"ip_address": LONE}], 400),
    ("fixed_ips", [{"subnet_id": ["a", "b"]}], 400),
    ("fixed_ips", [{"subnet_id": {"id": "x"}}], 400),
    ("fixed_ips", [{"subnet_id": 7}], 400),
    ("fixed_ips", [{"ip_address": "10.0.0.5", "bogus": 1}], 400),
    ("fixed_ips", ["10.0.0.5"], 400),
    ("fixed_ips", "10.0.0.5", 400),
    ("fixed_ips", [{"ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.5"}], 400),
    ("fixed_ips", [{"ip_address": "fd00::5"}], 400),          # no IPv6 subnet here
    ("fixed_ips", [{"ip_address": "10.99.0.5"}], 400),        # outside every subnet
    ("fixed_ips", [{"ip_address": "10.0.0.0"}], 400),         # the network address
    ("fixed_ips", [{"ip_address": "10.0.0.255"}], 400),       # the broadcast address
    ("mac_address", "zz:zz:zz:zz:zz:zz", 400),
    ("mac_address", "fa:16:3e:00:00", 400),
    ("mac_address", "00:00:00:00:00:00", 400),
    ("mac_address", "ff:ff:ff:ff:ff:ff", 400),
    ("mac_address", "01:00:5e:00:00:01", 400),                # multicast
    ("mac_address", 5, 400),
    ("mac_address", LONE, 400),
    ("binding:vnic_type", "bogus", 400),
    ("binding:vnic_type", 5, 400),
    ("allowed_address_pairs", [{"ip_address": LONE}], 400),
    ("allowed_address_pairs", [{"ip_address": "nope"}], 400),
    ("allowed_address_pairs", [{"mac_address": "fa:16:3e:00:00:01"}], 400),
    ("allowed_address_pairs", [{"ip_address": "10.0.0.9", "mac_address": "zz"}], 400),
    ("allowed_address_pairs", [{"ip_address": "10.0.0.0/33"}], 400),
    ("allowed_address_pairs", [{"ip_address": "10.0.0.9", "other": 1}], 400),
    ("allowed_address_pairs", [{"ip_address": "224.0.0.1"}], 400),
    ("allowed_address_pairs", [{"ip_address": "10.0.0.9"}, {"ip_address": "10.0.0.9"}], 400),
    ("allowed_address_pairs", ["10.0.0.9"], 400),
    ("allowed_address_pairs", "10.0.0.9", 400),
    ("extra_dhcp_opts", [{"opt_value": "x"}], 400),
    ("extra_dhcp_opts", [{"opt_name": "", "opt_value": "x"}], 400),
    ("extra_dhcp_opts", [{"opt_name": "a", "opt_value": "b", "ip_version": 5}], 400),
    ("extra_dhcp_opts", [{"opt_name": "a", "opt_value": LONE}], 400),
    ("extra_dhcp_opts", "x", 400),
    ("dns_name", "not a name!", 400),
    ("dns_name", LONE, 400),
    ("name", "x" * 256, 400),
    ("name", LONE, 400),
    ("name", "nul\x00byte", 400),
    ("name", 5, 400),
    ("description", "d" * 256, 400),
    ("device_id", LONE, 400),
    ("device_owner", "o" * 256, 400),
    ("admin_state_up", "true", 400),
    ("port_security_enabled", 1, 400),
    ("security_groups", "default", 400),
    ("security_groups", [LONE], 400),
    ("security_groups", [5], 400),
]


async def test_a_bad_port_is_refused_on_create_and_update(tenants: Tenants,
                                                         net: dict[str, Any]) -> None:
    port = (await tenants.member.post(f"{NET}/ports", json={"port": {
        "network_id": net["id"]}})).json()["port"]
    wrong = []
    for key, value, status in BAD_PORTS:
        created = await _send(tenants.member, "POST", f"{NET}/ports",
                              {"port": {"network_id": net["id"], key: value}})
        updated = await _send(tenants.member, "PUT", f"{NET}/ports/{port['id']}",
                              {"port": {key: value}})
        wrong += _unexpected((key, value), status, created, updated)
    assert wrong == []
    await _listings_answer(tenants)
    listed = (await tenants.member.get(f"{NET}/ports")).json()["ports"]
    assert [(p["id"], p["fixed_ips"], p["mac_address"]) for p in listed] == [
        (port["id"], port["fixed_ips"], port["mac_address"])]


async def test_a_port_update_to_another_ports_mac_is_a_conflict(tenants: Tenants,
                                                               net: dict[str, Any]) -> None:
    ports = [(await tenants.member.post(f"{NET}/ports", json={"port": {
        "network_id": net["id"]}})).json()["port"] for _ in range(2)]
    for client in (tenants.member, tenants.admin):
        resp = await client.put(f"{NET}/ports/{ports[1]['id']}", json={"port": {
            "mac_address": ports[0]["mac_address"].upper()}})
        assert resp.status_code == 409, resp.text
        assert resp.json()["NeutronError"]["type"] == "MacAddressInUse"
    await _listings_answer(tenants)


async def test_good_port_values_are_stored_normalised(tenants: Tenants, net: dict[str, Any]) -> None:
    resp = await tenants.member.post(f"{NET}/ports", json={"port": {
        "network_id": net["id"], "mac_address": "FA-16-3E-AA-BB-CC",
        "fixed_ips": [{"ip_address": "10.0.0.77"}], "binding:vnic_type": "direct",
        "allowed_address_pairs": [{"ip_address": "10.0.0.0/28"},
                                  {"ip_address": "10.0.0.99", "mac_address": "fa:16:3e:00:00:01"}],
        "extra_dhcp_opts": [{"opt_name": "mtu", "opt_value": "1400"}],
        "dns_name": "web-1"}})
    assert resp.status_code == 201, resp.text
    port = resp.json()["port"]
    assert port["mac_address"] == "fa:16:3e:aa:bb:cc"
    assert port["fixed_ips"][0]["ip_address"] == "10.0.0.77"


# -- subnets -------------------------------------------------------------------------
V4 = {"cidr": "10.1.0.0/24", "ip_version": 4}
V6 = {"cidr": "fd00:1::/64", "ip_version": 6}
BAD_SUBNETS: list[tuple[dict[str, Any], int]] = [
    ({"cidr": "10.1.0.0/33", "ip_version": 4}, 400),
    ({"cidr": LONE, "ip_version": 4}, 400),
    ({"cidr": 5, "ip_version": 4}, 400),
    ({"cidr": "224.0.0.0/24", "ip_version": 4}, 400),
    ({"cidr": "127.0.0.0/24", "ip_version": 4}, 400),
    ({"cidr": "10.1.0.0/24", "ip_version": 5}, 400),
    ({"cidr": "10.1.0.0/24", "ip_version": "4"}, 400),
    ({"cidr": "10.1.0.0/24", "ip_version": True}, 400),
    ({"cidr": "10.1.0.0/24", "ip_version": 6}, 400),
    ({**V4, "gateway_ip": "10.1.0.0"}, 400),                  # the network address
    ({**V4, "gateway_ip": "10.1.0.255"}, 400),                # the broadcast address
    ({**V4, "gateway_ip": "10.2.0.1"}, 400),
    ({**V4, "gateway_ip": "fd00::1"}, 400),
    ({**V4, "gateway_ip": "gateway"}, 400),
    ({**V4, "gateway_ip": 5}, 400),
    ({**V4, "allocation_pools": [{"start": "10.1.0.10"}]}, 400),
    ({**V4, "allocation_pools": [{"start": "10.1.0.20", "end": "10.1.0.10"}]}, 400),
    ({**V4, "allocation_pools": [{"start": "10.1.0.0", "end": "10.1.0.10"}]}, 400),
    ({**V4, "allocation_pools": [{"start": "10.1.0.200", "end": "10.1.0.255"}]}, 400),
    ({**V4, "allocation_pools": [{"start": "10.1.0.2", "end": "10.1.1.5"}]}, 400),
    ({**V4, "allocation_pools": [{"start": "fd00::2", "end": "fd00::5"}]}, 400),
    ({**V4, "allocation_pools": [{"start": "10.1.0.10", "end": "10.1.0.20"},
                                 {"start": "10.1.0.15", "end": "10.1.0.30"}]}, 409),
    ({**V4, "allocation_pools": [{"start": "10.1.0.1", "end": "10.1.0.10"}]}, 409),
    ({**V4, "allocation_pools": [{"start": "10.1.0.2", "end": "10.1.0.9", "x": 1}]}, 400),
    ({**V4, "allocation_pools": [{"start": 1, "end": 2}]}, 400),
    ({**V4, "allocation_pools": [{"start": LONE, "end": "10.1.0.9"}]}, 400),
    ({**V4, "allocation_pools": ["10.1.0.2-10.1.0.9"]}, 400),
    ({**V4, "allocation_pools": "x"}, 400),
    ({**V4, "dns_nameservers": ["nope"]}, 400),
    ({**V4, "dns_nameservers": [LONE]}, 400),
    ({**V4, "dns_nameservers": ["8.8.8.8", "8.8.8.8"]}, 400),
    ({**V4, "dns_nameservers": ["fd00::53"]}, 400),
    ({**V4, "dns_nameservers": "8.8.8.8"}, 400),
    ({**V4, "dns_nameservers": [5]}, 400),
    ({**V4, "dns_nameservers": [f"10.9.0.{i}" for i in range(1, 8)]}, 400),
    ({**V4, "host_routes": [{"destination": "10.5.0.0/24"}]}, 400),
    ({**V4, "host_routes": [{"destination": "nope", "nexthop": "10.1.0.1"}]}, 400),
    ({**V4, "host_routes": [{"destination": "10.5.0.0/24", "nexthop": "nope"}]}, 400),
    ({**V4, "host_routes": [{"destination": "10.5.0.1/24", "nexthop": "10.1.0.1"}]}, 400),
    ({**V4, "host_routes": [{"destination": "fd00:5::/64", "nexthop": "fd00::1"}]}, 400),
    ({**V4, "host_routes": [{"destination": LONE, "nexthop": "10.1.0.1"}]}, 400),
    ({**V4, "host_routes": ["10.5.0.0/24"]}, 400),
    ({**V4, "host_routes": [{"destination": "10.5.0.0/24", "nexthop": "10.1.0.1"}] * 2}, 400),
    ({**V4, "ipv6_ra_mode": "slaac"}, 400),
    ({**V4, "ipv6_address_mode": "slaac"}, 400),
    ({**V6, "ipv6_address_mode": "bogus"}, 400),
    ({**V6, "ipv6_ra_mode": "slaac", "ipv6_address_mode": "dhcpv6-stateful"}, 400),
    ({**V6, "ipv6_address_mode": "slaac", "enable_dhcp": False}, 400),
    ({"cidr": "fd00:1::/80", "ip_version": 6, "ipv6_address_mode": "slaac"}, 400),
    ({**V4, "enable_dhcp": "yes"}, 400),
    ({**V4, "name": LONE}, 400),
    ({**V4, "name": "n" * 256}, 400),
    ({**V4, "description": LONE}, 400),
]


async def test_a_bad_subnet_is_refused(tenants: Tenants, net: dict[str, Any]) -> None:
    wrong = []
    for body, status in BAD_SUBNETS:
        resp = await _send(tenants.member, "POST", f"{NET}/subnets",
                           {"subnet": {"network_id": net["id"], **body}})
        wrong += _unexpected(body, status, resp)
    assert wrong == []
    await _listings_answer(tenants)
    subnets = (await tenants.member.get(f"{NET}/subnets")).json()["subnets"]
    assert [s["id"] for s in subnets] == [net["subnet"]["id"]]


BAD_SUBNET_UPDATES: list[tuple[dict[str, Any], int]] = [
    ({"allocation_pools": [{"start": "10.0.0.10"}]}, 400),
    ({"allocation_pools": [{"start": "10.0.0.20", "end": "10.0.0.10"}]}, 400),
    ({"allocation_pools": [{"start": "10.0.0.200", "end": "10.0.1.20"}]}, 400),
    ({"allocation_pools": [{"start": "fd00::2", "end": "fd00::9"}]}, 400),
    ({"allocation_pools": [{"start": "10.0.0.10", "end": "10.0.0.20"},
                           {"start": "10.0.0.20", "end": "10.0.0.30"}]}, 409),
    ({"allocation_pools": [{"start": "10.0.0.1", "end": "10.0.0.20"}]}, 409),
    ({"allocation_pools": "junk"}, 400),
    ({"allocation_pools": [{"start": "junk", "end": "junk"}]}, 400),
    ({"allocation_pools": [["10.0.0.2", "10.0.0.9"]]}, 400),
    ({"gateway_ip": "10.0.0.0"}, 400),
    ({"gateway_ip": "10.0.0.255"}, 400),
    ({"gateway_ip": "10.7.0.1"}, 400),
    ({"gateway_ip": "10.0.0.50"}, 409),                       # inside the pool
    ({"gateway_ip": "fd00::1"}, 400),
    ({"dns_nameservers": ["nope"]}, 400),
    ({"dns_nameservers": [LONE]}, 400),
    ({"dns_nameservers": ["fd00::53"]}, 400),
    ({"host_routes": [{"destination": "10.5.0.0/24", "nexthop": "fd00::1"}]}, 400),
    ({"host_routes": [{"destination": "10.5.0.0/24"}]}, 400),
    ({"enable_dhcp": "no"}, 400),
    ({"name": LONE}, 400),
    ({"cidr": "10.3.0.0/24"}, 400),
    ({"ipv6_ra_mode": "slaac"}, 400),
]


async def test_a_bad_subnet_update_is_refused_and_ports_still_come(
        tenants: Tenants, net: dict[str, Any]) -> None:
    subnet = net["subnet"]
    wrong = []
    for values, status in BAD_SUBNET_UPDATES:
        resp = await _send(tenants.member, "PUT", f"{NET}/subnets/{subnet['id']}",
                           {"subnet": values})
        wrong += _unexpected(values, status, resp)
    assert wrong == []
    shown = (await tenants.member.get(f"{NET}/subnets/{subnet['id']}")).json()["subnet"]
    assert shown == {**subnet, "updated_at": shown["updated_at"]}
    port = await tenants.member.post(f"{NET}/ports", json={"port": {"network_id": net["id"]}})
    assert port.status_code == 201, port.text
    await _listings_answer(tenants)


async def test_a_good_pool_update_is_where_ports_get_addresses(tenants: Tenants,
                                                              net: dict[str, Any]) -> None:
    subnet = net["subnet"]
    resp = await tenants.member.put(f"{NET}/subnets/{subnet['id']}", json={"subnet": {
        "allocation_pools": [{"start": "10.0.0.100", "end": "10.0.0.101"}],
        "gateway_ip": "10.0.0.254", "dns_nameservers": ["10.0.0.53"],
        "host_routes": [{"destination": "10.5.0.0/24", "nexthop": "10.0.0.254"}]}})
    assert resp.status_code == 200, resp.text
    got = [(await tenants.member.post(f"{NET}/ports", json={"port": {
        "network_id": net["id"]}})) for _ in range(3)]
    assert [r.status_code for r in got] == [201, 201, 409]
    assert {r.json()["port"]["fixed_ips"][0]["ip_address"] for r in got[:2]} == {
        "10.0.0.100", "10.0.0.101"}


async def test_a_pool_at_the_subnets_edge_never_gives_an_address_outside_it(
        tenants: Tenants, net: dict[str, Any]) -> None:
    """A /30's pool is its one usable address: no port gets the broadcast."""
    resp = await tenants.member.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.8.0.0/30", "ip_version": 4,
        "allocation_pools": [{"start": "10.8.0.2", "end": "10.8.0.3"}]}})
    assert resp.status_code == 400, resp.text


# -- networks, security groups, rules --------------------------------------------------
BAD_NETWORKS: list[tuple[str, Any]] = [
    ("name", LONE), ("name", "n" * 256), ("name", ["x"]), ("description", LONE),
    ("mtu", 2 ** 63), ("mtu", 10), ("mtu", "1500"), ("mtu", True), ("mtu", 1500.5),
    ("admin_state_up", "yes"), ("port_security_enabled", None),
    ("availability_zone_hints", [LONE]), ("dns_domain", LONE),
]


async def test_a_bad_network_is_refused_on_create_and_update(tenants: Tenants,
                                                            net: dict[str, Any]) -> None:
    wrong = []
    for key, value in BAD_NETWORKS:
        created = await _send(tenants.member, "POST", f"{NET}/networks", {"network": {key: value}})
        updated = await _send(tenants.member, "PUT", f"{NET}/networks/{net['id']}",
                              {"network": {key: value}})
        wrong += _unexpected((key, value), 400, created, updated)
    assert wrong == []
    await _listings_answer(tenants)
    assert len((await tenants.member.get(f"{NET}/networks")).json()["networks"]) == 1


BAD_GROUPS: list[tuple[str, Any]] = [
    ("name", LONE), ("name", "g" * 256), ("name", 5), ("description", LONE),
    ("description", "d" * 256),
]


async def test_a_bad_security_group_is_refused_on_create_and_update(tenants: Tenants) -> None:
    group = (await tenants.member.post(f"{NET}/security-groups", json={
        "security_group": {"name": "g"}})).json()["security_group"]
    wrong = []
    for key, value in BAD_GROUPS:
        created = await _send(tenants.member, "POST", f"{NET}/security-groups",
                              {"security_group": {key: value}})
        updated = await _send(tenants.member, "PUT", f"{NET}/security-groups/{group['id']}",
                              {"security_group": {key: value}})
        wrong += _unexpected((key, value), 400, created, updated)
    assert wrong == []
    await _listings_answer(tenants)


BAD_RULES: list[dict[str, Any]] = [
    {"protocol": "²"}, {"protocol": "p" * 100}, {"protocol": 256}, {"protocol": -1},
    {"protocol": LONE}, {"protocol": 6.5},
    {"protocol": "tcp", "port_range_min": 70000}, {"protocol": "tcp", "port_range_min": "80"},
    {"protocol": "tcp", "port_range_min": 2 ** 64}, {"port_range_min": 80},
    {"remote_ip_prefix": "nope"}, {"remote_ip_prefix": LONE},
    {"remote_ip_prefix": "fd00::/64"},                        # ethertype IPv4
    {"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "GROUP"},
    {"remote_group_id": "g" * 37}, {"direction": "up"}, {"ethertype": "IPv5"},
    {"description": LONE}, {"description": "d" * 256},
]


async def test_a_bad_security_group_rule_is_refused(tenants: Tenants) -> None:
    group = (await tenants.member.post(f"{NET}/security-groups", json={
        "security_group": {"name": "g"}})).json()["security_group"]
    wrong = []
    for values in BAD_RULES:
        body = {"security_group_id": group["id"], "direction": "ingress",
                **{k: (group["id"] if v == "GROUP" else v) for k, v in values.items()}}
        resp = await _send(tenants.member, "POST", f"{NET}/security-group-rules",
                           {"security_group_rule": body})
        wrong += _unexpected(values, 400, resp)
    # A remote group that is not there (a uuid or not) is not found, as in Neutron.
    for missing in ("nope", "00000000-0000-0000-0000-000000000000"):
        resp = await _send(tenants.member, "POST", f"{NET}/security-group-rules", {
            "security_group_rule": {"security_group_id": group["id"], "direction": "ingress",
                                    "remote_group_id": missing}})
        wrong += _unexpected(missing, 404, resp)
    assert wrong == []
    await _listings_answer(tenants)
    shown = (await tenants.member.get(f"{NET}/security-groups/{group['id']}")).json()
    assert len(shown["security_group"]["security_group_rules"]) == 2  # the two egress rules


# -- filters -----------------------------------------------------------------------------
BAD_QUERIES = [
    "ip_version=abc", "mtu=x", "name=%00", "name=%ED%A0%80", "limit=%C2%B2", "limit=" + "9" * 5000,
    "limit=-1", "fixed_ips=ip_address%3D%5B", "fixed_ips=%5B", "marker=nope", "shared=maybe",
    "admin_state_up=%00", "port_range_min=x", "id=" + "&id=".join(str(i) for i in range(3000)),
    "sort_key=%00&sort_dir=sideways", "fields=%00",
]


async def test_junk_filters_never_break_a_listing(tenants: Tenants, net: dict[str, Any]) -> None:
    wrong = []
    for query in BAD_QUERIES:
        for client in (tenants.member, tenants.admin):
            for collection in LISTINGS:
                resp = await client.get(f"{NET}/{collection}?{query}")
                if resp.status_code not in (200, 400):
                    wrong.append((collection, query[:40], resp.status_code))
    assert wrong == []


JUNK_IDS = ["%00", "%ED%A0%80", "x" * 300, "%20"]


async def test_junk_ids_in_paths_name_nothing(tenants: Tenants, net: dict[str, Any]) -> None:
    wrong = []
    for junk in JUNK_IDS:
        for collection in LISTINGS:
            url = f"{NET}/{collection}/{junk}"
            for resp in (await tenants.member.get(url), await tenants.member.delete(url),
                         await tenants.admin.get(url)):
                if not 400 <= resp.status_code < 500:
                    wrong.append((collection, junk[:10], resp.request.method, resp.status_code))
        for path in (f"quotas/{junk}", f"quotas/{junk}/details", f"auto-allocated-topology/{junk}"):
            resp = await tenants.admin.get(f"{NET}/{path}")  # any project id is the admin's to ask
            if resp.status_code >= 500:
                wrong.append((path[:20], resp.status_code))
    assert wrong == []
