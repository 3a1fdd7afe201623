"""What earlier units of a shared transaction added to a counter that
PostgreSQL counts only at COMMIT.

Migration 0032 made the usage counters' triggers fire at COMMIT, so a quota
recheck reads the committed count with the row locked and adds what its own
unit inserted (``compute.quotas``, ``network.quotas``). When several units
share one transaction (``cirrus.db.pgcommit``), the units before this one have
inserted rows the counter does not show yet either: they are tallied here,
per transaction, and the rechecks add them too. Outside a shared transaction
there is no tally and nothing to add.

The group runner opens a tally per transaction (:func:`opened`), keeps a copy
before each unit and puts it back if the unit is rolled back to its savepoint
(:func:`snapshot`, :func:`restore`).
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import sqlalchemy as sa

_KEY = "cirrus.pending"  # in Connection.info: {counter key: {resource: amount}}

Tally = dict[str, dict[str, int]]


def added(conn: sa.Connection, key: str) -> dict[str, int]:
    """What earlier units of this transaction added under ``key`` (empty
    outside a shared transaction)."""
    tally: Tally | None = conn.info.get(_KEY)
    return tally.get(key, {}) if tally is not None else {}


def add(conn: sa.Connection, key: str, amounts: dict[str, int]) -> None:
    """Count ``amounts`` under ``key`` for the units after this one in the
    same transaction (nothing outside a shared transaction)."""
    tally: Tally | None = conn.info.get(_KEY)
    if tally is None:
        return
    mine = tally.setdefault(key, {})
    for resource, amount in amounts.items():
        mine[resource] = mine.get(resource, 0) + amount


@contextlib.contextmanager
def opened(conn: sa.Connection) -> Iterator[None]:
    """A tally for the transaction running inside the block. ``Connection.info``
    outlives a checkout, so the tally is removed at the block's end."""
    conn.info[_KEY] = {}
    try:
        yield
    finally:
        conn.info.pop(_KEY, None)


def snapshot(conn: sa.Connection) -> Tally:
    """A copy of the tally, to :func:`restore` if the next unit is undone."""
    return {key: dict(amounts) for key, amounts in conn.info.get(_KEY, {}).items()}


def restore(conn: sa.Connection, tally: Tally) -> None:
    """Put back a :func:`snapshot` (its unit was rolled back to its savepoint)."""
    if _KEY in conn.info:
        conn.info[_KEY] = tally
