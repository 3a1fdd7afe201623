"""IP and MAC allocation. The database's unique constraints are the guard:
a candidate that loses a race is simply the next one tried."""
from __future__ import annotations

import ipaddress
import random
from typing import Any, Iterator

import sqlalchemy as sa

from cirrus.network import exception as exc
from cirrus.network.models import ip_allocations, ports

MAC_ATTEMPTS = 16


def default_pools(cidr: str, gateway: str | None) -> list[dict[str, str]]:
    """The whole subnet minus network, broadcast and gateway, as pools."""
    net = ipaddress.ip_network(cidr)
    first = net.network_address + 1
    last = net.broadcast_address - (1 if net.version == 4 else 0)
    if net.num_addresses <= 2:
        return []
    pools = []
    gw = ipaddress.ip_address(gateway) if gateway else None
    if gw is not None and first <= gw <= last:
        if gw > first:
            pools.append({"start": str(first), "end": str(gw - 1)})
        if gw < last:
            pools.append({"start": str(gw + 1), "end": str(last)})
    else:
        pools.append({"start": str(first), "end": str(last)})
    return pools


def _pool_addresses(pools: list[dict[str, str]]) -> Iterator[str]:
    for pool in pools:
        start, end = ipaddress.ip_address(pool["start"]), ipaddress.ip_address(pool["end"])
        current = start
        while current <= end:
            yield str(current)
            current += 1


def in_pools(address: str, pools: list[dict[str, str]]) -> bool:
    ip = ipaddress.ip_address(address)
    return any(ipaddress.ip_address(p["start"]) <= ip <= ipaddress.ip_address(p["end"]) for p in pools)


def allocate_ip(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
                address: str | None = None) -> str:
    """Allocate ``address`` (or the next free one) on ``subnet`` to ``port_id``."""
    if address is not None:
        ip = ipaddress.ip_address(address)
        if ip not in ipaddress.ip_network(subnet["cidr"]):
            raise exc.InvalidInput(reason=f"IP address {address} is not a valid IP for the "
                                          f"specified subnet.")
        if subnet["gateway_ip"] == str(ip):
            raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet["id"])
        try:
            with conn.begin_nested():
                conn.execute(ip_allocations.insert().values(
                    network_id=subnet["network_id"], ip_address=str(ip), subnet_id=subnet["id"],
                    port_id=port_id))
        except sa.exc.IntegrityError:
            raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet["id"]) from None
        return str(ip)
    used = set(conn.execute(sa.select(ip_allocations.c.ip_address).where(
        ip_allocations.c.subnet_id == subnet["id"])).scalars())
    for candidate in _pool_addresses(subnet["allocation_pools"] or []):
        if candidate in used:
            continue
        try:
            with conn.begin_nested():
                conn.execute(ip_allocations.insert().values(
                    network_id=subnet["network_id"], ip_address=candidate, subnet_id=subnet["id"],
                    port_id=port_id))
            return candidate
        except sa.exc.IntegrityError:
            continue  # taken by a concurrent allocation: try the next one
    raise exc.IpAddressGenerationFailure(net_id=subnet["network_id"])


def generate_mac(base_mac: str) -> str:
    """A random MAC under the configured prefix (the first three octets kept)."""
    prefix = base_mac.split(":")[:3]
    return ":".join(prefix + [f"{random.randint(0, 255):02x}" for _ in range(3)])


def mac_in_use(conn: sa.Connection, network_id: str, mac: str) -> bool:
    return conn.execute(sa.select(ports.c.id).where(
        ports.c.network_id == network_id, ports.c.mac_address == mac)).first() is not None
