"""Atomic resource claims on compute nodes: the statements.

A claim is one guarded UPDATE (``used + requested <= total * ratio``) plus an
``allocations`` row for the consumer, in the caller's transaction; release
deletes the row and subtracts it, once. Cost is O(1) in the number of
instances on the node.

The statements are built once, with bind parameters: building a Core UPDATE
with its guard each time cost five times what running it does. They run as
:class:`~cirrus.db.prepared.Prepared` statements (compiled once per dialect,
run on the DBAPI cursor): Core's per-execution work was most of a claim's
time on the SQLite writer (docs/performance.md, the scheduler). Each one sets
``updated_at``, which the scheduler's host cache follows to see what changed.
"""
from __future__ import annotations

from typing import Any, NamedTuple, TypedDict

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from cirrus.compute.models import allocations, compute_nodes
from cirrus.db import pending
from cirrus.db.base import utcnow
from cirrus.db.onestatement import one_statement
from cirrus.db.prepared import Prepared
from cirrus.db.rows import PreparedRead

cn = compute_nodes
# Bind names must not be column names (SQLAlchemy keeps those for VALUES/SET).
_vcpus: sa.BindParameter[int] = sa.bindparam("want_vcpus")
_memory: sa.BindParameter[int] = sa.bindparam("want_ram")
_disk: sa.BindParameter[int] = sa.bindparam("want_disk")

# The node's room for the claim, and what the claim adds to its usage.
_ROOM = (cn.c.vcpus_used + _vcpus <= cn.c.vcpus * cn.c.cpu_allocation_ratio,
         cn.c.memory_mb_used + _memory
         <= (cn.c.memory_mb - cn.c.reserved_memory_mb) * cn.c.ram_allocation_ratio,
         cn.c.local_gb_used + _disk <= cn.c.local_gb * cn.c.disk_allocation_ratio)
_RAISE = dict(vcpus_used=cn.c.vcpus_used + _vcpus, memory_mb_used=cn.c.memory_mb_used + _memory,
              local_gb_used=cn.c.local_gb_used + _disk, running_vms=cn.c.running_vms + 1,
              updated_at=sa.bindparam("now"))
_CLAIM = Prepared(cn.update().where(cn.c.id == sa.bindparam("node"), *_ROOM).values(**_RAISE))

_UNCLAIM = Prepared(cn.update().where(cn.c.id == sa.bindparam("node")).values(
    vcpus_used=cn.c.vcpus_used - _vcpus, memory_mb_used=cn.c.memory_mb_used - _memory,
    local_gb_used=cn.c.local_gb_used - _disk, running_vms=cn.c.running_vms - 1,
    updated_at=sa.bindparam("now")))

_ROW = dict(consumer_uuid=sa.bindparam("consumer"), node_id=sa.bindparam("node"), vcpus=_vcpus,
            memory_mb=_memory, disk_gb=_disk, created_at=sa.bindparam("now"))
# A consumer's second row is skipped, not an error: an error would need a
# savepoint around every claim (on PostgreSQL it aborts the transaction), and
# a savepoint cost as much as the rest of the claim together. RETURNING says
# whether the row went in (psycopg reports no rowcount for this INSERT).
_INSERT_NEW = {
    name: Prepared(dialect.insert(allocations).values(**_ROW).on_conflict_do_nothing().returning(
        allocations.c.node_id))
    for name, dialect in (("sqlite", sqlite), ("postgresql", postgresql))}

_HELD = Prepared(sa.select(allocations.c.node_id).where(
    allocations.c.consumer_uuid == sa.bindparam("consumer")))
# What is subtracted is what was deleted, read by the DELETE itself: a row read
# before it could be an older claim of the consumer that a concurrent release
# took and a new claim (elsewhere) replaced, and then the wrong node would be
# given back what it never lost.
_DELETE = Prepared(allocations.delete().where(
    allocations.c.consumer_uuid == sa.bindparam("consumer")).returning(
    allocations.c.node_id, allocations.c.vcpus, allocations.c.memory_mb, allocations.c.disk_gb))


