"""Group commit for SQLite's single writer thread.

Under load the one writer thread is the bottleneck (docs/performance.md): each
unit of work pays BEGIN IMMEDIATE, COMMIT and a thread hand-off. The writer
here takes every unit already queued (up to ``max_batch``), runs them in one
transaction, each inside its own SAVEPOINT, and commits once. A unit that
raises is rolled back to its savepoint alone and gets its exception; the
others still commit. Results are handed out only after the COMMIT, so no
caller ever acts on data that might not be there.
"""
from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RootTransaction

from cirrus.db.handoff import Unit, deliver, fail_left, new_unit


# Waiting for the write lock: SQLite's own busy handler sleeps 1, 2, 5, 10, 15…
# ms between tries. Another process's group commit holds the lock for a few ms,
# and its writer starts the next one at once, so a writer that slept for 10 ms
# found the lock free and idle half of that time, or taken again. Polling from
# 50 µs, doubling to 1 ms, loses at most that much; the same 30 s limit.
LOCK_POLL_FIRST = 0.00005
LOCK_POLL_MAX = 0.001
LOCK_WAIT_LIMIT = 30.0


def _is_busy(error: BaseException) -> bool:
    orig = getattr(error, "orig", error)  # SQLAlchemy's wrapper, or sqlite3's own
    return getattr(orig, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def begin_immediate(conn: Connection) -> RootTransaction:
    """``BEGIN IMMEDIATE`` on ``conn`` (a SQLite connection of a writer
    thread), polling for the write lock instead of SQLite's sleeping busy
    handler (which this connection no longer uses); the transaction, to be used
    as a context manager. After ``LOCK_WAIT_LIMIT`` the busy error is raised."""
    if not conn.info.get("polls_for_lock"):
        conn.connection.driver_connection.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
        conn.info["polls_for_lock"] = True
    conn.info["begin"] = "BEGIN IMMEDIATE"
    delay, deadline = LOCK_POLL_FIRST, time.monotonic() + LOCK_WAIT_LIMIT
    while True:
        try:
            return conn.begin()
        except (sqlite3.OperationalError, sa.exc.OperationalError) as error:
            if not _is_busy(error) or time.monotonic() >= deadline:
                raise
            if conn.in_transaction():  # the failed BEGIN left SQLAlchemy's marker
                conn.rollback()
        time.sleep(delay)
        delay = min(delay * 2, LOCK_POLL_MAX)


def _in_savepoint(driver: Any, conn: Connection, unit: Unit) -> tuple[bool, Any]:
    """Run ``unit`` inside a savepoint of its own: (True, result), or (False, the
    exception) with its writes undone. The savepoint is sent straight to
    sqlite3: SQLAlchemy's ``begin_nested`` costs two compiled statements' worth
    of Python per unit, on the one thread every write waits for. The unit's own
    ``begin_nested`` blocks nest inside as usual."""
    driver.execute("SAVEPOINT group_unit")
    try:
        result = unit.fn(conn, *unit.args, **unit.kwargs)
    except Exception as error:  # noqa: BLE001 - handed to its caller
        driver.execute("ROLLBACK TO SAVEPOINT group_unit")
        driver.execute("RELEASE SAVEPOINT group_unit")
        return False, error
    driver.execute("RELEASE SAVEPOINT group_unit")
    return True, result


class GroupCommitWriter:
    """One thread; ``submit`` returns a future resolved after the unit's commit."""

    def __init__(self, connect: Callable[[], Connection], max_batch: int = 64,
                 name: str = "db-w", on_commit: Callable[[], None] | None = None) -> None:
        self._connect = connect
        self._on_commit = on_commit  # after each COMMIT, on this thread
        self._max_batch = max_batch
        self._closed = False
        self._queue: queue.SimpleQueue[Unit | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> asyncio.Future:
        """Queue ``fn`` from the running loop; its future is settled after the
        commit, with the others of its batch in one hand-over (``handoff``)."""
        unit = new_unit(fn, args, kwargs, self._closed)
        if not unit.future.done():
            self._queue.put(unit)
        return unit.future

    def shutdown(self) -> None:
        """Finish what is queued, then stop the thread; what comes later (or
        slipped in behind the stop) fails with DatabaseClosed."""
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        fail_left(self._queue)

    def _take_batch(self, first: Unit) -> tuple[list[Unit], bool]:
        batch, stop = [first], False
        while len(batch) < self._max_batch:
            try:
                unit = self._queue.get_nowait()
            except queue.Empty:
                break
            if unit is None:
                stop = True
                break
            batch.append(unit)
        return batch, stop

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None or self._run(first):
                return

    def _run(self, first: Unit) -> bool:
        """One group commit. The write lock comes first, then the batch: units
        queued while another process held the lock go in with ``first``.
        True when the stop came with the batch."""
        batch, stop = [first], False
        outcomes: list[tuple[bool, Any]] = []
        try:
            conn = self._connect()
            with begin_immediate(conn):
                batch, stop = self._take_batch(first)
                if len(batch) == 1:  # alone: its transaction is its own
                    outcomes.append((True, first.fn(conn, *first.args, **first.kwargs)))
                else:
                    driver = conn.connection.driver_connection
                    for unit in batch:
                        outcomes.append(_in_savepoint(driver, conn, unit))
        except BaseException as error:  # noqa: BLE001 - BEGIN/COMMIT failed: nothing committed
            outcomes = [(False, error)] * len(batch)
        else:
            if self._on_commit is not None:
                self._on_commit()
        deliver([(unit.loop, unit.future, ok, value)
                 for unit, (ok, value) in zip(batch, outcomes)])
        return stop
