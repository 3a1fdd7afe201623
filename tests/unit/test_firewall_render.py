"""The linuxbridge firewall: security group rules and anti-spoofing as nft text."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cirrus.network.backends.firewall import PortFilter, Rule, render, rule_match

A = "0a0a0a0a-1111-2222-3333-444455556666"
B = "0b0b0b0b-1111-2222-3333-444455556666"
BRIDGE = "brq9a8b7c6d-5e"


def port(pid: str = A, ips: tuple[str, ...] = ("10.0.0.5",), rules: tuple[Rule, ...] = (),
         port_security: bool = True, mac: str = "fa:16:3e:00:00:01") -> PortFilter:
    return PortFilter(id=pid, devname=("tap" + pid)[:14], bridge=BRIDGE, mac=mac, ips=ips,
                      port_security=port_security, rules=rules)


def chain(script: str, name: str) -> list[str]:
    """The rule lines of chain ``name``."""
    lines = script.splitlines()
    start = lines.index(f"\tchain {name} {{")
    body = []
    for line in lines[start + 1:]:
        if line == "\t}":
            return body
        body.append(line.strip())
    raise AssertionError(f"chain {name} not closed")


def nft_accepts(script: str) -> None:
    """``nft -c`` validates against the kernel in a throw-away namespace."""
    if os.geteuid() != 0 or not shutil.which("nft") or not shutil.which("unshare"):
        return
    done = subprocess.run(["unshare", "--net", "nft", "-c", "-f", "-"], input=script,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr + "\n" + script


# -- single rules ---------------------------------------------------------------------------
@pytest.mark.parametrize("rule, expected", [
    (Rule("egress"), "meta nfproto ipv4"),
    (Rule("egress", "IPv6"), "meta nfproto ipv6"),
    (Rule("ingress", protocol="tcp", port_range_min=22, port_range_max=22),
     "meta nfproto ipv4 tcp dport 22"),
    (Rule("ingress", protocol="udp", port_range_min=1000, port_range_max=2000),
     "meta nfproto ipv4 udp dport 1000-2000"),
    (Rule("ingress", protocol="6", port_range_min=80, port_range_max=81),
     "meta nfproto ipv4 tcp dport 80-81"),
    (Rule("ingress", protocol="tcp"), "meta nfproto ipv4 meta l4proto tcp"),
    (Rule("ingress", protocol="icmp"), "meta nfproto ipv4 meta l4proto icmp"),
    (Rule("ingress", protocol="icmp", port_range_min=8), "meta nfproto ipv4 icmp type 8"),
    (Rule("ingress", protocol="icmp", port_range_min=3, port_range_max=4),
     "meta nfproto ipv4 icmp type 3 icmp code 4"),
    (Rule("ingress", "IPv6", protocol="icmp", port_range_min=128),
     "meta nfproto ipv6 icmpv6 type 128"),
    (Rule("ingress", "IPv6", protocol="ipv6-icmp"), "meta nfproto ipv6 meta l4proto ipv6-icmp"),
    (Rule("ingress", protocol="47"), "meta nfproto ipv4 meta l4proto 47"),
    (Rule("ingress", protocol="any"), "meta nfproto ipv4"),
    (Rule("ingress", remote_ip_prefix="192.168.0.0/16"), "meta nfproto ipv4 ip saddr 192.168.0.0/16"),
    (Rule("egress", remote_ip_prefix="192.168.1.7/32", protocol="tcp", port_range_min=443,
          port_range_max=443), "meta nfproto ipv4 ip daddr 192.168.1.7/32 tcp dport 443"),
    (Rule("ingress", remote_ip_prefix="0.0.0.0/0"), "meta nfproto ipv4"),
    (Rule("ingress", "IPv6", remote_ip_prefix="fd00::/64"), "meta nfproto ipv6 ip6 saddr fd00::/64"),
])
def test_rule_match(rule: Rule, expected: str) -> None:
    assert rule_match(rule) == expected


def test_remote_group_is_expanded_per_family_and_empty_groups_match_nothing() -> None:
    members = ("10.0.0.9", "fd00::9", "10.0.0.10")
    assert rule_match(Rule("ingress", remote_ips=members)) == \
        "meta nfproto ipv4 ip saddr { 10.0.0.9, 10.0.0.10 }"
    assert rule_match(Rule("ingress", "IPv6", remote_ips=members)) == \
        "meta nfproto ipv6 ip6 saddr fd00::9"
    assert rule_match(Rule("egress", remote_ips=("10.0.0.9",), protocol="tcp")) == \
        "meta nfproto ipv4 ip daddr 10.0.0.9 meta l4proto tcp"
    assert rule_match(Rule("ingress", remote_ips=())) is None
    assert rule_match(Rule("ingress", "IPv6", remote_ips=("10.0.0.9",))) is None


# -- whole scripts ---------------------------------------------------------------------------
def test_no_ports_only_removes_the_tables() -> None:
    script = render([])
    assert "delete table inet cirrus" in script and "delete table bridge cirrus" in script
    assert "{" not in script
    nft_accepts(script)


def test_default_group_rules_and_dispatch() -> None:
    rules = (Rule("egress", id="e4"), Rule("egress", "IPv6", id="e6"),
             Rule("ingress", remote_ips=("10.0.0.5", "10.0.0.6"), id="self4"),
             Rule("ingress", "IPv6", remote_ips=("10.0.0.5", "10.0.0.6"), id="self6"))
    script = render([port(rules=rules),
                     port(B, ("10.0.0.6", "fd00::6"), rules, mac="fa:16:3e:00:00:02")])
    assert chain(script, f"out-{A}") == ['meta nfproto ipv4 return comment "rule e4"',
                                         'meta nfproto ipv6 return comment "rule e6"', "counter drop"]
    # The IPv6 remote group has no IPv6 member: that rule matches nothing.
    assert chain(script, f"in-{A}") == [
        'meta nfproto ipv4 ip saddr { 10.0.0.5, 10.0.0.6 } accept comment "rule self4"', "counter drop"]
    assert chain(script, "egress") == [
        f'iifname "{BRIDGE}" ip saddr 10.0.0.5 jump out-{A}',
        f'iifname "{BRIDGE}" ip6 saddr fe80::f816:3eff:fe00:1 jump out-{A}',
        f'iifname "{BRIDGE}" ip saddr 10.0.0.6 jump out-{B}',
        f'iifname "{BRIDGE}" ip6 saddr {{ fe80::f816:3eff:fe00:2, fd00::6 }} jump out-{B}']
    assert chain(script, "ingress")[0] == f'oifname "{BRIDGE}" ip daddr 10.0.0.5 jump in-{A}'
    forward = chain(script, "forward")
    assert forward[0] == "type filter hook forward priority filter; policy accept;"
    assert forward[1] == f'iifname != "{BRIDGE}" oifname != "{BRIDGE}" accept'
    assert forward[2:4] == ["ct state established,related accept", "ct state invalid drop"]
    assert "udp sport 68 udp dport 67 accept" in forward
    assert forward[-2:] == ["jump egress", "jump ingress"]
    assert chain(script, "input")[-1] == "jump egress"
    assert chain(script, "output")[-1] == "jump ingress"
    nft_accepts(script)


def test_no_rules_means_everything_dropped() -> None:
    script = render([port()])
    assert chain(script, f"out-{A}") == ["counter drop"]
    assert chain(script, f"in-{A}") == ["counter drop"]
    nft_accepts(script)


def test_anti_spoofing() -> None:
    script = render([port(ips=("10.0.0.5", "10.0.1.5", "fd00::5"))])
    assert chain(script, "prerouting")[1] == f'iifname "tap0a0a0a0a-11" jump spoof-{A}'
    spoof = chain(script, f"spoof-{A}")
    assert spoof[0] == "ether saddr != fa:16:3e:00:00:01 counter drop"
    assert "ether type arp arp saddr ether != fa:16:3e:00:00:01 counter drop" in spoof
    assert "ether type arp arp saddr ip != { 0.0.0.0, 10.0.0.5, 10.0.1.5 } counter drop" in spoof
    # DHCP from the unspecified address is allowed, before the source check.
    dhcp = spoof.index("ether type ip ip saddr 0.0.0.0 udp sport 68 udp dport 67 return")
    assert spoof.index("ether type ip ip saddr != { 10.0.0.5, 10.0.1.5 } counter drop") > dhcp
    assert "ether type ip udp sport 67 drop" in spoof  # no DHCP servers in guests
    assert "ether type ip6 ip6 saddr fe80::/10 return" in spoof
    assert "ether type ip6 ip6 saddr fd00::5 return" in spoof
    assert spoof[-1] == "ether type ip6 counter drop"
    nft_accepts(script)


def test_port_without_addresses_sends_only_dhcp() -> None:
    spoof = chain(render([port(ips=())]), f"spoof-{A}")
    assert "ether type ip counter drop" in spoof
    assert "ether type arp arp saddr ip != 0.0.0.0 counter drop" in spoof


def test_port_security_disabled_is_neither_spoof_checked_nor_filtered() -> None:
    open_port = port(B, ("10.0.0.6",), (Rule("ingress", protocol="tcp"),), port_security=False,
                     mac="fa:16:3e:00:00:02")
    script = render([port(), open_port])
    assert B not in script
    assert "tap0b0b0b0b-11" not in script
    assert f"jump spoof-{A}" in script and f"jump in-{A}" in script
    # Its bridge is still judged (traffic to filtered ports on it).
    assert f'iifname != "{BRIDGE}"' in script
    nft_accepts(script)
    only_open = render([open_port])
    assert "jump" not in only_open.replace("jump egress", "").replace("jump ingress", "")
    nft_accepts(only_open)


def test_render_is_deterministic() -> None:
    rules = (Rule("ingress", remote_ips=("10.0.0.7", "10.0.0.6")),)
    one = render([port(rules=rules), port(B, ("10.0.0.6",), mac="fa:16:3e:00:00:02")])
    two = render([port(B, ("10.0.0.6",), mac="fa:16:3e:00:00:02"), port(rules=rules)])
    assert one == two


def test_many_rules_and_ports_are_accepted_by_nft() -> None:
    rules = tuple(Rule("ingress", protocol=proto, port_range_min=low, port_range_max=high,
                       remote_ip_prefix=prefix, id=f"r{i}")
                  for i, (proto, low, high, prefix) in enumerate([
                      ("tcp", 22, 22, None), ("udp", 53, 53, "10.0.0.0/8"),
                      ("icmp", 8, 0, None), ("icmp", None, None, "0.0.0.0/0"),
                      ("sctp", 100, 200, None), ("132", None, None, None), ("50", None, None, None)]))
    ports = [port(f"{i:08x}-1111-2222-3333-444455556666", (f"10.0.{i}.5", f"fd00::{i}"),
                  rules + (Rule("egress", "IPv6", protocol="icmp", port_range_min=135),),
                  mac=f"fa:16:3e:00:01:{i:02x}") for i in range(20)]
    nft_accepts(render(ports))


def test_allowed_address_pairs_in_anti_spoofing_and_dispatch() -> None:
    pairs = (("fa:16:3e:00:00:01", "10.0.0.0/28"), ("fa:16:3e:00:00:09", "10.0.0.100"),
             ("fa:16:3e:00:00:01", "fd00::/64"))
    script = render([PortFilter(id=A, devname="tap0a0a0a0a-11", bridge=BRIDGE,
                                mac="fa:16:3e:00:00:01", ips=("10.0.0.5", "fd00::5"),
                                pairs=pairs)])
    spoof = chain(script, f"spoof-{A}")
    assert spoof[0] == "ether saddr != { fa:16:3e:00:00:01, fa:16:3e:00:00:09 } counter drop"
    # Each pair may send ARP and IP from its MAC and address (the server drops come first).
    assert spoof.index("ether type ip udp sport 67 drop") < spoof.index(
        "ether saddr fa:16:3e:00:00:09 ether type ip ip saddr 10.0.0.100 return")
    assert ("ether saddr fa:16:3e:00:00:09 ether type arp arp saddr ether fa:16:3e:00:00:09 "
            "arp saddr ip 10.0.0.100 return") in spoof
    assert "ether saddr fa:16:3e:00:00:01 ether type ip ip saddr 10.0.0.0/28 return" in spoof
    assert "ether saddr fa:16:3e:00:00:01 ether type ip6 ip6 saddr fd00::/64 return" in spoof
    # The other MAC may do nothing else.
    assert ("ether saddr != fa:16:3e:00:00:01 ether type { arp, ip, ip6 } counter drop"
            in spoof)
    # The pairs' addresses name the port too, merged with its own where they overlap.
    assert chain(script, "egress")[0] == \
        f'iifname "{BRIDGE}" ip saddr {{ 10.0.0.0/28, 10.0.0.100 }} jump out-{A}'
    assert chain(script, "ingress")[1] == \
        f'oifname "{BRIDGE}" ip6 daddr {{ fd00::/64, fe80::f816:3eff:fe00:1 }} jump in-{A}'
    nft_accepts(script)


def test_dhcpv6_server_answers_pass() -> None:
    forward = chain(render([port()]), "output")
    assert "udp sport 547 udp dport 546 accept" in forward
