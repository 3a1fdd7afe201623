"""Security groups and anti-spoofing as one nftables script per host.

:func:`render` turns the ports bound to this host (:class:`PortFilter`) into an
``nft -f`` script that replaces two tables in one transaction; :func:`apply`
loads it. Two tables, because of what the kernel offers on a bridge:

* ``table bridge cirrus`` sees each frame with the tap it came from
  (``iifname "tapX"``) but cannot use conntrack, so it only does stateless
  anti-spoofing: the port's MAC, ARP sender MAC/IP, IPv4/IPv6 source
  addresses, no DHCP server or router advertisements from guests.
* ``table inet cirrus`` sees bridged IPv4/IPv6 through ``br_netfilter``
  (``bridge-nf-call-iptables=1``) with conntrack, but there ``iifname`` and
  ``oifname`` are the bridge, not the tap. Each network has its own bridge and
  anti-spoofing pins a port's addresses, so (bridge, source address) names the
  sending port and (bridge, destination address) the receiving one.

Neutron's semantics: established/related traffic passes, egress and ingress
need a matching rule of one of the port's groups (no rule: denied), a rule's
remote group is the fixed addresses of that group's ports, and a port with
port security disabled is neither anti-spoofed nor filtered, and a port's
allowed address pairs are (MAC, address) combinations it may send from, and
that name it as a sender or receiver, like its own. Traffic that names
no filtered port (broadcasts, ports without port security) is not touched.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from cirrus.network.linux import ip

TABLE = "cirrus"
# Protocol names and numbers Neutron accepts → the nft keyword of the protocol.
_PROTOCOLS = {"tcp": "tcp", "6": "tcp", "udp": "udp", "17": "udp", "sctp": "sctp", "132": "sctp",
              "icmp": "icmp", "1": "icmp", "icmpv6": "icmpv6", "ipv6-icmp": "icmpv6",
              "58": "icmpv6"}
# Neighbour discovery and multicast listener messages every IPv6 port needs.
_ICMPV6_ALWAYS = ("nd-router-solicit", "nd-router-advert", "nd-neighbor-solicit",
                  "nd-neighbor-advert", "mld-listener-query", "mld-listener-report",
                  "mld2-listener-report")


@dataclass(frozen=True)
class Rule:
    """One security group rule; ``remote_ips`` is ``remote_group_id`` expanded
    to the fixed addresses of that group's ports (None: the rule has no remote
    group)."""

    direction: str
    ethertype: str = "IPv4"
    protocol: str | None = None
    port_range_min: int | None = None
    port_range_max: int | None = None
    remote_ip_prefix: str | None = None
    remote_ips: tuple[str, ...] | None = None
    id: str = ""


@dataclass(frozen=True)
class PortFilter:
    """What the firewall needs to know about one port bound to this host."""

    id: str
    devname: str
    bridge: str
    mac: str
    ips: tuple[str, ...]
    port_security: bool = True
    rules: tuple[Rule, ...] = ()
    # Allowed address pairs: (MAC, address or CIDR) the port may also send from.
    pairs: tuple[tuple[str, str], ...] = ()

    def addresses(self, version: int) -> list[str]:
        return sorted((a for a in self.ips if ipaddress.ip_address(a).version == version),
                      key=ipaddress.ip_address)

    def pair_addresses(self, version: int) -> list[str]:
        return [addr for _, addr in self.pairs
                if ipaddress.ip_network(addr, strict=False).version == version]

    def with_pairs(self, addresses: list[str], version: int) -> list[str]:
        """``addresses`` and the pairs' of ``version``, merged where they
        overlap (nft refuses overlapping intervals in one set)."""
        extra = self.pair_addresses(version)
        if not extra:
            return addresses
        # One family (``version``) throughout, as collapse_addresses needs.
        nets: list[Any] = [ipaddress.ip_network(a, strict=False) for a in addresses + extra]
        return [str(n.network_address) if n.prefixlen == n.max_prefixlen else str(n)
                for n in ipaddress.collapse_addresses(nets)]

    def link_local(self) -> str:
        """The EUI-64 link-local address a guest derives from the MAC."""
        octets = [int(b, 16) for b in self.mac.split(":")]
        octets[0] ^= 0x02
        eui = octets[:3] + [0xFF, 0xFE] + octets[3:]
        return str(ipaddress.IPv6Address(bytes([0xFE, 0x80] + [0] * 6 + eui)))


def _set(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else "{ " + ", ".join(items) + " }"


def _q(name: str) -> str:
    return '"' + name + '"'


# -- rules ------------------------------------------------------------------------------
def rule_match(rule: Rule) -> str | None:
    """The nft match of one rule (without verdict); None when it can match
    nothing (an empty remote group, a prefix of the other address family)."""
    v4 = rule.ethertype != "IPv6"
    fam, nfproto = ("ip", "ipv4") if v4 else ("ip6", "ipv6")
    # Ingress rules name who may send to the port, egress rules where it may send.
    addr = "saddr" if rule.direction == "ingress" else "daddr"
    parts = [f"meta nfproto {nfproto}"]
    if rule.remote_ips is not None:
        remote = sorted({a for a in rule.remote_ips
                         if ipaddress.ip_address(a).version == (4 if v4 else 6)},
                        key=ipaddress.ip_address)
        if not remote:
            return None
        parts.append(f"{fam} {addr} {_set(remote)}")
    elif rule.remote_ip_prefix:
        net = ipaddress.ip_network(rule.remote_ip_prefix, strict=False)
        if net.version != (4 if v4 else 6):
            return None
        if net.prefixlen:
            parts.append(f"{fam} {addr} {net}")
    proto = _protocol_match(rule, v4)
    if proto:
        parts.append(proto)
    return " ".join(parts)


def _protocol_match(rule: Rule, v4: bool) -> str:
    raw = (rule.protocol or "").lower()
    if raw in ("", "any", "0"):
        return ""
    name = _PROTOCOLS.get(raw)
    if name == "icmp" and not v4:
        name = "icmpv6"  # Neutron: "icmp" on an IPv6 rule means ICMPv6
    if name is None:
        return f"meta l4proto {int(raw)}"
    low, high = rule.port_range_min, rule.port_range_max
    if name in ("icmp", "icmpv6"):
        # For ICMP the range fields are the type and the code.
        if low is None:
            return f"meta l4proto {'icmp' if name == 'icmp' else 'ipv6-icmp'}"
        match = f"{name} type {low}"
        return match + (f" {name} code {high}" if high is not None else "")
    if low is None and high is None:
        return f"meta l4proto {name}"
    low = high if low is None else low
    high = low if high is None else high
    return f"{name} dport {low}" if low == high else f"{name} dport {low}-{high}"


# -- per-port chains --------------------------------------------------------------------
def _pair_lines(port: PortFilter) -> list[str]:
    """What the allowed address pairs let through: each (MAC, address) pair
    as a sender of ARP and IP; then nothing else from a MAC not the port's."""
    lines = []
    for mac, addr in sorted(set(port.pairs)):
        if ipaddress.ip_network(addr, strict=False).version == 4:
            lines += [f"ether saddr {mac} ether type arp arp saddr ether {mac} "
                      f"arp saddr ip {addr} return",
                      f"ether saddr {mac} ether type ip ip saddr {addr} return"]
        else:
            lines.append(f"ether saddr {mac} ether type ip6 ip6 saddr {addr} return")
    others = sorted({mac for mac, _ in port.pairs} - {port.mac})
    for mac in others:  # a pair's MAC needs its link-local address too
        lines.append(f"ether saddr {mac} ether type ip6 ip6 saddr fe80::/10 return")
    if others:
        lines.append(f"ether saddr != {port.mac} ether type {{ arp, ip, ip6 }} counter drop")
    return lines


