"""Group commit on PostgreSQL: a writer thread's queued units in one transaction.

Each unit of work alone costs its round trips plus ``BEGIN`` and ``COMMIT``,
and a unit that takes a lock others wait for (the quota's advisory lock of a
project, a counter row kept by a trigger) holds it until its own commit, so
units of one project queue one commit after the other. A writer thread here
takes every unit already queued (up to ``MAX_BATCH``) and runs them in one
transaction, each but the first inside a savepoint, committed once; results
are handed out only after that COMMIT (``cirrus.db.workers``).

The savepoint statements go to the server folded, ``RELEASE SAVEPOINT unit;
SAVEPOINT unit`` in one simple-protocol round trip, and the first unit needs
none: if it raises, the transaction is rolled back and the others start afresh
in the next one. So a batch of *k* units costs *k* + 1 round trips of its own
against 2 *k*. A unit that raises is rolled back to its savepoint alone and
gets its exception, as on SQLite (``cirrus.db.groupcommit``).

Two failures are not the unit's own and are worked round:

* a deadlock the batching itself may have caused (units holding each other's
  locks longer than they would alone): the unit's savepoint is rolled back,
  and it runs again, alone, after the batch;
* a savepoint statement refused (a unit left the transaction aborted by
  swallowing a database error without a savepoint of its own): nothing was
  committed, so every unit of the batch runs again, each alone.

A failed COMMIT fails the whole batch: its outcome is unknown (the connection
may have dropped after the server committed), so nothing is run again.
"""
from __future__ import annotations

from typing import Any, Callable

from sqlalchemy.engine import Connection

from cirrus.db.handoff import Unit

MAX_BATCH = 8  # units per transaction: a failed COMMIT fails no more than these
DEADLOCK = "40P01"

Result = tuple[bool, Any]  # (ok, the unit's result or its exception)


class _SavepointRefused(Exception):
    """A savepoint statement failed: the batch's transaction is aborted."""


def _call(conn: Connection, unit: Unit[Any]) -> Any:
    return unit.fn(conn, *unit.args, **unit.kwargs)


def _is_deadlock(error: BaseException) -> bool:
    return getattr(getattr(error, "orig", None), "sqlstate", None) == DEADLOCK


def _savepoint(driver: Any, sql: str) -> None:
    try:
        driver.execute(sql)
    except Exception as error:  # noqa: BLE001 - whatever the driver says, the batch is lost
        raise _SavepointRefused(str(error)) from error


def _alone(connect: Callable[[], Connection], unit: Unit[Any]) -> Result:
    """``unit`` in a transaction of its own."""
    try:
        with connect() as conn, conn.begin():
            return True, _call(conn, unit)
    except Exception as error:  # noqa: BLE001 - handed to its caller
        return False, error


def _batch(conn: Connection, units: list[Unit[Any]]) -> tuple[list[Result], list[Unit[Any]]]:
    """As many of ``units`` as one transaction on ``conn`` takes: their
    outcomes, and those left for the next transaction (after a first unit that
    raised). Raises _SavepointRefused, or the COMMIT's error."""
    driver = conn.connection.driver_connection
    trans = conn.begin()
    outcomes: list[Result] = []
    try:
        try:
            outcomes.append((True, _call(conn, units[0])))
        except Exception as error:  # noqa: BLE001 - rolled back whole: nothing else ran yet
            trans.rollback()
            return [(False, error)], units[1:]
        for unit in units[1:]:
            _savepoint(driver, "RELEASE SAVEPOINT unit; SAVEPOINT unit"
                       if len(outcomes) > 1 else "SAVEPOINT unit")
            try:
                outcomes.append((True, _call(conn, unit)))
            except Exception as error:  # noqa: BLE001 - handed to its caller
                _savepoint(driver, "ROLLBACK TO SAVEPOINT unit")
                outcomes.append((False, error))
        trans.commit()
    except BaseException:
        if trans.is_active:
            trans.rollback()
        raise
    return outcomes, []


def run_batch(connect: Callable[[], Connection], units: list[Unit[Any]]) -> list[Result]:
    """Run ``units`` (in order) in as few transactions as their outcomes allow;
    an outcome per unit, in order. ``connect`` gives a pooled connection."""
    if len(units) == 1:
        return [_alone(connect, units[0])]
    outcomes: list[Result] = []
    rest = units
    while rest:
        todo = rest
        try:
            with connect() as conn:
                done, rest = _batch(conn, todo)
        except _SavepointRefused:
            done, rest = [_alone(connect, unit) for unit in todo], []
        except Exception as error:  # noqa: BLE001 - the COMMIT failed: nothing committed
            done, rest = [(False, error)] * len(todo), []
        outcomes.extend(done)
    return [_alone(connect, unit) if not ok and _is_deadlock(value) else (ok, value)
            for unit, (ok, value) in zip(units, outcomes)]

