"""Group commit on PostgreSQL: a writer thread's queued units in one transaction.

Each unit of work alone costs its round trips plus ``BEGIN`` and ``COMMIT``,
and one backend's turn. A writer thread here takes its share of the units
queued (``cirrus.db.workers``, up to ``MAX_BATCH``) and runs them in one
transaction, each but the first inside a savepoint, committed once; results
are handed out only after that COMMIT, as on SQLite (``cirrus.db.groupcommit``).

The savepoint statements go to the server folded, ``RELEASE SAVEPOINT unit;
SAVEPOINT unit`` in one simple-protocol round trip, and the first unit needs
none: if it raises, the transaction is rolled back and the others start afresh
in the next one. So a batch of *k* units costs *k* + 1 round trips of its own
against 2 *k*. A unit that raises is rolled back to its savepoint alone and
gets its exception.

Round two of issue 22 tried this and dropped it: the counter rows were locked
from a unit's insert to its COMMIT, so a batch held every unit's counter rows
to the end, and batches took them in different orders (deadlocks). Migration
0032 moved the counters' updates to COMMIT, and the quota rechecks, which read
the committed counters, add what earlier units of the batch inserted
(``cirrus.db.pending``). A unit that locks a row every writer of a project
or host waits for (a quota's counter, a host's usage) ends its transaction:
the COMMIT follows at once, as it would alone (``pending.hot_row_taken``;
measured without it: 179 deadlocks in one run, a port quota's row held while
the next unit's address insert waited for another batch). Three failures are
not the unit's own and are worked round:

* a deadlock the batching itself may have caused (rows taken in one order by
  this batch, in another by a unit elsewhere): the unit's savepoint is rolled
  back, and it runs again, alone, after the batch;
* a savepoint statement refused (a unit left the transaction aborted by
  swallowing a database error without a savepoint of its own), or a COMMIT
  that deadlocked (the counters' triggers fire there): nothing was committed,
  so every unit of the batch runs again, each alone.

Any other failed COMMIT fails the whole batch: its outcome is unknown (the
connection may have dropped after the server committed), so nothing is run
again.

A unit declared one statement (``cirrus.db.onestatement``) joins no batch:
it runs in autocommit, one round trip, no BEGIN, COMMIT or savepoint.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, ContextManager

from sqlalchemy.engine import Connection

from cirrus.db import pending
from cirrus.db.handoff import Unit
from cirrus.db.onestatement import is_one_statement, run_autocommit

LOG = logging.getLogger(__name__)

MAX_BATCH = 8  # units per transaction: a failed COMMIT fails no more than these
DEADLOCK = "40P01"

Result = tuple[bool, Any]  # (ok, the unit's result or its exception)
# Gives a connection for one use (``with connect() as conn``): ``Engine.connect``,
# or a DB thread's own connection (``engine.Database``).
Connect = Callable[[], ContextManager[Connection]]


class _RunAlone(Exception):
    """Nothing of the batch was committed, and each unit is to run alone: a
    savepoint statement failed (the transaction was aborted), or the COMMIT
    deadlocked."""


def _call(conn: Connection, unit: Unit[Any]) -> Any:
    return unit.fn(conn, *unit.args, **unit.kwargs)


def is_deadlock(error: BaseException) -> bool:
    """Whether ``error`` (SQLAlchemy's wrapper or the driver's) is PostgreSQL's
    deadlock: the server rolled back the statement, and running it again may
    succeed."""
    orig = getattr(error, "orig", error)
    return getattr(orig, "sqlstate", None) == DEADLOCK


def _savepoint(driver: Any, sql: str) -> None:
    try:
        driver.execute(sql, prepare=False)  # two statements: never prepared
    except Exception as error:  # noqa: BLE001 - whatever the driver says, the batch is lost
        raise _RunAlone(str(error)) from error


def _alone(connect: Connect, unit: Unit[Any]) -> Result:
    """``unit`` in a transaction of its own."""
    try:
        with connect() as conn, conn.begin():
            return True, _call(conn, unit)
    except Exception as error:  # noqa: BLE001 - handed to its caller
        return False, error


def _in_savepoint(conn: Connection, driver: Any, unit: Unit[Any], first: bool) -> Result:
    """``unit`` after the batch's earlier ones, inside a savepoint of its own."""
    _savepoint(driver, "SAVEPOINT unit" if first else "RELEASE SAVEPOINT unit; SAVEPOINT unit")
    before = pending.snapshot(conn)
    try:
        return True, _call(conn, unit)
    except Exception as error:  # noqa: BLE001 - handed to its caller
        _savepoint(driver, "ROLLBACK TO SAVEPOINT unit")
        pending.restore(conn, before)
        return False, error


