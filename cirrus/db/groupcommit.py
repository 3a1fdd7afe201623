"""Group commit for SQLite, on the event loop's own thread.

SQLite has one writer, and each unit of work pays BEGIN IMMEDIATE and COMMIT.
Every unit a loop queues during one iteration runs in one transaction, each
inside its own SAVEPOINT, committed once. A unit that raises is rolled back to
its savepoint alone and gets its exception; the others still commit. Results
are handed out only after the COMMIT, so no caller ever acts on data that might
not be there.

Why on the loop's thread and not a writer thread (docs/performance.md, the
sixth round): each sqlite3 call releases the GIL. On a writer thread the event
loop took the GIL at every statement, so a transaction stretched to hold the
database-wide write lock for as long as the loop's work in between. The
statements cost ~4–8 µs alone and 30–45 µs on the writer thread. On the loop,
nothing else wants the GIL meanwhile. Measured against the writer thread (same
window, alternating): 297–377 against 256–293 boots/s in 8 of 8 pairs with an
API worker, and 232–257 against 196–217 in one process, for less CPU.

The loop never waits for the lock. Its connection has ``busy_timeout`` 0.
While another process holds the lock (an API worker, a script), the batch stays
queued and BEGIN is tried again from the loop after 50 µs, doubling to 1 ms
(SQLite's own busy handler sleeps 1, 2, 5, 10… ms, and a lock freed in its
sleep sat idle). After ``LOCK_WAIT_LIMIT`` the busy error fails the batch.
Checkpoints run beside the loop (``cirrus.db.checkpoint``).
"""
from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any, Callable, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RootTransaction

from cirrus.db.handoff import DatabaseClosed, Delivery, Outcome, Unit, deliver, new_unit, settle

T = TypeVar("T")

LOCK_POLL_FIRST = 0.00005
LOCK_POLL_MAX = 0.001
LOCK_WAIT_LIMIT = 30.0
MAX_BATCH = 64  # units per transaction: one failing COMMIT fails no more than these


