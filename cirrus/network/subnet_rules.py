"""What makes a subnet consistent, on create and on update alike (Neutron's
``_validate_subnet`` and its IPAM's pool checks): the gateway inside the CIDR
and not its network or broadcast address, allocation pools inside the
usable range, apart from each other and from the gateway, routes and name
servers of the subnet's family, IPv6 modes only where they make sense.

The values reaching here passed ``schema.parse`` (their form is right);
these rules relate them to each other. Addresses are stored normalised.
"""
from __future__ import annotations

import ipaddress
from typing import Any

from cirrus.network import exception as exc
from cirrus.network.ipam import default_pools

Net = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
AUTO_ADDRESS_MODES = ("slaac", "dhcpv6-stateless")


def _invalid(reason: str) -> exc.InvalidInput:
    return exc.InvalidInput(reason=reason)


def _of_version(address: str, version: int, name: str) -> Address:
    ip = ipaddress.ip_address(address)
    if ip.version != version:
        raise _invalid(f"{name} '{address}' does not match the ip_version '{version}'")
    return ip


def check_usable(net: Net, enable_dhcp: bool) -> None:
    """A new subnet's CIDR can hold addresses (and a DHCP server, if enabled)."""
    if net.version == 6 and net.network_address == ipaddress.IPv6Address("::"):
        raise _invalid("IPv6 subnet '::' is not supported")
    if net.prefixlen >= net.max_prefixlen - (0 if net.version == 6 else 1):
        raise _invalid(f"Cidr {net} is too small for any address")
    if enable_dhcp:
        if net.is_multicast:
            raise _invalid("Multicast IP subnet is not supported if enable_dhcp is True")
        if net.is_loopback:
            raise _invalid("Loopback IP subnet is not supported if enable_dhcp is True")
        if net.version == 4 and int(net.network_address) == 0:
            raise _invalid("First IP '0.0.0.0' of network is not supported if enable_dhcp is True.")


def check_gateway(net: Net, gateway: str | None) -> str | None:
    """The gateway, normalised: inside ``net``, not its network address nor
    (IPv4) its broadcast address; None is no gateway."""
    if gateway is None:
        return None
    ip = _of_version(gateway, net.version, "gateway_ip")
    if ip not in net:
        raise _invalid(f"Gateway IP {gateway} is not in subnet {net}")
    if ip == net.network_address or (net.version == 4 and ip == net.broadcast_address):
        raise _invalid("Gateway is not valid on subnet")
    return str(ip)


def _usable_range(net: Net) -> tuple[int, int]:
    """The first and last address (as numbers) a pool may hold: never the
    network address, nor the IPv4 broadcast."""
    last = int(net.broadcast_address) - (1 if net.version == 4 else 0)
    return int(net.network_address) + 1, last


def check_pools(net: Net, pools: list[dict[str, str]], gateway: str | None) -> list[dict[str, str]]:
    """``pools`` normalised: each of the subnet's family, start ≤ end, inside the
    usable range; apart from each other (409) and from the gateway (409)."""
    first, last = _usable_range(net)
    ranges: list[tuple[int, int]] = []
    for pool in pools:
        start, end = ipaddress.ip_address(pool["start"]), ipaddress.ip_address(pool["end"])
        shown = f"{pool['start']}-{pool['end']}"
        if start.version != net.version or end.version != net.version or int(start) > int(end):
            raise exc.InvalidAllocationPool(pool=shown)
        if int(start) < first or int(end) > last:
            raise exc.OutOfBoundsAllocationPool(pool=shown, subnet_cidr=str(net))
        ranges.append((int(start), int(end)))
    ordered = sorted(ranges)
    for (s1, e1), (s2, e2) in zip(ordered, ordered[1:]):
        if s2 <= e1:
            raise exc.OverlappingAllocationPools(pool_1=_span(net, s1, e1), pool_2=_span(net, s2, e2),
                                                 subnet_cidr=str(net))
    check_gateway_out_of_pools(net, gateway, ranges)
    return [{"start": str(_address(net, start)), "end": str(_address(net, end))}
            for start, end in ranges]


def _address(net: Net, number: int) -> Address:
    return ipaddress.IPv4Address(number) if net.version == 4 else ipaddress.IPv6Address(number)


def _span(net: Net, start: int, end: int) -> str:
    return f"{_address(net, start)}-{_address(net, end)}"


