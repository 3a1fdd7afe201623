"""Rules of the network API's newer parts as tables: EUI-64 addresses, the
``fixed_ips`` filter, tags, quota updates, DNS assignments, and dnsmasq's
IPv6 options and hosts."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.network import dns, quotas, tags
from cirrus.network import exception as exc
from cirrus.network.backends import dhcpv6
from cirrus.network.backends.dhcp import DhcpFiles, dnsmasq_argv, hosts_text
from cirrus.network.ipam import eui64, is_auto_address
from cirrus.network.port_filters import fixed_ip_filter


@pytest.mark.parametrize("cidr, mac, expected", [
    ("fd00::/64", "fa:16:3e:11:22:33", "fd00::f816:3eff:fe11:2233"),
    ("2001:db8:1:2::/64", "00:00:00:00:00:01", "2001:db8:1:2:200:ff:fe00:1"),
    ("2001:db8::/64", "02:00:00:00:00:00", "2001:db8::ff:fe00:0"),  # the U/L bit flipped off
])
def test_eui64(cidr: str, mac: str, expected: str) -> None:
    assert eui64(cidr, mac) == expected


@pytest.mark.parametrize("version, ra, address, auto", [
    (6, "slaac", "slaac", True), (6, None, "slaac", True), (6, "slaac", None, True),
    (6, "dhcpv6-stateless", "dhcpv6-stateless", True), (6, None, "dhcpv6-stateful", False),
    (6, None, None, False), (4, None, None, False),
])
def test_is_auto_address(version: int, ra: str | None, address: str | None, auto: bool) -> None:
    subnet = {"ip_version": version, "ipv6_ra_mode": ra, "ipv6_address_mode": address}
    assert is_auto_address(subnet) is auto


FIXED = [{"subnet_id": "s1", "ip_address": "10.0.0.15"},
         {"subnet_id": "s2", "ip_address": "fd00::15"}]


@pytest.mark.parametrize("values, matches", [
    ([], True),
    (["ip_address=10.0.0.15"], True), (["ip_address=10.0.0.1"], False),
    (["ip_address_substr=0.0.1"], True), (["ip_address_substr=::1"], True),
    (["ip_address_substr=10.", "ip_address_substr=15"], True),
    (["ip_address_substr=10.", "ip_address_substr=fd"], False),  # both on one address
    (["subnet_id=s2", "ip_address_substr=fd00"], True),
    (["subnet_id=s1", "ip_address_substr=fd00"], False),
    (["ip_address=10.0.0.15", "ip_address=10.0.0.16"], True),
    (["mac_address=x"], False), (["nonsense"], False),
])
def test_fixed_ip_filter(values: list[str], matches: bool) -> None:
    assert fixed_ip_filter(values)(FIXED) is matches


@pytest.mark.parametrize("value, problem", [
    (["a", "b"], None), ([], None), (["x" * 255], None),
    ("a", "not a list"), (["a", "a"], "Duplicate"), ([""], "empty"), ([None], "valid string"),
    (["x" * 256], "maximum length"), (["a\x00"], "NUL"),
    ([str(i) for i in range(51)], "limit of 50"),
])
def test_tags_reason(value: Any, problem: str | None) -> None:
    reason = tags.tags_reason(value)
    assert (reason is None) if problem is None else (problem in (reason or ""))


@pytest.mark.parametrize("body, limits, force", [
    ({"quota": {"port": 5}}, {"port": 5}, False),
    ({"quota": {"port": "5", "network": -1}}, {"port": 5, "network": -1}, False),
    ({"quota": {"subnet": 0, "force": True}}, {"subnet": 0}, True),
    ({"quota": {"subnet": 0, "check_limit": True}}, {"subnet": 0}, False),
    ({"quota": {}}, {}, False),
])
def test_parse_quota_update(body: Any, limits: dict[str, int], force: bool) -> None:
    assert quotas.parse_update(body) == (limits, force)


@pytest.mark.parametrize("body", [
    {"quota": {"port": -2}}, {"quota": {"port": "5x"}}, {"quota": {"port": None}},
    {"quota": {"ports": 5}}, {"quota": {"force": 1}}, {"quota": "x"}, [],
])
def test_bad_quota_updates(body: Any) -> None:
    with pytest.raises(exc.BadRequest):
        quotas.parse_update(body)


@pytest.mark.parametrize("name, domain, expected", [
    ("", "openstacklocal.", ("host-10-0-0-5", "host-10-0-0-5.openstacklocal.")),
    ("web", "openstacklocal", ("web", "web.openstacklocal.")),
    ("web.example.org.", "openstacklocal.", ("web.example.org.", "web.example.org.")),
    ("", "", ("host-10-0-0-5", "host-10-0-0-5")),
])
def test_dns_assignment(name: str, domain: str, expected: tuple[str, str]) -> None:
    [one] = dns.dns_assignment(name, [{"subnet_id": "s", "ip_address": "10.0.0.5"}], domain)
    assert (one["hostname"], one["fqdn"]) == expected
    assert dns.default_hostname("fd00::5") == "host-fd00--5"


def _v6(sid: str, ra: str | None, address: str | None, **extra: Any) -> dict[str, Any]:
    return {"id": sid, "ip_version": 6, "cidr": "fd00:1::/64", "gateway_ip": "fd00:1::1",
            "enable_dhcp": True, "ipv6_ra_mode": ra, "ipv6_address_mode": address,
            "dns_nameservers": ["fd00::53", "192.0.2.53"], "host_routes": [],
            **extra}


@pytest.mark.parametrize("subnet, expected", [
    (_v6("a", "slaac", "slaac"), ["--enable-ra", "--dhcp-range=set:subnet-a,fd00:1::,slaac,64,60s"]),
    (_v6("a", "dhcpv6-stateless", "dhcpv6-stateless"),
     ["--enable-ra", "--dhcp-range=set:subnet-a,fd00:1::,ra-stateless,64,60s",
      "--dhcp-option=tag:subnet-a,option6:dns-server,[fd00::53]"]),
    (_v6("a", "dhcpv6-stateful", "dhcpv6-stateful"),
     ["--enable-ra", "--dhcp-range=set:subnet-a,fd00:1::,static,64,60s",
      "--dhcp-option=tag:subnet-a,option6:dns-server,[fd00::53]"]),
    # An outside router advertises: DHCPv6 only, nothing at all for SLAAC.
    (_v6("a", None, "dhcpv6-stateful", dns_nameservers=[]),
     ["--dhcp-range=set:subnet-a,fd00:1::,static,64,60s"]),
    (_v6("a", None, "slaac"), []),
    (_v6("a", None, None), []),
    (_v6("a", "slaac", "slaac", enable_dhcp=False), []),
    (_v6("a", "slaac", "slaac", gateway_ip=None), []),
])
def test_dhcpv6_options(subnet: dict[str, Any], expected: list[str]) -> None:
    assert dhcpv6.argv([subnet], 60) == expected


def test_hosts_and_argv_of_a_dual_stack_network(tmp_path: Any) -> None:
    v4 = {"id": "four", "ip_version": 4, "cidr": "10.0.0.0/24", "gateway_ip": "10.0.0.1",
          "enable_dhcp": True, "ipv6_ra_mode": None, "ipv6_address_mode": None,
          "dns_nameservers": [], "host_routes": []}
    stateful, slaac = _v6("six", "dhcpv6-stateful", "dhcpv6-stateful"), _v6(
        "auto", "slaac", "slaac", cidr="fd00:2::/64", gateway_ip="fd00:2::1")
    ports = [{"mac_address": "fa:16:3e:00:00:01", "dns_name": "web", "fixed_ips": [
        {"subnet_id": "four", "ip_address": "10.0.0.5"},
        {"subnet_id": "six", "ip_address": "fd00:1::5"},
        {"subnet_id": "auto", "ip_address": "fd00:2::f816:3eff:fe00:1"}]}]
    assert hosts_text(ports, [v4, stateful, slaac]) == (
        "fa:16:3e:00:00:01,10.0.0.5,web\nfa:16:3e:00:00:01,[fd00:1::5],web\n")
    argv = dnsmasq_argv({"mtu": 1450}, [v4, stateful, slaac], DhcpFiles(tmp_path), "brq1", "me")
    assert argv.count("--enable-ra") == 1
    assert "--dhcp-range=set:subnet-auto,fd00:2::,slaac,64,86400s" in argv
    assert "--dhcp-range=set:subnet-four,10.0.0.0,static,255.255.255.0,86400s" in argv


def test_extra_dhcp_options_file_and_host_tags() -> None:
    from cirrus.network.backends.dhcp_opts import opts_text
    port = {"id": "p1", "mac_address": "fa:16:3e:00:00:07", "dns_name": "", "extra_dhcp_opts": [
        {"opt_name": "ntp-server", "opt_value": "192.0.2.123"},
        {"opt_name": "26", "opt_value": "1300"},
        {"opt_name": "dns-server", "opt_value": "[fd00::53]", "ip_version": 6},
        {"opt_name": "tftp-server", "opt_value": None}],
        "fixed_ips": [{"subnet_id": "four", "ip_address": "10.0.0.7"}]}
    assert opts_text([port]) == ("tag:port-p1,option:ntp-server,192.0.2.123\n"
                                 "tag:port-p1,26,1300\n"
                                 "tag:port-p1,option6:dns-server,[fd00::53]\n")
    v4 = {"id": "four", "ip_version": 4, "cidr": "10.0.0.0/24", "gateway_ip": "10.0.0.1",
          "enable_dhcp": True, "ipv6_ra_mode": None, "ipv6_address_mode": None}
    assert hosts_text([port], [v4]) == "fa:16:3e:00:00:07,set:port-p1,10.0.0.7,host-10-0-0-7\n"


@pytest.mark.parametrize("opts, ok", [
    ([{"opt_name": "mtu", "opt_value": "1400"}], True),
    ([{"opt_name": "classless-static-route", "opt_value": "10.0.0.0/8,10.0.0.1"}], True),
    ([{"opt_name": "mtu", "opt_value": "1400\ntag:x,option:router,6.6.6.6"}], False),
    ([{"opt_name": "mtu\r", "opt_value": "1"}], False),
    ([{"opt_name": "a,b", "opt_value": "1"}], False),
])
def test_dhcp_options_cannot_carry_line_breaks(opts: list[dict[str, Any]], ok: bool) -> None:
    from cirrus.network.validators import dhcp_options
    assert (dhcp_options(opts) is None) is ok
