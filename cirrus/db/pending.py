"""What a unit of a shared transaction (``cirrus.db.pgcommit``) leaves for the
units after it: counts PostgreSQL makes only at COMMIT, and rows that must not
stay locked.

Migration 0032 made the subnets' ``allocated`` counter change at COMMIT, so
the IPAM's first guess (the counter) does not see the addresses earlier units
of the same transaction took: they are tallied here, per transaction
(:func:`add`, :func:`added`), and the guess adds them.

The quota rechecks lock a row every writer of the project waits for (its
usage or port counter), as do a host's claims (its usage row): each is taken
as its unit's last statement, so that it is held for the COMMIT alone. A unit
that takes one says so (:func:`hot_row_taken`), and the group runner commits
right after it instead of running more units while the row is locked: those
could wait on a transaction that waits for this row (a deadlock). So no
recheck ever follows another in one transaction, and each reads the counter
with every earlier recheck's rows committed.

Outside a shared transaction there is no tally: nothing to add, nothing to do.
The runner opens one per transaction (:func:`opened`), keeps a copy before
each unit and puts it back if the unit is rolled back to its savepoint
(:func:`snapshot`, :func:`restore`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterator

import sqlalchemy as sa

_KEY = "cirrus.pending"  # in Connection.info, while a shared transaction runs


@dataclass
class Tally:
    """A shared transaction's counts by key and resource, and whether a unit
    took a hot row."""

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    hot: bool = False

    def copy(self) -> "Tally":
        return Tally({key: dict(amounts) for key, amounts in self.counts.items()}, self.hot)


def _tally(conn: sa.Connection) -> Tally | None:
    return conn.info.get(_KEY)


def added(conn: sa.Connection, key: str) -> dict[str, int]:
    """What earlier units of this transaction added under ``key`` (empty
    outside a shared transaction)."""
    tally = _tally(conn)
    return tally.counts.get(key, {}) if tally is not None else {}


def add(conn: sa.Connection, key: str, amounts: dict[str, int]) -> None:
    """Count ``amounts`` under ``key`` for the units after this one in the
    same transaction (nothing outside a shared transaction)."""
    tally = _tally(conn)
    if tally is None:
        return
    mine = tally.counts.setdefault(key, {})
    for resource, amount in amounts.items():
        mine[resource] = mine.get(resource, 0) + amount


def hot_row_taken(conn: sa.Connection) -> None:
    """This unit locked a row that many writers wait for: a shared transaction
    commits right after it."""
    tally = _tally(conn)
    if tally is not None:
        tally.hot = True


def holds_hot_row(conn: sa.Connection) -> bool:
    """Whether a unit of this transaction took a hot row (:func:`hot_row_taken`)."""
    tally = _tally(conn)
    return tally is not None and tally.hot


@contextlib.contextmanager
def opened(conn: sa.Connection) -> Iterator[None]:
    """A tally for the transaction running inside the block. ``Connection.info``
    outlives a checkout, so the tally is removed at the block's end."""
    conn.info[_KEY] = Tally()
    try:
        yield
    finally:
        conn.info.pop(_KEY, None)


def snapshot(conn: sa.Connection) -> Tally:
    """A copy of the tally, to :func:`restore` if the next unit is undone."""
    tally = _tally(conn)
    return tally.copy() if tally is not None else Tally()


def restore(conn: sa.Connection, tally: Tally) -> None:
    """Put back a :func:`snapshot` (its unit was rolled back to its savepoint)."""
    if _KEY in conn.info:
        conn.info[_KEY] = tally
