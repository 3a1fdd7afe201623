"""Group commit on PostgreSQL (cirrus/db/pgcommit.py): units batched in one
transaction stay atomic each; a unit that deadlocks, and a batch whose
transaction is lost before COMMIT, run again alone."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.db import pending, pgcommit
from cirrus.db.engine import Database
from cirrus.db.handoff import Unit
from tests.unit.test_pg_database import _insert, _names, db, url  # noqa: F401 - fixtures


def _swallow(conn: sa.Connection) -> str:
    """A unit that catches a database error without a savepoint of its own: on
    PostgreSQL its transaction is aborted from there on."""
    try:
        conn.execute(sa.text("SELECT 1 / 0"))
    except sa.exc.DBAPIError:
        pass
    return "swallowed"


class _Deadlock(Exception):
    sqlstate = pgcommit.DEADLOCK


def _deadlocks_once(conn: sa.Connection, name: str, calls: list[int]) -> int:
    """Inserts ``name`` and fails the first time as a deadlock would."""
    calls.append(1)
    txid = _insert(conn, name)
    if len(calls) == 1:
        raise sa.exc.OperationalError("UPDATE …", {}, _Deadlock())
    return txid


def _tally(conn: sa.Connection, then_fail: bool = False) -> int:
    """Adds one under ``k``; what earlier units of the transaction added."""
    before = pending.added(conn, "k").get("n", 0)
    pending.add(conn, "k", {"n": 1})
    if then_fail:
        raise ValueError("undone")
    return before


async def _units(*calls: tuple[Any, ...]) -> list[Unit[Any]]:
    loop = asyncio.get_running_loop()
    return [Unit(call[0], call[1:], {}, loop, loop.create_future()) for call in calls]


def _run(db: Database, units: list[Unit[Any]]) -> list[tuple[bool, Any]]:
    return pgcommit.run_batch(db.engine.connect, units)


# (units, which fail: their outcome's exception type, or None)
BATCHES = [
    pytest.param([("a",), ("b",), ("c",)], [None, None, None], id="all-commit"),
    pytest.param([("a", True), ("b",), ("c",)], [ValueError, None, None], id="first-fails"),
    pytest.param([("a",), ("b", True), ("c",)], [None, ValueError, None], id="middle-fails"),
    pytest.param([("a",), ("b",), ("c", True)], [None, None, ValueError], id="last-fails"),
    pytest.param([("a",), ("a",), ("c",)], [None, sa.exc.IntegrityError, None],
                 id="clash-aborts-only-its-savepoint"),
]


@pytest.mark.parametrize("calls, fails", BATCHES)
async def test_each_unit_of_a_batch_is_atomic(db: Database, calls: list[tuple[Any, ...]],
                                              fails: list[type[Exception] | None]) -> None:
    outcomes = _run(db, await _units(*((_insert, *c) for c in calls)))
    for (ok, value), fail in zip(outcomes, fails):
        assert ok is (fail is None)
        if fail is not None:
            assert isinstance(value, fail)
    committed = {c[0] for c, fail in zip(calls, fails) if fail is None}
    assert await db.read(_names) == committed


async def test_the_units_of_a_batch_share_one_transaction(db: Database) -> None:
    txids = [value for ok, value in _run(db, await _units(*((_insert, f"n{i}")
                                                              for i in range(5)))) if ok]
    assert len(txids) == 5 and len(set(txids)) == 1


async def test_a_first_unit_that_fails_leaves_the_rest_one_transaction(db: Database) -> None:
    outcomes = _run(db, await _units((_insert, "x", True), *((_insert, f"n{i}")
                                                              for i in range(3))))
    assert not outcomes[0][0]
    assert len({value for ok, value in outcomes[1:] if ok}) == 1


async def test_an_aborted_transaction_reruns_every_unit_alone(db: Database) -> None:
    """A unit that leaves the transaction aborted makes the next savepoint fail:
    nothing was committed, so each unit runs again by itself, and only the
    culprit's own transaction is lost (its COMMIT is a rollback)."""
    outcomes = _run(db, await _units((_insert, "a"), (_swallow,), (_insert, "b")))
    assert [ok for ok, _ in outcomes] == [True, True, True]
    assert outcomes[0][1] != outcomes[2][1]  # no longer one transaction
    assert await db.read(_names) == {"a", "b"}


async def test_a_unit_that_deadlocks_runs_again_alone_after_the_batch(db: Database) -> None:
    calls: list[int] = []
    outcomes = _run(db, await _units((_insert, "a"), (_deadlocks_once, "d", calls),
                                     (_insert, "b")))
    assert [ok for ok, _ in outcomes] == [True, True, True]
    assert len(calls) == 2
    assert outcomes[0][1] == outcomes[2][1] != outcomes[1][1]
    assert await db.read(_names) == {"a", "b", "d"}


@pytest.mark.parametrize("sqlstate, deadlock", [("40P01", True), ("40001", False),
                                                ("23505", False), (None, False)])
def test_only_a_deadlock_is_run_again(sqlstate: str | None, deadlock: bool) -> None:
    class DriverError(Exception):
        pass
    error = DriverError()
    error.sqlstate = sqlstate  # type: ignore[attr-defined]
    assert pgcommit.is_deadlock(sa.exc.OperationalError("stmt", {}, error)) is deadlock
    assert pgcommit.is_deadlock(error) is deadlock
    assert pgcommit.is_deadlock(ValueError()) is False


async def test_the_tally_counts_earlier_units_and_forgets_undone_ones(db: Database) -> None:
    """What a unit adds is seen by the units after it in the transaction,
    unless it was rolled back to its savepoint; nothing is left on the
    connection for its next transaction."""
    outcomes = _run(db, await _units((_tally,), (_tally, True), (_tally,), (_tally,)))
    assert [value for ok, value in outcomes if ok] == [0, 1, 2]
    assert [value for ok, value in _run(db, await _units((_tally,), (_tally,)))] == [0, 1]


async def test_a_unit_alone_has_no_tally(db: Database) -> None:
    assert await db.run(_tally) == 0
    assert await db.run(_tally) == 0


def _hot(conn: sa.Connection, name: str, then_fail: bool = False) -> int:
    """Inserts ``name`` as a unit that locked a row many writers wait for."""
    txid = _insert(conn, name)
    pending.hot_row_taken(conn)
    if then_fail:
        raise ValueError("undone")
    return txid


async def test_a_unit_that_takes_a_hot_row_is_the_last_of_its_transaction(
        db: Database) -> None:
    """The units after it go to the next transaction: none of them may wait
    on another writer while this one holds the row."""
    outcomes = _run(db, await _units((_insert, "a"), (_hot, "b"), (_insert, "c"), (_hot, "d"),
                                     (_insert, "e")))
    txids = [value for _, value in outcomes]
    assert txids[0] == txids[1] != txids[2] == txids[3] != txids[4]
    assert await db.read(_names) == {"a", "b", "c", "d", "e"}


async def test_a_hot_unit_rolled_back_leaves_its_transaction_open(db: Database) -> None:
    outcomes = _run(db, await _units((_insert, "a"), (_hot, "b", True), (_insert, "c")))
    assert [ok for ok, _ in outcomes] == [True, False, True]
    assert outcomes[0][1] == outcomes[2][1]
    assert await db.read(_names) == {"a", "c"}