def _is_busy(error: BaseException) -> bool:
    orig = getattr(error, "orig", error)  # SQLAlchemy's wrapper, or sqlite3's own
    return getattr(orig, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _try_begin(conn: Connection) -> RootTransaction | None:
    """``BEGIN IMMEDIATE`` on ``conn``, or None while another connection holds
    the write lock (other errors are raised)."""
    conn.info["begin"] = "BEGIN IMMEDIATE"
    try:
        return conn.begin()
    except (sqlite3.OperationalError, sa.exc.OperationalError) as error:
        if conn.in_transaction():  # the failed BEGIN left SQLAlchemy's marker
            conn.rollback()
        if _is_busy(error):
            return None
        raise


def _in_savepoint(driver: Any, conn: Connection, unit: Unit[Any]) -> tuple[bool, Any]:
    """Run ``unit`` inside a savepoint of its own: (True, result), or (False, the
    exception) with its writes undone. The savepoint is sent straight to
    sqlite3: SQLAlchemy's ``begin_nested`` costs two compiled statements' worth
    of Python per unit. The unit's own ``begin_nested`` blocks nest inside as
    usual."""
    driver.execute("SAVEPOINT group_unit")
    try:
        result = unit.fn(conn, *unit.args, **unit.kwargs)
    except Exception as error:  # noqa: BLE001 - handed to its caller
        driver.execute("ROLLBACK TO SAVEPOINT group_unit")
        driver.execute("RELEASE SAVEPOINT group_unit")
        return False, error
    driver.execute("RELEASE SAVEPOINT group_unit")
    return True, result


def _run_units(conn: Connection, batch: list[Unit[Any]]) -> list[tuple[bool, Any]]:
    """The units of ``batch`` in ``conn``'s open transaction."""
    if len(batch) == 1:  # alone: its transaction is its own
        unit = batch[0]
        return [(True, unit.fn(conn, *unit.args, **unit.kwargs))]
    driver = conn.connection.driver_connection
    return [_in_savepoint(driver, conn, unit) for unit in batch]


class GroupCommit:
    """``submit`` from a running loop; the units a loop queued are run by one
    callback of that loop, on its thread and its own connection (``connect``,
    called there), and their futures settled after the COMMIT. ``on_commit``
    runs after each COMMIT; ``on_batch(size, seconds)`` after each transaction
    (the metrics: its units, and the time of their statements and COMMIT)."""

    def __init__(self, connect: Callable[[], Connection],
                 on_commit: Callable[[], None] | None = None,
                 on_batch: Callable[[int, float], None] | None = None) -> None:
        self._connect = connect
        self._on_commit = on_commit
        self._on_batch = on_batch
        self._closed = False
        self._pending: dict[asyncio.AbstractEventLoop, list[Unit[Any]]] = {}
        # Per loop whose BEGIN found the lock taken: since when, the next delay.
        self._waiting: dict[asyncio.AbstractEventLoop, tuple[float, float]] = {}

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> asyncio.Future[T]:
        """Queue ``fn`` from the running loop; its future is settled after the
        commit of the batch it joins (this loop iteration's, or the one waiting
        for the lock)."""
        unit = new_unit(fn, args, kwargs, self._closed)
        if unit.future.done():
            return unit.future
        pending = self._pending.get(unit.loop)
        if pending is None:
            pending = self._pending[unit.loop] = []
            unit.loop.call_soon(self._flush, unit.loop)
        pending.append(unit)
        return unit.future

    def shutdown(self) -> None:
        """Fail what is still queued with DatabaseClosed, and anything later."""
        self._closed = True
        late: list[Delivery] = []
        for loop in list(self._pending):  # loops on other threads may still add
            late.extend((loop, unit.future, False, DatabaseClosed())
                        for unit in self._pending.pop(loop, ()))
        self._waiting.clear()
        deliver(late)

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        units = self._pending.get(loop)
        if not units:  # failed by shutdown meanwhile
            self._pending.pop(loop, None)
            return
        try:
            trans = _try_begin(self._connect())
        except BaseException as error:  # noqa: BLE001 - the batch's callers get it
            self._fail(loop, error)
            return
        if trans is None:
            self._wait_for_lock(loop)
            return
        self._waiting.pop(loop, None)
        batch, rest = units[:MAX_BATCH], units[MAX_BATCH:]
        if rest:
            self._pending[loop] = rest
            loop.call_soon(self._flush, loop)
        else:
            del self._pending[loop]
        if self._on_batch is None:
            settle(self._commit(trans, batch))
            return
        started = time.perf_counter()
        outcomes = self._commit(trans, batch)
        self._on_batch(len(batch), time.perf_counter() - started)
        settle(outcomes)

    def _commit(self, trans: RootTransaction, batch: list[Unit[Any]]) -> list[Outcome]:
        try:
            with trans:
                outcomes = _run_units(trans.connection, batch)
        except BaseException as error:  # noqa: BLE001 - COMMIT failed: nothing committed
            outcomes = [(False, error)] * len(batch)
        else:
            if self._on_commit is not None:
                self._on_commit()
        return [(unit.future, ok, value) for unit, (ok, value) in zip(batch, outcomes)]

    def _wait_for_lock(self, loop: asyncio.AbstractEventLoop) -> None:
        now = time.monotonic()
        since, delay = self._waiting.get(loop, (now, LOCK_POLL_FIRST))
        if now - since >= LOCK_WAIT_LIMIT:
            self._fail(loop, sqlite3.OperationalError(
                f"database is locked (the write lock was busy for {LOCK_WAIT_LIMIT:.0f} s)"))
            return
        self._waiting[loop] = (since, min(delay * 2, LOCK_POLL_MAX))
        loop.call_later(delay, self._flush, loop)

    def _fail(self, loop: asyncio.AbstractEventLoop, error: BaseException) -> None:
        self._waiting.pop(loop, None)
        settle([(unit.future, False, error) for unit in self._pending.pop(loop, [])])
