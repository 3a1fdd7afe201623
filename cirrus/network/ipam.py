"""IP and MAC allocation. The database's unique constraints are the guard:
a candidate that loses a race is simply the next one tried."""
from __future__ import annotations

import enum
import functools
import ipaddress
import itertools
import random
import socket
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cirrus.db import pending
from cirrus.db.prepared import Prepared
from cirrus.network import exception as exc
from cirrus.network.models import ip_allocations, ports, subnets
from cirrus.network.validators import shown

MAC_ATTEMPTS = 16
# Tries of the counter's guess before the walk over the subnet's addresses.
GUESSES = 4
# Addresses above the count (and free ones in the walk) that racing
# allocations spread over once they have lost twice (PostgreSQL, computes
# allocating side by side: docs/performance.md, "Distributed (issue 22)").
SPREAD_WINDOW = 16
# IPv6 modes in which a port's address is built from its MAC (EUI-64), by the
# guest (SLAAC) and identically by the IPAM, which records it.
AUTO_ADDRESS_MODES = ("slaac", "dhcpv6-stateless")
# Built once: every port creation runs these. The subnet's count of
# allocations is kept by triggers on ip_allocations (migration 0006).
_TAKEN = Prepared(sa.select(subnets.c.allocated).where(subnets.c.id == sa.bindparam("w_subnet")))
_ROW: dict[str, Any] = {
    "network_id": sa.bindparam("v_network"), "ip_address": sa.bindparam("v_address"),
    "subnet_id": sa.bindparam("v_subnet"), "port_id": sa.bindparam("v_port")}
_INSERT = Prepared(ip_allocations.insert().values(**_ROW))
# PostgreSQL: a taken address is skipped, not an error, so no savepoint
# around each try (SAVEPOINT, INSERT, RELEASE or ROLLBACK TO: three round
# trips, where racing computes try several addresses a boot). RETURNING says
# whether the row went in.
_INSERT_IF_FREE = Prepared(postgresql.insert(ip_allocations).values(**_ROW)
                           .on_conflict_do_nothing().returning(ip_allocations.c.ip_address))
_USED = Prepared(sa.select(ip_allocations.c.ip_address).where(
    ip_allocations.c.subnet_id == sa.bindparam("w_subnet")))
# PostgreSQL, a guessed address: taken only if no other transaction is trying
# it (an advisory lock on the subnet and address, held to the transaction's
# end). Without it, computes in separate processes guessing the same address
# each waited for the first one's COMMIT to learn it was taken (3 ms a lost
# guess, most of a boot's guesses at 50 in flight: docs/performance.md, round
# nine); a busy address is skipped at once, as this process's ``InFlight``
# skips its own. The unique key still decides.
def guess_lock(subnet: sa.BindParameter[str], address: sa.BindParameter[str],
               name: str = "lock") -> sa.CTE:
    """The CTE ``name`` whose one column ``held`` says whether this
    transaction holds the guess lock on (``subnet``, ``address``) — taken if
    free, never waited for. Every statement that inserts a guessed address
    takes it through here, so all of them key the lock alike."""
    return sa.select(sa.func.pg_try_advisory_xact_lock(
        sa.func.hashtext(subnet), sa.func.hashtext(address)).label("held")).cte(name)


_LOCK = guess_lock(sa.bindparam("v_subnet", type_=sa.String),
                   sa.bindparam("v_address", type_=sa.String))
_GUESS = postgresql.insert(ip_allocations).from_select(
    list(_ROW), sa.select(*_ROW.values()).select_from(_LOCK).where(_LOCK.c.held)
).on_conflict_do_nothing().returning(ip_allocations.c.ip_address).cte("guess")
_INSERT_GUESS = Prepared(sa.select(sa.select(_LOCK.c.held).scalar_subquery(),
                                   sa.select(_GUESS.c.ip_address).scalar_subquery()))
_MAC_USED = Prepared(sa.select(ports.c.id).where(
    ports.c.network_id == sa.bindparam("w_network"), ports.c.mac_address == sa.bindparam("w_mac")))


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _between(ip: Address, low: Address, high: Address) -> bool:
    """Whether ``ip`` lies in [low, high]; an address of another IP version
    never does (comparing the two raises TypeError)."""
    return ip.version == low.version == high.version and int(low) <= int(ip) <= int(high)


