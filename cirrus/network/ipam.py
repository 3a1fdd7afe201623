"""IP and MAC allocation. The database's unique constraints are the guard:
a candidate that loses a race is simply the next one tried."""
from __future__ import annotations

import functools
import ipaddress
import random
from typing import Any, Iterator

import sqlalchemy as sa

from cirrus.db.prepared import Prepared, statement_savepoint
from cirrus.network import exception as exc
from cirrus.network.models import ip_allocations, ports

MAC_ATTEMPTS = 16
# Built once: every port creation runs these.
_TAKEN = Prepared(sa.select(sa.func.count()).select_from(ip_allocations).where(
    ip_allocations.c.subnet_id == sa.bindparam("w_subnet")))
_INSERT = Prepared(ip_allocations.insert().values(
    network_id=sa.bindparam("v_network"), ip_address=sa.bindparam("v_address"),
    subnet_id=sa.bindparam("v_subnet"), port_id=sa.bindparam("v_port")))
_MAC_USED = Prepared(sa.select(ports.c.id).where(
    ports.c.network_id == sa.bindparam("w_network"), ports.c.mac_address == sa.bindparam("w_mac")))


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


@functools.lru_cache(maxsize=1024)
def _pool_bounds(start: str, end: str) -> tuple[Any, int]:
    """A pool's first address and size, parsed once per pool (every boot
    allocates from the same few pools; parsing was most of nth_in_pools)."""
    first = ipaddress.ip_address(start)
    return first, int(ipaddress.ip_address(end)) - int(first) + 1


def nth_in_pools(pools: list[dict[str, str]], n: int) -> str | None:
    """The ``n``-th address (from 0) of ``pools`` in order, or None past their end."""
    for pool in pools:
        first, size = _pool_bounds(pool["start"], pool["end"])
        if n < size:
            return str(first + n)
        n -= size
    return None


def _insert(conn: sa.Connection, subnet: dict[str, Any], port_id: str, address: str) -> bool:
    """Record ``address`` for ``port_id``; False if it is taken."""
    try:
        with statement_savepoint(conn):
            _INSERT.execute(conn, v_network=subnet["network_id"], v_address=address,
                            v_subnet=subnet["id"], v_port=port_id)
        return True
    except sa.exc.IntegrityError:
        return False


def allocate_ip(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
                address: str | None = None) -> str:
    """Allocate ``address`` (or the next free one) on ``subnet`` to ``port_id``.

    Without ``address``: while nothing was released, the first ``k`` pool
    addresses are the ``k`` taken, so the ``k``-th is tried first — a count,
    not a walk over every allocation, so the cost stays flat as the subnet
    fills. If it is taken (a hole from a release, a racing allocation), the
    pools are walked for the first free address as before.
    """
    if address is not None:
        ip = ipaddress.ip_address(address)
        if ip not in ipaddress.ip_network(subnet["cidr"]):
            raise exc.InvalidInput(reason=f"IP address {address} is not a valid IP for the "
                                          f"specified subnet.")
        if subnet["gateway_ip"] == str(ip) or not _insert(conn, subnet, port_id, str(ip)):
            raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet["id"])
        return str(ip)
    pools = subnet["allocation_pools"] or []
    taken = _TAKEN.execute(conn, w_subnet=subnet["id"]).fetchone()[0]
    guess = nth_in_pools(pools, taken)
    if guess is not None and _insert(conn, subnet, port_id, guess):
        return guess
    used = set(conn.execute(sa.select(ip_allocations.c.ip_address).where(
        ip_allocations.c.subnet_id == subnet["id"])).scalars())
    for candidate in _pool_addresses(pools):
        if candidate not in used and _insert(conn, subnet, port_id, candidate):
            return candidate  # a taken one was a concurrent allocation: next
    raise exc.IpAddressGenerationFailure(net_id=subnet["network_id"])


def generate_mac(base_mac: str) -> str:
    """A random MAC under the configured prefix (the first three octets kept)."""
    prefix = base_mac.split(":")[:3]
    return ":".join(prefix + [f"{random.randint(0, 255):02x}" for _ in range(3)])


def mac_in_use(conn: sa.Connection, network_id: str, mac: str) -> bool:
    return _MAC_USED.execute(conn, w_network=network_id, w_mac=mac).fetchone() is not None