def _spoof_chain(port: PortFilter) -> list[str]:
    """Stateless anti-spoofing on frames entering the bridge from the tap."""
    v4, v6 = port.addresses(4), port.addresses(6)
    macs = sorted({port.mac, *(mac for mac, _ in port.pairs)})
    # Counters on drops tell an operator which check stopped a guest's traffic.
    lines = [f"ether saddr != {_set(macs)} counter drop",
             # Guests must not answer other guests' DHCP or act as routers.
             "ether type ip udp sport 67 drop", "ether type ip6 udp sport 547 drop",
             "ether type ip6 icmpv6 type nd-router-advert drop",
             *_pair_lines(port),
             f"ether type arp arp saddr ether != {port.mac} counter drop",
             # 0.0.0.0: address conflict probes before the port has an address.
             f"ether type arp arp saddr ip != {_set(['0.0.0.0', *v4])} counter drop",
             "ether type ip ip saddr 0.0.0.0 udp sport 68 udp dport 67 return"]
    lines.append(f"ether type ip ip saddr != {_set(v4)} counter drop" if v4
                 else "ether type ip counter drop")
    lines.append("ether type ip6 ip6 saddr fe80::/10 return")
    if v6:
        lines.append(f"ether type ip6 ip6 saddr {_set(v6)} return")
    # Duplicate address detection and MLD are sent from the unspecified address.
    lines.append("ether type ip6 ip6 saddr :: icmpv6 type "
                 "{ nd-neighbor-solicit, mld-listener-report, mld2-listener-report } return")
    lines.append("ether type ip6 counter drop")
    return lines


