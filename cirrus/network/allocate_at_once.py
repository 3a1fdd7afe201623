"""A boot's one port in one statement (PostgreSQL).

The common allocation — one new port on one network (the project's ``auto``
network, or one asked for by id without a fixed IP), one subnet, the address
the subnet's counter guesses — took a transaction of five round trips or
more: BEGIN, the network's read(s), the port with its address, the info
cache stored by the port quota's recheck (holding the project's counter row
to COMMIT), COMMIT. Everything those writes need is known once the network
is read: the port's row is built client-side (``ports.new_port_row``: id,
MAC, binding), its address is the guess, and the info cache follows from
both (``info_cache.fresh_network_info``).
So after the read, one statement in autocommit does it all or nothing:

* takes the guess's advisory lock (``ipam.guess_lock``) and checks that the
  instance has no port yet and has its cache row;
* inserts the address only then, skipped if taken (ON CONFLICT DO NOTHING);
* inserts the port only if the address went in — a MAC taken on the network
  fails the statement whole (the address references the port: nothing stays);
* only then takes the project's port counter row (as the transaction takes
  it last: no wait on a racer's row while holding it) and stores the info
  cache if the port fits the quota.

Its row says what happened (:class:`Attempt`). A guess busy or taken is
tried again with the next one (a unit of its own: each is one writing
statement, ``onestatement``). A port over the quota (a race past the API's
check) went in: the caller undoes it as any failed allocation and raises
``PortLimitExceeded``. Anything else — a hole the counter cannot see past,
other ports on the instance, a statement refused whole — wrote nothing and
leaves it to the transaction that handles every case
(``allocate.PortAllocator.allocate``), for the cost of the lost round trip.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cirrus.compute.models import instance_info_caches
from cirrus.config import Settings
from cirrus.db.prepared import Prepared
from cirrus.network import info_cache, ipam, quotas
from cirrus.network import ports as port_db
from cirrus.network.model import NetworkInfo
from cirrus.network.models import ip_allocations, ports, subnets

# How many guesses (each its own statement) are tried before the transaction
# takes over, past a busy guess (another allocation in flight on it) or one
# taken since the counter was read. The processes' computes, each with its own
# in-flight claims, meet each other's guesses: 1.57 tries a boot, 0.02 boots
# left to the transaction at 8, 0.26 at 3.
GUESSES = 8

_LOCK = ipam.guess_lock(sa.bindparam("a_subnet", type_=sa.String),
                        sa.bindparam("a_address", type_=sa.String), "address_lock")
_UUID = sa.bindparam("w_uuid", type_=sa.String)
_NETWORK = sa.bindparam("v_network_id", type_=sa.String)
_ADDRESS_VALUE = sa.bindparam("a_address", type_=sa.String)
# One row if the guess is this statement's to try and the instance has no
# port yet (and its cache row): nothing below writes without it.
_GO = sa.select(sa.literal(1).label("go")).select_from(_LOCK).where(
    _LOCK.c.held,
    ~sa.exists().where(ports.c.device_id == _UUID,
                       port_db.owned_by(ports.c.project_id, sa.bindparam("w_project"))),
    sa.exists().where(instance_info_caches.c.instance_uuid == _UUID)).cte("go")
_ADDRESS = postgresql.insert(ip_allocations).from_select(
    ["network_id", "ip_address", "subnet_id", "port_id"],
    sa.select(_NETWORK, _ADDRESS_VALUE, sa.bindparam("a_subnet", type_=sa.String),
              sa.bindparam("v_id", type_=sa.String)).select_from(_GO)
).on_conflict_do_nothing().returning(ip_allocations.c.ip_address).cte("new_address")
_PORT = port_db.insert_port_from(_ADDRESS).cte("new_port")
# The project's port counter, locked only once the port is in (the inserts'
# waits done), and the cache stored only if the port fits the quota.
_ROOM = quotas.locked_port_room(_PORT)
_STORED = instance_info_caches.update().where(
    instance_info_caches.c.instance_uuid == _UUID,
    sa.exists().select_from(_ROOM).where(quotas.ports_fit(
        _ROOM, 1, sa.bindparam("w_default_ports", type_=sa.Integer)))).values(
    network_info=sa.bindparam("v_info"), updated_at=sa.bindparam("v_now")).returning(
    instance_info_caches.c.instance_uuid).cte("stored")
_INSERT_PORT_AND_CACHE = Prepared(sa.select(
    sa.select(_LOCK.c.held).scalar_subquery(),
    sa.select(sa.func.count()).select_from(_GO).scalar_subquery(),
    # The guess committed before the statement began (else a concurrent
    # allocation's, committed while it ran: the counter cannot show it yet).
    sa.exists().where(ip_allocations.c.network_id == _NETWORK,
                      ip_allocations.c.ip_address == _ADDRESS_VALUE),
    sa.select(_PORT.c.seq).scalar_subquery(),
    sa.select(_ROOM.c.own_limit).scalar_subquery(),
    sa.select(_ROOM.c.ports).scalar_subquery(),
    sa.select(sa.func.count()).select_from(_STORED).scalar_subquery(),
    sa.select(subnets.c.allocated).where(
        subnets.c.id == sa.bindparam("a_subnet", type_=sa.String)).scalar_subquery()))


class Outcome(enum.Enum):
    """What the statement found: all written, or why (not) all."""

    STORED = "stored"  # the port, its address and the info cache
    OVER_QUOTA = "over_quota"  # the port went in, over the project's limit: undo it
    BUSY = "busy"  # another allocation is trying the address: nothing written
    TAKEN = "taken"  # the address is another port's: nothing written
    OTHER = "other"  # the instance has ports already, or no cache row: nothing written


@dataclass(frozen=True)
class Attempt:
    """One statement's outcome, the port's ``seq`` if it went in, the
    subnet's ``allocated`` counter as the statement saw it (committed
    addresses: where a taken guess's retry counts from), and whether a taken
    guess was committed only while the statement ran (a racer's, which the
    counter it read cannot count: not a hole)."""

    outcome: Outcome
    seq: int | None
    allocated: int
    # TAKEN by an allocation that committed while the statement ran
    just_taken: bool = False


def insert_port_and_cache(conn: sa.Connection, settings: Settings, row: dict[str, Any],
                          subnet: dict[str, Any], address: str, instance: dict[str, Any],
                          info: NetworkInfo) -> Attempt:
    """Run the one statement for the port ``row`` (``ports.new_port_row``)
    with ``address`` on ``subnet``, the instance's cache set to ``info``.
    A MAC taken on the network raises ``sa.exc.IntegrityError``, nothing
    written."""
    params = {f"v_{k}": v for k, v in row.items() if k != "seq"}
    held, go, seen, seq, own, in_use, stored, allocated = _INSERT_PORT_AND_CACHE.execute(
        conn, **params, **info_cache.fresh_cache_params(instance, info),
        a_subnet=subnet["id"], a_address=address,
        w_default_ports=int(settings.quota_ports)).fetchone()
    if seq is not None:
        # In: over the limit, the caller undoes it as any failed allocation;
        # else stored (unless the instance's cache row went meanwhile: its
        # delete is under way, and the port is the build's to clean up).
        outcome = (Outcome.OVER_QUOTA if quotas.over_limit(settings, own, int(in_use), 1)
                   else Outcome.STORED)
    elif not held:
        outcome = Outcome.BUSY
    elif go:
        outcome = Outcome.TAKEN
    else:
        outcome = Outcome.OTHER
    return Attempt(outcome, None if seq is None else int(seq), int(allocated or 0),
                   outcome is Outcome.TAKEN and not seen)


# Integrity violations (a MAC taken, a row referenced gone) and a deadlock
# or serialization failure: the statement was refused whole.
_REFUSED_WHOLE = ("23", "40001", "40P01")


def failed_whole(error: sa.exc.DBAPIError) -> bool:
    """Whether ``error`` (the statement's) means it wrote nothing and the
    transaction may run instead; a broken connection is not one."""
    state = getattr(error.orig, "sqlstate", None) or ""
    return not error.connection_invalidated and state.startswith(_REFUSED_WHOLE)
