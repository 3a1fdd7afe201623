"""A router's NAT as one nftables script (Neutron's ``iptables_manager``
rules for a router, in nft).

:func:`render` turns a :class:`RouterSpec` into an ``nft -f`` script that
replaces the namespace's ``table ip cirrus-nat`` in one transaction:

* ``prerouting``/``output``: floating → fixed DNAT (``output`` so the router
  itself reaches a floating address as the guests do);
* ``postrouting``: traffic between internal networks keeps its addresses;
  a fixed address with a floating IP leaves as the floating one; the rest of
  the internal subnets leaves ``qg`` as the gateway address (``enable_snat``);
  a guest reaching another guest's floating IP from inside ("hairpin") is
  masqueraded to the router's interface address so the answer comes back
  through the router;
* ``forward``: a connection DNATed to a (floating, fixed) pair the spec no
  longer lists is dropped. Conntrack keeps NAT bindings of existing flows
  after the rules change; without this a disassociated floating IP would keep
  carrying the connections opened through it.

IPv6 is routed, never NATed (as in Neutron).
"""
from __future__ import annotations

import ipaddress

from cirrus.network.l3.spec import RouterSpec

TABLE = "cirrus-nat"
QR_PREFIX, QG_PREFIX = "qr-", "qg-"


def device_name(prefix: str, port_id: str) -> str:
    """A router port's device in the namespace (``qr-``/``qg-`` + 11 chars)."""
    return prefix + port_id[:11]


def _set(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "{ " + ", ".join(items) + " }"


def _v4(cidrs: tuple[str, ...]) -> list[ipaddress.IPv4Interface]:
    out = []
    for cidr in cidrs:
        iface = ipaddress.ip_interface(cidr)
        if isinstance(iface, ipaddress.IPv4Interface):
            out.append(iface)
    return out


def internal_subnets(spec: RouterSpec) -> list[str]:
    """The IPv4 subnets of the router's interfaces, sorted."""
    nets = {iface.network for port in spec.interfaces for iface in _v4(port.cidrs)}
    return [str(n) for n in sorted(nets)]


def gateway_address(spec: RouterSpec) -> str | None:
    """The address internal traffic is SNATed to: the gateway's first IPv4."""
    if spec.gateway is None:
        return None
    found = _v4(spec.gateway.port.cidrs)
    return str(found[0].ip) if found else None


def _pairs(spec: RouterSpec) -> list[tuple[str, str]]:
    """(floating, fixed) IPv4 pairs, sorted by floating address."""
    pairs = {(f.floating_ip_address, f.fixed_ip_address) for f in spec.floating_ips
             if ipaddress.ip_address(f.floating_ip_address).version == 4}
    return sorted(pairs, key=lambda p: ipaddress.ip_address(p[0]))


def _map(pairs: list[tuple[str, str]]) -> str:
    return "{ " + ", ".join(f"{k} : {v}" for k, v in pairs) + " }"


def dnat_rules(spec: RouterSpec) -> list[str]:
    """Floating → fixed, for ``prerouting`` and ``output``."""
    pairs = _pairs(spec)
    return [f"dnat to ip daddr map {_map(pairs)}"] if pairs else []


def snat_rules(spec: RouterSpec) -> list[str]:
    """``postrouting``: the order matters, the first matching NAT rule wins."""
    if spec.gateway is None:
        return []
    qg = '"' + device_name(QG_PREFIX, spec.gateway.port.port_id) + '"'
    pairs, subnets, gateway = _pairs(spec), internal_subnets(spec), gateway_address(spec)
    # East-west: routed between internal networks untouched.
    lines = [f"oifname != {qg} ct status & dnat == 0 accept"]
    if pairs:
        fixed_to_floating = [(fixed, floating) for floating, fixed in pairs]
        lines.append(f"snat to ip saddr map {_map(sorted(fixed_to_floating))}")
    if subnets and gateway and spec.gateway.enable_snat:
        lines.append(f"oifname {qg} ip saddr {_set(subnets)} snat to {gateway}")
    if pairs and subnets:
        lines.append(f"ct status dnat ip saddr {_set(subnets)} masquerade")
    return lines


def stale_dnat_rules(spec: RouterSpec) -> list[str]:
    """``forward``: drop flows NATed through a pair no longer listed."""
    pairs = _pairs(spec)
    if not pairs:
        return ["ct status dnat drop"]
    listed = "{ " + ", ".join(f"{floating} . {fixed}" for floating, fixed in pairs) + " }"
    return [f"ct status dnat ct original ip daddr . ct reply ip saddr != {listed} drop"]


def _chain(name: str, hook: str, body: list[str]) -> list[str]:
    return [f"\tchain {name} {{", f"\t\t{hook}", *[f"\t\t{line}" for line in body], "\t}"]


def render(spec: RouterSpec) -> str:
    """The ``nft -f`` script for one router namespace: the table is deleted
    and re-created in one transaction (no window without NAT)."""
    lines = ["# cirrus router NAT: generated, replaced as a whole",
             f"table ip {TABLE}", f"delete table ip {TABLE}", f"table ip {TABLE} {{"]
    lines += _chain("prerouting", "type nat hook prerouting priority dstnat; policy accept;",
                    dnat_rules(spec))
    lines += _chain("output", "type nat hook output priority -100; policy accept;",
                    dnat_rules(spec))
    lines += _chain("postrouting", "type nat hook postrouting priority srcnat; policy accept;",
                    snat_rules(spec))
    lines += _chain("forward", "type filter hook forward priority filter; policy accept;",
                    stale_dnat_rules(spec))
    return "\n".join([*lines, "}"]) + "\n"
