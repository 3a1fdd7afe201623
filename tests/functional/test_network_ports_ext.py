"""Port attributes over HTTP: the ``fixed_ips`` filters (``ip-substring-
filtering``), port security and allowed address pairs, DNS names, IPv6
addresses by mode (SLAAC / DHCPv6), the extension list, sorting."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.network.ipam import eui64
from tests.functional.test_network import NET, make_net, make_port


async def _subnet(client: httpx.AsyncClient, net_id: str, cidr: str, **extra: Any) -> dict[str, Any]:
    version = 6 if ":" in cidr else 4
    resp = await client.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net_id, "cidr": cidr, "ip_version": version, **extra}})
    assert resp.status_code == 201, resp.text
    return dict(resp.json()["subnet"])


# -- fixed_ips filters --------------------------------------------------------------------
@pytest.mark.parametrize("values, expected", [
    (["ip_address_substr=10.81.0.1"], {"10.81.0.10", "10.81.0.11"}),
    (["ip_address_substr=.0.1"], {"10.81.0.10", "10.81.0.11"}),
    (["ip_address_substr=81.0"], {"10.81.0.10", "10.81.0.11", "10.81.0.20"}),
    (["ip_address_substr=10.81", "ip_address_substr=0.2"], {"10.81.0.20"}),
    (["ip_address=10.81.0.20"], {"10.81.0.20"}),
    (["ip_address=10.81.0.20", "ip_address=10.81.0.10"], {"10.81.0.10", "10.81.0.20"}),
    (["ip_address=10.81.0.20", "ip_address_substr=0.1"], set()),
    (["ip_address_substr=192.168"], set()),
    (["bogus=1"], set()),
    (["ip_address_substr="], {"10.81.0.10", "10.81.0.11", "10.81.0.20"}),
])
async def test_fixed_ips_filters(demo: httpx.AsyncClient, values: list[str],
                                 expected: set[str]) -> None:
    net = await make_net(demo, "substr", "10.81.0.0/24")
    for address in ("10.81.0.10", "10.81.0.11", "10.81.0.20"):
        await make_port(demo, net["id"], fixed_ips=[{"ip_address": address}])
    resp = await demo.get(f"{NET}/ports", params=[("fixed_ips", v) for v in values])
    assert resp.status_code == 200
    assert {p["fixed_ips"][0]["ip_address"] for p in resp.json()["ports"]} == expected


async def test_fixed_ips_subnet_filter(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "two-subnets", "10.82.0.0/24")
    other = await _subnet(demo, net["id"], "10.83.0.0/24")
    port = (await make_port(demo, net["id"], fixed_ips=[{"subnet_id": other["id"]}])).json()
    await make_port(demo, net["id"])
    listed = (await demo.get(f"{NET}/ports", params={"fixed_ips": f"subnet_id={other['id']}"}))
    assert [p["id"] for p in listed.json()["ports"]] == [port["port"]["id"]]


# -- port security and address pairs ------------------------------------------------------
async def test_port_security_rules(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "psec", "10.84.0.0/24")
    open_port = (await make_port(demo, net["id"], port_security_enabled=False)).json()["port"]
    assert open_port["port_security_enabled"] is False and open_port["security_groups"] == []
    refused = await make_port(demo, net["id"], port_security_enabled=False,
                              security_groups=["default"])
    assert refused.status_code == 400
    pairs = await make_port(demo, net["id"], port_security_enabled=False,
                            allowed_address_pairs=[{"ip_address": "10.84.0.200"}])
    assert pairs.status_code == 409
    assert pairs.json()["NeutronError"]["type"] == "AddressPairAndPortSecurityRequired"
    guarded = (await make_port(demo, net["id"])).json()["port"]
    assert guarded["port_security_enabled"] is True and len(guarded["security_groups"]) == 1
    # Turning it off while the port has groups: 409; with the groups removed: fine.
    url = f"{NET}/ports/{guarded['id']}"
    busy = await demo.put(url, json={"port": {"port_security_enabled": False}})
    assert busy.status_code == 409
    assert busy.json()["NeutronError"]["type"] == "PortSecurityPortHasSecurityGroup"
    done = await demo.put(url, json={"port": {"port_security_enabled": False,
                                              "security_groups": []}})
    assert done.status_code == 200 and done.json()["port"]["port_security_enabled"] is False
    again = await demo.put(url, json={"port": {"security_groups": ["default"]}})
    assert again.status_code == 400
    # A network without port security gives its ports none by default.
    plain = await make_net(demo, "no-psec", "10.85.0.0/24", port_security_enabled=False)
    inherited = (await make_port(demo, plain["id"])).json()["port"]
    assert inherited["port_security_enabled"] is False and inherited["security_groups"] == []


async def test_allowed_address_pairs_show_their_mac(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "aap", "10.86.0.0/24")
    port = (await make_port(demo, net["id"], allowed_address_pairs=[
        {"ip_address": "10.86.0.0/28"},
        {"ip_address": "10.86.0.250", "mac_address": "fa:16:3e:aa:bb:cc"}])).json()["port"]
    assert port["allowed_address_pairs"] == [
        {"ip_address": "10.86.0.0/28", "mac_address": port["mac_address"]},
        {"ip_address": "10.86.0.250", "mac_address": "fa:16:3e:aa:bb:cc"}]
    off = await demo.put(f"{NET}/ports/{port['id']}", json={"port": {
        "port_security_enabled": False, "security_groups": []}})
    assert off.status_code == 409  # the pairs must go first


# -- DNS ------------------------------------------------------------------------------------
async def test_dns_name_domain_and_assignment(demo: httpx.AsyncClient) -> None:
    net = (await demo.post(f"{NET}/networks", json={"network": {
        "name": "dns", "dns_domain": "example.org."}})).json()["network"]
    assert net["dns_domain"] == "example.org."
    await _subnet(demo, net["id"], "10.87.0.0/24")
    named = (await make_port(demo, net["id"], dns_name="web1",
                             dns_domain="zone.example.")).json()["port"]
    address = named["fixed_ips"][0]["ip_address"]
    assert named["dns_name"] == "web1" and named["dns_domain"] == "zone.example."
    assert named["dns_assignment"] == [{"hostname": "web1", "ip_address": address,
                                        "fqdn": "web1.openstacklocal."}]
    anonymous = (await make_port(demo, net["id"])).json()["port"]
    ip = anonymous["fixed_ips"][0]["ip_address"]
    host = "host-" + ip.replace(".", "-")
    assert anonymous["dns_assignment"] == [{"hostname": host, "ip_address": ip,
                                            "fqdn": f"{host}.openstacklocal."}]
    renamed = await demo.put(f"{NET}/ports/{anonymous['id']}", json={"port": {"dns_name": "db"}})
    assert renamed.json()["port"]["dns_assignment"][0]["hostname"] == "db"
    bad = await make_port(demo, net["id"], dns_name="-bad-")
    assert bad.status_code == 400


@pytest.mark.parametrize("settings_overrides", [{"dns_domain": "cloud.test"}])
async def test_the_cloud_dns_domain(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "dns2", "10.88.0.0/24")
    port = (await make_port(demo, net["id"], dns_name="vm")).json()["port"]
    assert port["dns_assignment"][0]["fqdn"] == "vm.cloud.test."


# -- IPv6 address modes ---------------------------------------------------------------------
@pytest.mark.parametrize("modes", [
    {"ipv6_ra_mode": "slaac", "ipv6_address_mode": "slaac"},
    {"ipv6_address_mode": "slaac"},
    {"ipv6_ra_mode": "dhcpv6-stateless", "ipv6_address_mode": "dhcpv6-stateless"},
])
async def test_automatic_addresses_are_eui64(demo: httpx.AsyncClient, modes: dict[str, str]) -> None:
    net = await make_net(demo, "v6", "10.89.0.0/24")
    v6 = await _subnet(demo, net["id"], "fd00:89::/64", **modes)
    port = (await make_port(demo, net["id"])).json()["port"]
    assert port["fixed_ips"] == [
        {"subnet_id": port["fixed_ips"][0]["subnet_id"], "ip_address": "10.89.0.2"},
        {"subnet_id": v6["id"], "ip_address": eui64("fd00:89::/64", port["mac_address"])}]
    # Asking for an address there is refused; asking for the subnet gives the EUI-64 one.
    given = await make_port(demo, net["id"], fixed_ips=[{"subnet_id": v6["id"],
                                                         "ip_address": "fd00:89::5"}])
    assert given.status_code == 400 and "automatic addresses" in given.text
    only = (await make_port(demo, net["id"], fixed_ips=[{"subnet_id": v6["id"]}])).json()["port"]
    assert [ip["ip_address"] for ip in only["fixed_ips"]] == [
        eui64("fd00:89::/64", only["mac_address"])]
    # A new MAC, a new EUI-64 address.
    moved = (await demo.put(f"{NET}/ports/{only['id']}", json={"port": {
        "mac_address": "fa:16:3e:12:34:56"}})).json()["port"]
    assert [ip["ip_address"] for ip in moved["fixed_ips"]] == ["fd00:89::f816:3eff:fe12:3456"]


async def test_stateful_dhcpv6_allocates_from_the_pool(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "v6s", None)
    v6 = await _subnet(demo, net["id"], "fd00:90::/64", ipv6_ra_mode="dhcpv6-stateful",
                       ipv6_address_mode="dhcpv6-stateful")
    port = (await make_port(demo, net["id"])).json()["port"]
    assert port["fixed_ips"] == [{"subnet_id": v6["id"], "ip_address": "fd00:90::2"}]
    chosen = (await make_port(demo, net["id"], fixed_ips=[{"ip_address": "fd00:90::99"}]))
    assert chosen.status_code == 201


async def test_a_slaac_subnet_addresses_the_ports_already_there(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "late-v6", "10.91.0.0/24")
    port = (await make_port(demo, net["id"])).json()["port"]
    v6 = await _subnet(demo, net["id"], "fd00:91::/64", ipv6_ra_mode="slaac",
                       ipv6_address_mode="slaac")
    shown = (await demo.get(f"{NET}/ports/{port['id']}")).json()["port"]
    assert shown["fixed_ips"][1] == {"subnet_id": v6["id"],
                                     "ip_address": eui64("fd00:91::/64", port["mac_address"])}


@pytest.mark.parametrize("extra, reason", [
    ({"cidr": "fd00:92::/80", "ipv6_address_mode": "slaac"}, "requires the prefix to be /64"),
    ({"ipv6_ra_mode": "slaac", "ipv6_address_mode": "dhcpv6-stateful"}, "must be the same"),
    ({"ipv6_address_mode": "slaac", "enable_dhcp": False}, "enable_dhcp"),
    ({"cidr": "10.92.0.0/24", "ip_version": 4, "ipv6_ra_mode": "slaac"}, "ip_version is 4"),
])
async def test_bad_ipv6_modes(demo: httpx.AsyncClient, extra: dict[str, Any], reason: str) -> None:
    net = await make_net(demo, "bad-v6", None)
    body = {"network_id": net["id"], "cidr": "fd00:92::/64", "ip_version": 6, **extra}
    resp = await demo.post(f"{NET}/subnets", json={"subnet": body})
    assert resp.status_code == 400 and reason in resp.text


# -- extensions and sorting -----------------------------------------------------------------
async def test_extensions_list_and_show(demo: httpx.AsyncClient) -> None:
    found = (await demo.get(f"{NET}/extensions")).json()["extensions"]
    aliases = {e["alias"] for e in found}
    assert {"standard-attr-tag", "tag-creation", "quotas", "quota_details", "port-security",
            "allowed-address-pairs", "ip-substring-filtering", "dns-integration",
            "dns-domain-ports", "sorting", "net-mtu", "router", "ext-gw-mode",
            "extraroute", "subnet_allocation", "agent"} <= aliases
    # Nothing cirrus does not do.
    assert not aliases & {"multi-provider", "availability_zone",
                          "binding-extended", "network-mtu", "l3-ha", "dvr"}
    one = await demo.get(f"{NET}/extensions/standard-attr-tag")
    assert one.status_code == 200
    assert one.json()["extension"] == next(e for e in found if e["alias"] == "standard-attr-tag")
    assert (await demo.get(f"{NET}/extensions/l3-ha")).status_code == 404


@pytest.mark.parametrize("query, expected", [
    ([("sort_key", "name")], ["a", "b", "c"]),
    ([("sort_key", "name"), ("sort_dir", "desc")], ["c", "b", "a"]),
    ([("sort_key", "mtu"), ("sort_dir", "asc"), ("sort_key", "name"), ("sort_dir", "desc")],
     ["c", "b", "a"]),
    ([("sort_key", "name"), ("limit", "2")], ["a", "b"]),
])
async def test_sorting(demo: httpx.AsyncClient, query: list[tuple[str, str]],
                       expected: list[str]) -> None:
    for name, mtu in (("b", 1400), ("a", 1500), ("c", 1400)):
        await demo.post(f"{NET}/networks", json={"network": {"name": name, "mtu": mtu}})
    listed = (await demo.get(f"{NET}/networks", params=query)).json()["networks"]
    assert [n["name"] for n in listed] == expected


async def test_a_slaac_subnet_is_deleted_with_its_ports_addresses(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "drop-v6", "10.96.0.0/24")
    v6 = await _subnet(demo, net["id"], "fd00:96::/64", ipv6_ra_mode="slaac",
                       ipv6_address_mode="slaac")
    stateful = await _subnet(demo, net["id"], "fd00:97::/64", ipv6_address_mode="dhcpv6-stateful")
    port = (await make_port(demo, net["id"])).json()["port"]
    assert len(port["fixed_ips"]) == 3
    assert (await demo.delete(f"{NET}/subnets/{stateful['id']}")).status_code == 409
    assert (await demo.delete(f"{NET}/subnets/{v6['id']}")).status_code == 204
    shown = (await demo.get(f"{NET}/ports/{port['id']}")).json()["port"]
    assert {ip["subnet_id"] for ip in shown["fixed_ips"]} == {
        port["fixed_ips"][0]["subnet_id"], stateful["id"]}