def default_pools(cidr: str, gateway: str | None) -> list[dict[str, str]]:
    """The whole subnet minus network, broadcast and gateway, as pools."""
    net = ipaddress.ip_network(cidr)
    first = net.network_address + 1
    last = net.broadcast_address - (1 if net.version == 4 else 0)
    if net.num_addresses <= 2:
        return []
    pools = []
    gw = ipaddress.ip_address(gateway) if gateway else None
    if gw is not None and _between(gw, first, last):
        if int(gw) > int(first):
            pools.append({"start": str(first), "end": str(gw - 1)})
        if int(gw) < int(last):
            pools.append({"start": str(gw + 1), "end": str(last)})
    else:
        pools.append({"start": str(first), "end": str(last)})
    return pools


# Only spreads racers; seeded by no one else (see _MAC_RANDOM).
_SPREAD = random.Random()


def _free_in_pools(pools: list[dict[str, str]], used: set[int]) -> Iterator[str]:
    """The addresses of ``pools`` in order whose integers are not in ``used``,
    made into text only as they are taken (a walk passes every used one)."""
    for pool in pools:
        kind, first, last = _pool_range(pool["start"], pool["end"])
        for value in range(first, last + 1):
            if value not in used:
                yield str(kind(value))


def _address_value(address: str) -> int:
    """The integer of an address as the database holds it (canonical text):
    ``inet_pton`` reads it in a fraction of ``ipaddress``'s time, and a walk
    reads every address of the subnet."""
    try:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return int.from_bytes(socket.inet_pton(family, address), "big")
    except OSError:  # another spelling (a scope): the slow reading
        try:
            return int(ipaddress.ip_address(address))
        except ValueError:
            return -1  # no address: stands for none of the pools'


def in_pools(address: str, pools: list[dict[str, str]]) -> bool:
    ip = ipaddress.ip_address(address)
    return any(_between(ip, ipaddress.ip_address(p["start"]), ipaddress.ip_address(p["end"]))
               for p in pools)


@functools.lru_cache(maxsize=1024)
def _pool_range(start: str, end: str) -> tuple[type[Address], int, int]:
    """A pool as its address type and first and last integers, parsed once
    per pool (every boot allocates from the same few pools); empty (last
    before first) if its ends are of two IP versions."""
    low, high = ipaddress.ip_address(start), ipaddress.ip_address(end)
    if low.version != high.version:
        return type(low), 1, 0
    return type(low), int(low), int(high)


def nth_in_pools(pools: list[dict[str, str]], n: int) -> str | None:
    """The ``n``-th address (from 0) of ``pools`` in order, or None past their end."""
    for pool in pools:
        kind, first, last = _pool_range(pool["start"], pool["end"])
        size = max(0, last - first + 1)
        if n < size:
            return str(kind(first + n))
        n -= size
    return None