def check_gateway_out_of_pools(net: Net, gateway: str | None,
                               ranges: list[tuple[int, int]]) -> None:
    """409 if the gateway (of ``net``'s family, checked) is in one of ``ranges``."""
    if gateway is None:
        return
    ip = int(ipaddress.ip_address(gateway))
    for start, end in ranges:
        if start <= ip <= end:
            raise exc.GatewayConflictWithAllocationPools(ip_address=gateway,
                                                         pool=_span(net, start, end))


def _ranges(pools: list[dict[str, str]]) -> list[tuple[int, int]]:
    return [(int(ipaddress.ip_address(p["start"])), int(ipaddress.ip_address(p["end"])))
            for p in pools]


def check_routes(version: int, routes: list[dict[str, str]]) -> list[dict[str, str]]:
    for route in routes:
        _of_version(route["nexthop"], version, "nexthop")
        if ipaddress.ip_network(route["destination"]).version != version:
            raise _invalid(f"destination '{route['destination']}' does not match the "
                           f"ip_version '{version}'")
    return [{"destination": r["destination"], "nexthop": r["nexthop"]} for r in routes]


def check_nameservers(version: int, servers: list[str]) -> list[str]:
    return [str(_of_version(server, version, "dns_nameserver")) for server in servers]


def check_ipv6_modes(net: Net, ra_mode: str | None, address_mode: str | None,
                     enable_dhcp: bool) -> None:
    """IPv6 modes: IPv6 only, with DHCP enabled, equal if both are given, and
    a /64 for the modes that build addresses from the MAC (EUI-64)."""
    if ra_mode is None and address_mode is None:
        return
    if net.version == 4:
        name = "ipv6_ra_mode" if ra_mode is not None else "ipv6_address_mode"
        raise _invalid(f"{name} is not valid when ip_version is 4")
    if not enable_dhcp:
        raise _invalid("ipv6_ra_mode or ipv6_address_mode cannot be set when enable_dhcp is "
                       "set to False")
    if ra_mode is not None and address_mode is not None and ra_mode != address_mode:
        raise _invalid(f"ipv6_ra_mode set to '{ra_mode}' with ipv6_address_mode set to "
                       f"'{address_mode}' is not valid. If both attributes are set, they must "
                       f"be the same value")
    auto = address_mode in AUTO_ADDRESS_MODES or (address_mode is None
                                                  and ra_mode in AUTO_ADDRESS_MODES)
    if auto and net.prefixlen != 64:
        raise _invalid(f"Invalid CIDR {net} for IPv6 address mode. OpenStack uses the EUI-64 "
                       f"address format, which requires the prefix to be /64")


def for_create(net: Net, values: dict[str, Any]) -> dict[str, Any]:
    """The checked, normalised columns of a new subnet on ``net`` from ``values``."""
    enable_dhcp = values.get("enable_dhcp", True)
    check_usable(net, enable_dhcp)
    if "gateway_ip" in values:
        gateway = check_gateway(net, values["gateway_ip"])
    else:
        gateway = str(net.network_address + 1)
    pools = values.get("allocation_pools")
    pools = check_pools(net, pools, gateway) if pools else default_pools(str(net), gateway)
    check_ipv6_modes(net, values.get("ipv6_ra_mode"), values.get("ipv6_address_mode"),
                     enable_dhcp)
    return {"gateway_ip": gateway, "allocation_pools": pools, "enable_dhcp": enable_dhcp,
            "dns_nameservers": check_nameservers(net.version, values.get("dns_nameservers", [])),
            "host_routes": check_routes(net.version, values.get("host_routes", []))}


def for_update(current: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` checked against the stored subnet ``current``, normalised."""
    net = ipaddress.ip_network(current["cidr"])
    out = dict(values)
    gateway = current["gateway_ip"]
    if "gateway_ip" in values:
        gateway = out["gateway_ip"] = check_gateway(net, values["gateway_ip"])
    if "allocation_pools" in values:
        out["allocation_pools"] = check_pools(net, values["allocation_pools"], gateway)
    elif "gateway_ip" in values:
        check_gateway_out_of_pools(net, gateway, _ranges(current["allocation_pools"] or []))
    if "dns_nameservers" in values:
        out["dns_nameservers"] = check_nameservers(net.version, values["dns_nameservers"])
    if "host_routes" in values:
        out["host_routes"] = check_routes(net.version, values["host_routes"])
    if values.get("enable_dhcp") is False and (current["ipv6_ra_mode"]
                                               or current["ipv6_address_mode"]):
        raise _invalid("Cannot disable enable_dhcp with ipv6 attributes set")
    return out