def _rule_chain(port: PortFilter, direction: str, verdict: str) -> list[str]:
    lines = []
    for rule in port.rules:
        if rule.direction != direction:
            continue
        match = rule_match(rule)
        if match is not None:
            comment = f' comment "rule {rule.id}"' if rule.id else ""
            lines.append(f"{match} {verdict}{comment}")
    lines.append("counter drop")
    return lines


def _dispatch(ports: list[PortFilter], side: str, target: str) -> list[str]:
    """Send traffic from (``side=saddr``) or to (``daddr``) a filtered port to
    its chain; the bridge plus the pinned address names the port."""
    dev = "iifname" if side == "saddr" else "oifname"
    lines = []
    for port in ports:
        v4 = port.with_pairs(port.addresses(4), 4)
        v6 = port.with_pairs([port.link_local(), *port.addresses(6)], 6)
        if v4:
            lines.append(f"{dev} {_q(port.bridge)} ip {side} {_set(v4)} jump {target}-{port.id}")
        lines.append(f"{dev} {_q(port.bridge)} ip6 {side} {_set(v6)} jump {target}-{port.id}")
    return lines


def _chain(name: str, body: Iterable[str], hook: str | None = None) -> list[str]:
    head = [f"\tchain {name} {{"]
    if hook:
        head.append(f"\t\t{hook}")
    return head + [f"\t\t{line}" for line in body] + ["\t}"]


# -- the script -------------------------------------------------------------------------
def render(view: Iterable[PortFilter]) -> str:
    """The ``nft -f`` script for the ports bound to this host: both tables are
    deleted and (when there are ports) re-created in one transaction."""
    ports = sorted(view, key=lambda p: p.id)
    lines = ["# cirrus host firewall: generated, replaced as a whole",
             f"table bridge {TABLE}", f"delete table bridge {TABLE}",
             f"table inet {TABLE}", f"delete table inet {TABLE}"]
    if not ports:
        return "\n".join(lines) + "\n"
    filtered = [p for p in ports if p.port_security]
    lines += _bridge_table(filtered)
    lines += _inet_table(ports, filtered)
    return "\n".join(lines) + "\n"


def _bridge_table(filtered: list[PortFilter]) -> list[str]:
    # Before br_netfilter (priority 0) hands the frame to the inet hooks.
    out = [f"table bridge {TABLE} {{"]
    out += _chain("prerouting", [f"iifname {_q(p.devname)} jump spoof-{p.id}" for p in filtered],
                  "type filter hook prerouting priority -200; policy accept;")
    for port in filtered:
        out += _chain(f"spoof-{port.id}", _spoof_chain(port))
    return out + ["}"]


def _inet_table(ports: list[PortFilter], filtered: list[PortFilter]) -> list[str]:
    bridges = _set(sorted({_q(p.bridge) for p in ports}))
    common = ["ct state established,related accept", "ct state invalid drop",
              "udp sport 68 udp dport 67 accept", "udp sport 67 udp dport 68 accept",
              "udp sport 546 udp dport 547 accept", "udp sport 547 udp dport 546 accept",
              f"icmpv6 type {{ {', '.join(_ICMPV6_ALWAYS)} }} accept"]
    out = [f"table inet {TABLE} {{"]
    # Traffic not on one of our bridges is not ours to judge.
    out += _chain("forward", [f"iifname != {bridges} oifname != {bridges} accept", *common,
                              "jump egress", "jump ingress"],
                  "type filter hook forward priority filter; policy accept;")
    out += _chain("input", [f"iifname != {bridges} accept", *common, "jump egress"],
                  "type filter hook input priority filter; policy accept;")
    out += _chain("output", [f"oifname != {bridges} accept", *common, "jump ingress"],
                  "type filter hook output priority filter; policy accept;")
    out += _chain("egress", _dispatch(filtered, "saddr", "out"))
    out += _chain("ingress", _dispatch(filtered, "daddr", "in"))
    for port in filtered:
        out += _chain(f"out-{port.id}", _rule_chain(port, "egress", "return"))
        out += _chain(f"in-{port.id}", _rule_chain(port, "ingress", "accept"))
    return out + ["}"]


async def apply(settings: Any, script: str) -> None:
    """Load ``script`` with ``nft -f`` in the host namespace (atomic)."""
    await ip.run(settings, ["nft", "-f", "-"], input=script)


async def check(settings: Any, script: str) -> None:
    """Validate ``script`` against the kernel without loading it (``nft -c``)."""
    await ip.run(settings, ["nft", "-c", "-f", "-"], input=script)