class InFlight:
    """The pool indices that this process's allocations have tried and whose
    transactions have not ended, by subnet id: a hint, never the guard.

    On PostgreSQL an allocation cannot see another's uncommitted address; the
    computes of one process (the all-in-one's three) read the same count and
    guessed the same address, the loser waited for the winner's COMMIT, then
    counted again or walked the subnet (docs/performance.md, "Distributed
    (issue 22)"). An index held here is skipped instead. The unique key still
    decides: a hint that is stale (another process's address, a claim
    released a moment early) only costs the lost guess it did before. Alone,
    an allocation finds nothing held, so the order of addresses is the
    counter's, holes filled by the walk, as without it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # allocations run on several DB threads
        self._held: dict[str, set[int]] = {}

    def claim(self, subnet_id: str, index: int) -> int:
        """The first index from ``index`` on that nothing holds, now held."""
        with self._lock:
            held = self._held.setdefault(subnet_id, set())
            while index in held:
                index += 1
            held.add(index)
            return index

    def held(self, subnet_id: str) -> set[int]:
        """A copy of the indices held on ``subnet_id``."""
        with self._lock:
            return set(self._held.get(subnet_id, ()))

    def release(self, claims: Iterable[tuple[str, int]]) -> None:
        with self._lock:
            for subnet_id, index in claims:
                held = self._held.get(subnet_id)
                if held is not None:
                    held.discard(index)
                    if not held:
                        del self._held[subnet_id]


# This process's: shared by every compute's network API in it.
PROCESS_IN_FLIGHT = InFlight()


@dataclass
class Claims:
    """One allocation's indices held in ``in_flight``; its caller releases
    them (:meth:`release`) once the allocation's transaction has ended,
    committed or not (then the counter, or nothing, holds the address)."""

    in_flight: InFlight
    held: list[tuple[str, int]] = field(default_factory=list)

    def claim(self, subnet_id: str, index: int) -> int:
        index = self.in_flight.claim(subnet_id, index)
        self.held.append((subnet_id, index))
        return index

    def release(self) -> None:
        self.in_flight.release(self.held)
        self.held.clear()


def with_earlier_units(conn: sa.Connection, subnet_id: str, counted: int) -> int:
    """The subnet's ``allocated`` counter as read (``counted``) plus the
    addresses earlier units of a shared transaction took: on PostgreSQL the
    counter changes at COMMIT (``cirrus.db.pending``)."""
    return counted + pending.added(conn, f"allocated:{subnet_id}").get("n", 0)


def _insert(conn: sa.Connection, subnet: dict[str, Any], port_id: str, address: str) -> bool:
    """Record ``address`` for ``port_id``; False if it is taken."""
    values = {"v_network": subnet["network_id"], "v_address": address,
              "v_subnet": subnet["id"], "v_port": port_id}
    if conn.dialect.name == "postgresql":
        if not _INSERT_IF_FREE.execute(conn, **values).fetchall():
            return False
        pending.add(conn, f"allocated:{subnet['id']}", {"n": 1})
        return True
    try:  # SQLite backs out the failed statement alone, the transaction goes on
        _INSERT.execute(conn, **values)
        return True
    except sa.exc.IntegrityError:
        return False


class Guess(enum.Enum):
    """What a guessed address met: it went in, another transaction is trying
    it (PostgreSQL: skip it, the count says nothing new), or it is taken."""

    IN = "in"
    BUSY = "busy"
    TAKEN = "taken"


# Busy addresses a guess passes over before it counts as a lost one: about
# the allocations in flight at once.
BUSY_SKIPS = 64


def _try_insert(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
                address: str) -> Guess:
    """Record the guessed ``address`` for ``port_id`` unless another
    transaction is trying it (PostgreSQL's advisory lock)."""
    if conn.dialect.name != "postgresql":
        return Guess.IN if _insert(conn, subnet, port_id, address) else Guess.TAKEN
    held, got = _INSERT_GUESS.execute(
        conn, v_network=subnet["network_id"], v_address=address, v_subnet=subnet["id"],
        v_port=port_id).fetchone()
    if got is None:
        return Guess.TAKEN if held else Guess.BUSY
    pending.add(conn, f"allocated:{subnet['id']}", {"n": 1})
    return Guess.IN


def allocate_ip(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
                address: str | None = None, taken: dict[str, int] | None = None,
                claims: Claims | None = None) -> str:
    """Allocate ``address`` (or the next free one) on ``subnet`` to ``port_id``.

    Without ``address``: while nothing was released, the first ``k`` pool
    addresses are the ``k`` taken, so the ``k``-th is tried first — the
    subnet's counter, not a walk over every allocation, so the cost stays flat
    as the subnet fills. If it is taken by a racing allocation, the counter is
    read again and its guess tried (up to ``GUESSES`` in all); past a hole
    from a release, the pools are walked for the first free address.

    ``taken``: the addresses allocated per subnet id, read earlier in this
    transaction (see ``networks.subnets_to_allocate``) instead of here; it
    counts this allocation too. ``claims``: guesses skip (and hold) the
    indices this process's other allocations in flight hold (:class:`InFlight`).
    """
    if address is not None:
        allocated = _allocate_given(conn, subnet, port_id, address)
    else:
        allocated = _allocate_next(conn, subnet, port_id, taken, claims)
    if taken is not None and subnet["id"] in taken:
        taken[subnet["id"]] += 1
    return allocated


def first_guess(subnet: dict[str, Any], taken: dict[str, int], claims: Claims) -> str | None:
    """The address :func:`allocate_ip` tries first on ``subnet`` (its index
    now held in ``claims``), for a caller that sends it with the port's
    insert (``ports._with_first_address``); None past the pools' end. If it
    is taken, ``allocate_ip`` goes on, past it (still held)."""
    index = claims.claim(subnet["id"], taken[subnet["id"]])
    return nth_in_pools(subnet["allocation_pools"] or [], index)


def took_guess(conn: sa.Connection, subnet: dict[str, Any], taken: dict[str, int]) -> None:
    """:func:`first_guess`'s address went in: counted, as ``allocate_ip`` counts."""
    pending.add(conn, f"allocated:{subnet['id']}", {"n": 1})
    taken[subnet["id"]] += 1


def _allocate_given(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
                    address: str) -> str:
    reason = unusable_reason(subnet, address, gateway=False)
    if reason:
        raise exc.InvalidInput(reason=reason)
    ip = str(ipaddress.ip_address(address))
    if subnet["gateway_ip"] == ip or not _insert(conn, subnet, port_id, ip):
        raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet["id"])
    return ip


