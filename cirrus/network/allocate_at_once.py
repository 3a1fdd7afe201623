"""A boot's one port in one statement (PostgreSQL).

The common allocation — one new port on the project's ``auto`` network, one
subnet, the address the subnet's counter guesses — took a transaction of five
round trips: BEGIN, the network's read, the port with its address, the info
cache stored by the port quota's recheck (holding the project's counter row
to COMMIT), COMMIT. Everything those writes need is known once the network
is read: the port's row is built here (id, MAC, binding), its address is the
guess, and the info cache follows from both (``info_cache.fresh_network_info``).
So after the read, one statement in autocommit does it all or nothing:

* takes the project's port counter row (locked to the statement's end) and
  the guess's advisory lock (``ipam.guess_lock``), and checks that the port
  fits the quota, that the instance has no port yet and has its cache row;
* inserts the address only then, skipped if taken (ON CONFLICT DO NOTHING);
* inserts the port only if the address went in — a MAC taken on the network
  fails the statement whole (the row references the port, which the address
  needs: nothing stays);
* stores the info cache only if the port went in.

Its row says which of these held (:class:`Attempt`): a guess busy or taken
is tried again with the next one (a unit of its own: each is one writing
statement, ``onestatement``), an over-quota port is ``PortLimitExceeded``;
anything else (a hole the counter cannot see past, other ports on the
instance, a MAC clash) leaves it to the transaction that handles every case
(``allocate.PortAllocator.allocate``), which costs the lost round trip once.
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

# How many guesses the one statement tries before the transaction takes over:
# a busy guess (another allocation in flight on it) or one taken since the
# counter was read.
GUESSES = 3

_ROOM = quotas.LOCKED_PORT_ROOM
_LOCK = ipam.guess_lock(sa.bindparam("a_subnet", type_=sa.String),
                        sa.bindparam("a_address", type_=sa.String), "address_lock")
_UUID = sa.bindparam("w_uuid", type_=sa.String)
# One row if every check holds, else none: nothing below writes without it.
_GO = sa.select(sa.literal(1).label("go")).select_from(_ROOM).join(_LOCK, _LOCK.c.held).where(
    quotas.ports_fit(_ROOM, 1, sa.bindparam("w_default_ports", type_=sa.Integer)),
    ~sa.exists().where(ports.c.device_id == _UUID,
                       port_db.owned_by(ports.c.project_id, sa.bindparam("w_project"))),
    sa.exists().where(instance_info_caches.c.instance_uuid == _UUID)).cte("go")
_ADDRESS = postgresql.insert(ip_allocations).from_select(
    ["network_id", "ip_address", "subnet_id", "port_id"],
    sa.select(sa.bindparam("v_network_id", type_=sa.String),
              sa.bindparam("a_address", type_=sa.String),
              sa.bindparam("a_subnet", type_=sa.String),
              sa.bindparam("v_id", type_=sa.String)).select_from(_GO)
).on_conflict_do_nothing().returning(ip_allocations.c.ip_address).cte("new_address")
_PORT = port_db.insert_port_from(_ADDRESS).cte("new_port")
_STORED = instance_info_caches.update().where(
    instance_info_caches.c.instance_uuid == _UUID, sa.exists(sa.select(_PORT.c.seq))).values(
    network_info=sa.bindparam("v_info"), updated_at=sa.bindparam("v_now")).returning(
    instance_info_caches.c.instance_uuid).cte("stored")
_INSERT_PORT_AND_CACHE = Prepared(sa.select(
    _ROOM.c.own_limit, _ROOM.c.ports,
    sa.select(_LOCK.c.held).scalar_subquery(),
    sa.select(sa.func.count()).select_from(_GO).scalar_subquery(),
    sa.select(_ADDRESS.c.ip_address).scalar_subquery(),
    sa.select(_PORT.c.seq).scalar_subquery(),
    sa.select(sa.func.count()).select_from(_STORED).scalar_subquery(),
    sa.select(subnets.c.allocated).where(
        subnets.c.id == sa.bindparam("a_subnet", type_=sa.String)).scalar_subquery(),
).select_from(_ROOM))


class Outcome(enum.Enum):
    """What the statement found: all written, or why nothing was."""

    STORED = "stored"  # the port, its address and the info cache
    OVER_QUOTA = "over_quota"  # the port would exceed the project's limit
    BUSY = "busy"  # another allocation is trying the address
    TAKEN = "taken"  # the address is another port's
    OTHER = "other"  # the instance has ports already, or no cache row


@dataclass(frozen=True)
class Attempt:
    """One statement's outcome, the port's ``seq`` if it went in, and the
    subnet's ``allocated`` counter as the statement saw it (committed
    addresses: where a taken guess's retry counts from)."""

    outcome: Outcome
    seq: int | None
    allocated: int


def insert_port_and_cache(conn: sa.Connection, settings: Settings, row: dict[str, Any],
                          subnet: dict[str, Any], address: str, instance: dict[str, Any],
                          info: NetworkInfo) -> Attempt:
    """Run the one statement for the port ``row`` (``ports.new_port_row``)
    with ``address`` on ``subnet``, the instance's cache set to ``info``.
    A MAC taken on the network raises ``sa.exc.IntegrityError``, nothing
    written."""
    params = {f"v_{k}": v for k, v in row.items() if k != "seq"}
    own, in_use, held, go, address_in, seq, stored, allocated = _INSERT_PORT_AND_CACHE.execute(
        conn, **params, **info_cache.fresh_cache_params(instance, info),
        a_subnet=subnet["id"], a_address=address,
        w_default_ports=int(settings.quota_ports)).fetchone()
    if stored:
        outcome = Outcome.STORED
    elif quotas.over_limit(settings, own, int(in_use), 1):
        outcome = Outcome.OVER_QUOTA
    elif not held:
        outcome = Outcome.BUSY
    elif go and address_in is None:
        outcome = Outcome.TAKEN
    else:
        outcome = Outcome.OTHER
    return Attempt(outcome, None if seq is None else int(seq), int(allocated or 0))

