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
import threading
from typing import Any, Callable

from sqlalchemy.engine import Connection

from cirrus.db.handoff import Unit, deliver, fail_left, new_unit


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
                 name: str = "db-w") -> None:
        self._connect = connect
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
            if first is None:
                return
            batch, stop = self._take_batch(first)
            self._run(batch)
            if stop:
                return

    def _run(self, batch: list[Unit]) -> None:
        outcomes: list[tuple[bool, Any]] = []
        try:
            conn = self._connect()
            conn.info["begin"] = "BEGIN IMMEDIATE"
            with conn.begin():
                if len(batch) == 1:  # alone: its transaction is its own
                    unit = batch[0]
                    outcomes.append((True, unit.fn(conn, *unit.args, **unit.kwargs)))
                else:
                    driver = conn.connection.driver_connection
                    for unit in batch:
                        outcomes.append(_in_savepoint(driver, conn, unit))
        except BaseException as error:  # noqa: BLE001 - BEGIN/COMMIT failed: nothing committed
            outcomes = [(False, error)] * len(batch)
        deliver([(unit.loop, unit.future, ok, value)
                 for unit, (ok, value) in zip(batch, outcomes)])