def allocate_gateway(conn: sa.Connection, subnet: dict[str, Any], port_id: str) -> str:
    """Give ``subnet``'s gateway address to ``port_id`` (a router interface:
    the one port Neutron lets hold it); 409 if another port holds it."""
    if not _insert(conn, subnet, port_id, subnet["gateway_ip"]):
        raise exc.IpAddressAlreadyAllocated(ip=subnet["gateway_ip"], subnet_id=subnet["id"])
    return str(subnet["gateway_ip"])


def unusable_reason(subnet: dict[str, Any], address: Any, gateway: bool = True) -> str | None:
    """Why ``address`` can never be a port's on ``subnet`` (not an address of
    the subnet, its network address, its IPv4 broadcast; with ``gateway``, its
    gateway), or None. Neutron's ``check_subnet_ip``."""
    try:
        ip = ipaddress.ip_address(address) if isinstance(address, str) else None
    except ValueError:
        ip = None
    net = ipaddress.ip_network(subnet["cidr"])
    if ip is None or ip.version != net.version or ip not in net \
            or ip == net.network_address or (net.version == 4 and ip == net.broadcast_address):
        return f"IP address {shown(address)} is not a valid IP for the specified subnet."
    if gateway and subnet["gateway_ip"] == str(ip):
        return f"IP address {ip} is the gateway of subnet {subnet['id']}."
    return None


def _allocate_next(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
                   taken: dict[str, int] | None, claims: Claims | None = None) -> str:
    pools = subnet["allocation_pools"] or []
    count = taken.get(subnet["id"]) if taken is not None else None
    if count is None:
        count = with_earlier_units(conn, subnet["id"],
                                   _TAKEN.execute(conn, w_subnet=subnet["id"]).fetchone()[0])
    contended = False
    attempt = skips = floor = 0
    while attempt < GUESSES:
        # From the third guess on, a racing herd is spread over a window
        # above the count: every racer lost the count-th address to one
        # winner, then the next one to another; trying the same one again
        # would let one more of them through per round.
        spread = _SPREAD.randrange(SPREAD_WINDOW) if attempt >= 2 else 0
        index = max(count + spread, floor)
        if claims is not None:
            index = claims.claim(subnet["id"], index)
        guess = nth_in_pools(pools, index)
        if guess is None:
            break
        outcome = _try_insert(conn, subnet, port_id, guess)
        if outcome is Guess.IN:
            return guess
        if outcome is Guess.BUSY and skips < BUSY_SKIPS:
            # Another process's allocation in flight: the next address, as
            # past this process's own (``claims``).
            skips += 1
            floor = index + 1
            continue
        attempt += 1
        # Taken: by a hole's neighbour, or (PostgreSQL, computes allocating
        # side by side) by a transaction that committed after our count was
        # read. Its insert is in the counter now: count again, not the walk
        # that reads every address of the subnet.
        fresh = with_earlier_units(conn, subnet["id"],
                                   _TAKEN.execute(conn, w_subnet=subnet["id"]).fetchone()[0])
        if fresh <= count and not contended:
            break  # a hole: the counter cannot say where the free ones are
        contended = True
        count = max(count, fresh)
    in_flight = claims.in_flight.held(subnet["id"]) if claims is not None else set()
    return _walk(conn, subnet, port_id, pools, contended, in_flight)


