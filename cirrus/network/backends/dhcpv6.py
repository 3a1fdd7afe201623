"""IPv6 on a network's dnsmasq: router advertisements and DHCPv6.

A subnet's ``ipv6_ra_mode`` says the cloud advertises its prefix (here the
host's bridge, which holds the gateway address, plays the router; dnsmasq
sends the RAs), its ``ipv6_address_mode`` how guests get addresses:

======================  =========================  ================================
mode                    dnsmasq ``--dhcp-range``   guests
======================  =========================  ================================
``slaac``               ``slaac``                  EUI-64 address from the RA
``dhcpv6-stateless``    ``ra-stateless``           EUI-64 address; DNS over DHCPv6
``dhcpv6-stateful``     ``static``                 the port's address over DHCPv6
======================  =========================  ================================

Without an RA mode the prefix is advertised by a router outside the cloud:
dnsmasq serves DHCPv6 only (``static``, both DHCPv6 modes) and nothing for
SLAAC, as Neutron's DHCP agent. The addresses are the ones the IPAM recorded
(EUI-64 ones computed from the MAC), so anti-spoofing lets them through.
"""
from __future__ import annotations

import ipaddress
from typing import Any

RANGE_MODES = {"slaac": "slaac", "dhcpv6-stateless": "ra-stateless",
               "dhcpv6-stateful": "static"}


def _mode(subnet: dict[str, Any]) -> str | None:
    """The subnet's dnsmasq range mode, None if dnsmasq has nothing to do."""
    ra_mode, address_mode = subnet.get("ipv6_ra_mode"), subnet.get("ipv6_address_mode")
    if ra_mode:
        return RANGE_MODES[address_mode or ra_mode]
    if address_mode in ("dhcpv6-stateful", "dhcpv6-stateless"):
        return "static"
    return None


def served(subnets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The IPv6 subnets dnsmasq serves: DHCP enabled, a gateway on the bridge
    (where dnsmasq answers from, and which names the prefix) and a mode."""
    return [s for s in subnets if s["ip_version"] == 6 and s["enable_dhcp"]
            and s["gateway_ip"] and _mode(s)]


def stateful_ids(subnets: list[dict[str, Any]]) -> set[str]:
    """Subnets whose ports get their address over DHCPv6 (hosts entries)."""
    return {s["id"] for s in served(subnets) if s.get("ipv6_address_mode") == "dhcpv6-stateful"}


def argv(subnets: list[dict[str, Any]], lease_seconds: int) -> list[str]:
    """dnsmasq's IPv6 options for ``subnets`` (a network's)."""
    out: list[str] = []
    subs = served(subnets)
    # RAs go out for every IPv6 range once enabled: a network mixing subnets
    # with and without an RA mode has its prefixes advertised by the bridge.
    if any(s.get("ipv6_ra_mode") for s in subs):
        out.append("--enable-ra")
    for subnet in subs:
        net = ipaddress.ip_network(subnet["cidr"], strict=False)
        tag = f"subnet-{subnet['id']}"
        out.append(f"--dhcp-range=set:{tag},{net.network_address},{_mode(subnet)},"
                   f"{net.prefixlen},{lease_seconds}s")
        dns = [f"[{d}]" for d in subnet["dns_nameservers"] or []
               if ipaddress.ip_address(d).version == 6]
        if dns and subnet.get("ipv6_address_mode") != "slaac":
            out.append(f"--dhcp-option=tag:{tag},option6:dns-server," + ",".join(dns))
    return out