# On PostgreSQL the boot's claim is one statement that writes nothing unless
# it claims (``claim_unless_held``): the consumer's claim looked for; the
# node's row locked only if it has room (``room``, its guard checked again on
# the newest row once locked); the consumer's row inserted only then; the
# node's usage raised only if the row went in (a twin's row came first: no).
# So it needs no transaction: in autocommit the node's row is locked for the
# statement alone, not until a COMMIT a round trip later, which every claim
# on the node waited for. (SQLite has no INSERT or UPDATE inside WITH: three
# statements, in its one writer's transaction.)
def _claim_unless_held_statement() -> sa.Select[Any]:
    held_cte = sa.select(allocations.c.node_id).where(
        allocations.c.consumer_uuid == sa.bindparam("consumer", type_=sa.String)).cte("held")
    room = sa.select(cn.c.id).where(
        cn.c.id == sa.bindparam("node", type_=sa.Integer), *_ROOM,
        ~sa.exists(held_cte.select())).with_for_update(key_share=True).cte("room")
    row = sa.select(*(sa.bindparam(name, type_=allocations.c[column].type)
                      for column, name in _ROW_BINDS)).select_from(room)
    inserted = postgresql.insert(allocations).from_select(
        [column for column, _ in _ROW_BINDS], row).on_conflict_do_nothing().returning(
        allocations.c.node_id).cte("inserted")
    raised = cn.update().where(cn.c.id == sa.bindparam("node", type_=sa.Integer),
                               sa.exists(inserted.select())).values(**_RAISE).returning(
        cn.c.id).cte("raised")
    return sa.select(
        sa.select(held_cte.c.node_id).scalar_subquery().label("held"),
        sa.select(sa.func.count()).select_from(room).scalar_subquery().label("room"),
        sa.select(sa.func.count()).select_from(inserted).scalar_subquery().label("inserted"),
        sa.select(sa.func.count()).select_from(raised).scalar_subquery().label("raised"))


_ROW_BINDS = (("consumer_uuid", "consumer"), ("node_id", "node"), ("vcpus", "want_vcpus"),
              ("memory_mb", "want_ram"), ("disk_gb", "want_disk"), ("created_at", "now"))
_CLAIM_UNLESS_HELD = Prepared(_claim_unless_held_statement())

_OF = PreparedRead(sa.select(allocations).where(
    allocations.c.consumer_uuid == sa.bindparam("w_uuid")))
_MOVE = Prepared(allocations.update().where(
    allocations.c.consumer_uuid == sa.bindparam("src")).values(consumer_uuid=sa.bindparam("dst")))


class Allocation(TypedDict):
    """One consumer's claim on one node."""

    consumer_uuid: str
    node_id: int
    vcpus: int
    memory_mb: int
    disk_gb: int


class AlreadyClaimed(Exception):
    """The consumer holds a claim already (a twin delivery claimed first)."""


def claim(conn: sa.Connection, node_id: int, consumer_uuid: str, vcpus: int, memory_mb: int,
          disk_gb: int) -> bool:
    """Claim on ``node_id`` for ``consumer_uuid``; False if it no longer fits.

    Raises AlreadyClaimed, with nothing changed, if ``consumer_uuid`` holds a
    claim already.
    """
    now = utcnow()
    # The consumer's row first, the node's usage last: from its UPDATE to
    # COMMIT the node's row is locked, and every claim and release on the
    # node waits for it (docs/performance.md, "Distributed (issue 22)").
    # fetchall: the statement runs to its end (SQLite steps RETURNING lazily).
    if not _INSERT_NEW[conn.dialect.name].execute(
            conn, consumer=consumer_uuid, node=node_id, want_vcpus=vcpus, want_ram=memory_mb,
            want_disk=disk_gb, now=now).fetchall():
        raise AlreadyClaimed(consumer_uuid)
    claimed = _CLAIM.execute(conn, node=node_id, want_vcpus=vcpus, want_ram=memory_mb,
                             want_disk=disk_gb, now=now).rowcount
    pending.hot_row_taken(conn)
    if claimed != 1:
        # Take back the row just made; same transaction, so no one saw it.
        _DELETE.execute(conn, consumer=consumer_uuid).fetchall()
        return False
    return True


class Attempt(NamedTuple):
    """What :func:`claim_unless_held` did: ``held``, the node the consumer
    held a claim on already (nothing changed), or whether it ``claimed``."""

    held: int | None
    claimed: bool