def _walk(conn: sa.Connection, subnet: dict[str, Any], port_id: str,
          pools: list[dict[str, str]], contended: bool, in_flight: Iterable[int] = ()) -> str:
    """The first free address of the pools, read from the subnet's
    allocations, past those of ``in_flight`` (indices); where allocations race
    (``contended``), one of the first few free ones at random, so that the
    racers do not all try the same."""
    used = {_address_value(address)
            for address, in _USED.execute(conn, w_subnet=subnet["id"]).fetchall()}
    used.update(_address_value(address)
                for address in (nth_in_pools(pools, i) for i in in_flight) if address)
    free = _free_in_pools(pools, used)
    first = [candidate for _, candidate in zip(range(SPREAD_WINDOW if contended else 0), free)]
    _SPREAD.shuffle(first)
    busy = []
    for candidate in itertools.chain(first, free):
        outcome = _try_insert(conn, subnet, port_id, candidate)
        if outcome is Guess.IN:
            return candidate
        if outcome is Guess.BUSY:  # a concurrent allocation's, which may yet roll back
            busy.append(candidate)
    # Nothing else free: wait for those in flight to learn which are taken.
    for candidate in busy:
        if _insert(conn, subnet, port_id, candidate):
            return candidate
    raise exc.IpAddressGenerationFailure(net_id=subnet["network_id"])


def is_auto_address(subnet: dict[str, Any]) -> bool:
    """Whether ``subnet``'s addresses are EUI-64 ones (Neutron's
    ``is_auto_address_subnet``): its address mode, or without one its RA
    mode, is SLAAC or DHCPv6-stateless."""
    if subnet["ip_version"] != 6:
        return False
    mode = subnet.get("ipv6_address_mode") or subnet.get("ipv6_ra_mode")
    return mode in AUTO_ADDRESS_MODES


def eui64(cidr: str, mac: str) -> str:
    """The address a host with ``mac`` gives itself on the /64 ``cidr`` by
    SLAAC: the prefix, then the MAC with its universal/local bit flipped and
    ff:fe in the middle (RFC 4291, appendix A)."""
    octets = [int(b, 16) for b in mac.split(":")]
    octets[0] ^= 0x02
    interface_id = int.from_bytes(bytes(octets[:3] + [0xFF, 0xFE] + octets[3:]), "big")
    net = ipaddress.ip_network(cidr)
    return str(ipaddress.IPv6Address(int(net.network_address) | interface_id))


def allocate_eui64(conn: sa.Connection, subnet: dict[str, Any], port_id: str, mac: str) -> str:
    """Record the port's EUI-64 address on the auto-address ``subnet``; 409
    if another port holds it (only the same MAC gives the same address)."""
    address = eui64(subnet["cidr"], mac)
    if not _insert(conn, subnet, port_id, address):
        raise exc.IpAddressAlreadyAllocated(ip=address, subnet_id=subnet["id"])
    return address


@functools.lru_cache(maxsize=16)
def _mac_prefix(base_mac: str) -> str:
    return ":".join(base_mac.split(":")[:3])


# A generator of the network's own: whoever seeds the process's ``random``
# (a test framework, a library) must not make MACs repeat.
_MAC_RANDOM = random.Random()


def generate_mac(base_mac: str) -> str:
    """A random MAC under the configured prefix (the first three octets kept)."""
    low = _MAC_RANDOM.getrandbits(24)  # the three random octets in one draw
    return f"{_mac_prefix(base_mac)}:{low >> 16:02x}:{(low >> 8) & 0xff:02x}:{low & 0xff:02x}"


def mac_in_use(conn: sa.Connection, network_id: str, mac: str) -> bool:
    return _MAC_USED.execute(conn, w_network=network_id, w_mac=mac).fetchone() is not None