def _batch(conn: Connection, units: list[Unit[Any]]) -> tuple[list[Result], list[Unit[Any]]]:
    """As many of ``units`` as one transaction on ``conn`` takes: their
    outcomes, and those left for the next transaction (after a first unit that
    raised, or after a unit that took a hot row, ``pending.hot_row_taken``).
    Raises _RunAlone, or the COMMIT's error."""
    driver = conn.connection.driver_connection
    trans = conn.begin()
    try:
        with pending.opened(conn):
            try:
                outcomes: list[Result] = [(True, _call(conn, units[0]))]
            except Exception as error:  # noqa: BLE001 - rolled back whole: nothing else ran yet
                trans.rollback()
                return [(False, error)], units[1:]
            while len(outcomes) < len(units) and not pending.holds_hot_row(conn):
                outcomes.append(_in_savepoint(conn, driver, units[len(outcomes)],
                                              len(outcomes) == 1))
        try:
            trans.commit()
        except Exception as error:
            if is_deadlock(error):  # the counters' triggers: rolled back, nothing committed
                raise _RunAlone(str(error)) from error
            raise
    except BaseException:
        if trans.is_active:
            trans.rollback()
        raise
    return outcomes, units[len(outcomes):]


def _autocommit(connect: Connect, unit: Unit[Any], ready: bool) -> Result:
    """A one-statement ``unit``, without a transaction. A deadlock rolled its
    statement back whole, so it runs once more, as a batched unit would."""
    for last in (False, True):
        try:
            return True, run_autocommit(connect, unit.fn, unit.args, unit.kwargs, ready=ready)
        except Exception as error:  # noqa: BLE001 - handed to its caller
            if last or not is_deadlock(error):
                return False, error
    raise AssertionError("unreachable")


def run_batch(connect: Connect, units: list[Unit[Any]], *,
              autocommit: Connect | None = None) -> list[Result]:
    """Run ``units``: an outcome per unit, in order. The one-statement units
    each alone in autocommit, the others (in order) in as few transactions as
    their outcomes allow. ``connect`` gives a connection (not in autocommit);
    ``autocommit`` one in autocommit, or None: ``connect``'s, switched."""
    single = [is_one_statement(unit.fn) for unit in units]
    if not any(single):
        return _in_transactions(connect, units)
    shared = iter(_in_transactions(connect, [u for u, one in zip(units, single) if not one]))
    return [_autocommit(autocommit or connect, unit, autocommit is not None) if one
            else next(shared) for unit, one in zip(units, single)]


def _in_transactions(connect: Connect, units: list[Unit[Any]]) -> list[Result]:
    """``units`` in as few transactions as their outcomes allow, in order."""
    if not units:
        return []
    if len(units) == 1:
        return [_alone(connect, units[0])]
    outcomes: list[Result] = []
    rest = units
    while rest:
        todo = rest
        try:
            with connect() as conn:
                done, rest = _batch(conn, todo)
        except _RunAlone as why:
            LOG.info("a batch of %d units runs again, each alone: %s", len(todo), why)
            done, rest = [_alone(connect, unit) for unit in todo], []
        except Exception as error:  # noqa: BLE001 - the COMMIT failed: nothing committed
            done, rest = [(False, error)] * len(todo), []
        outcomes.extend(done)
    return [_alone(connect, unit) if not ok and is_deadlock(value) else (ok, value)
            for unit, (ok, value) in zip(units, outcomes)]