@one_statement  # on PostgreSQL; SQLite's three statements run in its writer's transaction
def claim_unless_held(conn: sa.Connection, node_id: int, consumer_uuid: str, vcpus: int,
                      memory_mb: int, disk_gb: int) -> Attempt:
    """Claim on ``node_id`` (as :func:`claim`) unless ``consumer_uuid`` holds
    a claim already, which is then left as it is and its node returned.

    Raises AlreadyClaimed, with nothing changed, if a claim of the consumer
    appears between the look and the insert (a twin delivery claiming at the
    same moment).
    """
    if conn.dialect.name != "postgresql":
        node = held(conn, consumer_uuid)
        if node is not None:
            return Attempt(node, False)
        return Attempt(None, claim(conn, node_id, consumer_uuid, vcpus, memory_mb, disk_gb))
    found, room, inserted, raised = _CLAIM_UNLESS_HELD.execute(
        conn, consumer=consumer_uuid, node=node_id, want_vcpus=vcpus, want_ram=memory_mb,
        want_disk=disk_gb, now=utcnow()).fetchone()
    if found is not None:
        return Attempt(found, False)
    if not room:
        return Attempt(None, False)  # nothing was written
    if not inserted:
        raise AlreadyClaimed(consumer_uuid)
    if raised != 1:  # the room's lock was held from its check to the update
        raise AssertionError(f"claim of {consumer_uuid} inserted without raising node {node_id}")
    pending.hot_row_taken(conn)
    return Attempt(None, True)


def held(conn: sa.Connection, consumer_uuid: str) -> int | None:
    """The node ``consumer_uuid`` holds a claim on, if any."""
    row = _HELD.execute(conn, consumer=consumer_uuid).fetchone()
    return None if row is None else row[0]


def of(conn: sa.Connection, consumer_uuid: str) -> Allocation | None:
    """What ``consumer_uuid`` holds, if anything."""
    row = _OF.first(conn, w_uuid=consumer_uuid)
    return None if row is None else Allocation(
        consumer_uuid=row["consumer_uuid"], node_id=row["node_id"], vcpus=row["vcpus"],
        memory_mb=row["memory_mb"], disk_gb=row["disk_gb"])


def move(conn: sa.Connection, from_consumer: str, to_consumer: str) -> bool:
    """Give ``from_consumer``'s claim to ``to_consumer`` (Nova's
    ``move_allocations``): a resize keeps the source host's claim under the
    migration's uuid while the instance claims the destination. False if
    ``from_consumer`` held nothing; AlreadyClaimed if ``to_consumer`` holds a
    claim already (nothing changed)."""
    if held(conn, to_consumer) is not None:
        raise AlreadyClaimed(to_consumer)
    return bool(_MOVE.execute(conn, src=from_consumer, dst=to_consumer).rowcount == 1)


# On PostgreSQL a release is one statement: the row deleted and what it held
# subtracted from its node, read by the DELETE itself (see ``_DELETE``).
def _release_statement() -> sa.Update:
    gone = _DELETE.stmt.cte("gone")
    return cn.update().where(cn.c.id == gone.c.node_id).values(
        vcpus_used=cn.c.vcpus_used - gone.c.vcpus, memory_mb_used=cn.c.memory_mb_used - gone.c.memory_mb,
        local_gb_used=cn.c.local_gb_used - gone.c.disk_gb, running_vms=cn.c.running_vms - 1,
        updated_at=sa.bindparam("now")).add_cte(gone)


_RELEASE = Prepared(_release_statement())


@one_statement  # on PostgreSQL; SQLite has no DELETE inside WITH
def release(conn: sa.Connection, consumer_uuid: str) -> None:
    """Give back what ``consumer_uuid`` holds. Idempotent."""
    if conn.dialect.name == "postgresql":
        if _RELEASE.execute(conn, consumer=consumer_uuid, now=utcnow()).rowcount:
            pending.hot_row_taken(conn)
        return
    deleted = _DELETE.execute(conn, consumer=consumer_uuid).fetchall()
    for node_id, vcpus, memory_mb, disk_gb in deleted:
        _UNCLAIM.execute(conn, node=node_id, want_vcpus=vcpus, want_ram=memory_mb,
                         want_disk=disk_gb, now=utcnow())
        pending.hot_row_taken(conn)
