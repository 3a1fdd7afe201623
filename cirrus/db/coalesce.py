"""Same-shaped one-statement write units of concurrent callers as one statement.

On PostgreSQL each write unit costs a hand-off to a writer thread, a
connection checkout, psycopg's per-execute Python and a backend statement,
whatever it writes. When many boots end at once they run the same unit (the
compute's ``mark_active``) on different rows; one set-based statement
(``UPDATE … FROM unnest(…)``) writes N rows for about the cost of one.

A :class:`SetUnit` says how: ``run_set(conn, rows)`` writes every row in one
statement and returns each written row's result by its key;
``run_one(conn, row)`` is the unit of one row as it ran before (it raises the
precise exception when its guard matched nothing). :meth:`Coalescer.run`
queues a row in the open *batch* of its unit and shape; a batch is carried by
one unit of work queued on the writer threads, and takes every row that
joined it until a thread starts it. So rows wait together only while the
writers are busy: no timer, and a lone caller's row runs as soon as a thread
is free, alone (``run_one``).

What a row gets is what ``run_one`` would have given it:

* a row whose key did not come back (its guard matched nothing) runs
  ``run_one`` after the set statement, and gets its exception;
* a set statement that fails (a deadlock, an error) changed nothing (one
  statement, autocommit): every row runs ``run_one``, one by one;
* rows with a key already in the batch run ``run_one`` after it;
* a batch whose carrier never ran (the database closed) fails every row with
  the carrier's exception.

Each statement runs in autocommit (the carrier is declared one statement, so
``pgcommit`` gives it a connection without a transaction), so every row's
``run_one`` is the one-statement unit it was. Only for PostgreSQL: SQLite's
group commit already shares one transaction among a loop's units.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Generic, Hashable, TypeVar

from sqlalchemy.engine import Connection

from cirrus.db import onestatement
from cirrus.db.handoff import DatabaseClosed, settle, settled
from cirrus.db.pgcommit import is_deadlock

LOG = logging.getLogger(__name__)

RowT = TypeVar("RowT")
R = TypeVar("R")
# How a unit of work is queued on the writer threads (``WorkerPool.submit``).
Submit = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], "asyncio.Future[Any]"]

# Rows per statement at most: psycopg and the server handle arrays of any
# length, but a batch that falls back runs its rows one by one.
MAX_ROWS = 64


@dataclass(frozen=True, eq=False)  # a dict key by identity
class SetUnit(Generic[RowT, R]):
    """A one-statement write unit that can also write many rows at once.

    ``key(row)``: the row's identity (its result comes back under it);
    ``run_set(conn, rows)``: the rows (distinct keys, one shape) in one
    statement, the result of each row written, by key; ``run_one(conn, row)``:
    the row alone, as a one-statement unit (``onestatement``)."""

    name: str
    key: Callable[[RowT], Hashable]
    run_set: Callable[[Connection, list[RowT]], dict[Hashable, R]]
    run_one: Callable[[Connection, RowT], R]


@dataclass(eq=False)
class _Batch:
    """Rows of one unit and shape waiting for their carrier to start."""

    unit: SetUnit[Any, Any]
    slot: tuple[Any, ...]
    loop: asyncio.AbstractEventLoop
    rows: list[tuple[Any, asyncio.Future[Any]]] = field(default_factory=list)
    taken: bool = False


class Coalescer:
    """Coalesces rows of :class:`SetUnit` s into statements run by ``submit``'s
    threads. ``check_units``: each row's ``run_one`` is checked to send one
    writing statement (``onestatement.checked``), as ``Database.run`` does."""

    def __init__(self, submit: Submit, *, max_rows: int = MAX_ROWS,
                 check_units: bool = False) -> None:
        self._submit = submit
        self._max_rows = max_rows
        self._check_units = check_units
        self._lock = threading.Lock()  # a batch's rows: appended on a loop, taken on a thread
        self._open: dict[tuple[Any, ...], _Batch] = {}  # by (unit, shape, loop)
        # Rows per statement carried so far (1: a row alone): for measurements.
        self.sizes: Counter[int] = Counter()

    async def run(self, unit: SetUnit[RowT, R], shape: Hashable, row: RowT) -> R:
        """``row``'s result: written with the rows of the same ``unit`` and
        ``shape`` queued beside it, or alone. Raises what ``unit.run_one``
        would. A cancelled caller waits for its row's statement to end."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        slot = (unit, shape, loop)
        with self._lock:
            batch = self._open.get(slot)
            joined = (batch is not None and not batch.taken
                      and len(batch.rows) < self._max_rows)
            if joined:
                assert batch is not None
                batch.rows.append((row, future))
            else:
                batch = self._open[slot] = _Batch(unit, slot, loop, [(row, future)])
        if not joined:
            carrier = self._submit(self._carry, (batch,), {})
            carrier.add_done_callback(partial(self._carried, batch))
        return await settled(future)

    @onestatement.one_statement
    def _carry(self, conn: Connection, batch: _Batch) -> list[tuple[bool, Any]]:
        """On a writer thread: each of the batch's rows' (ok, result or
        exception), in order (a carrier never raises: ``pgcommit`` would run
        it again on a deadlock)."""
        with self._lock:
            batch.taken = True
            rows = [row for row, _ in batch.rows]
            self.sizes[len(rows)] += 1
        return self._execute(conn, batch.unit, rows)

    def _carried(self, batch: _Batch, carrier: asyncio.Future[list[tuple[bool, Any]]]) -> None:
        """On the loop, the carrier ended: each row told its outcome (with the
        carrier's, one hand-over from the thread for the batch); a carrier
        that never ran (the database closed) fails its rows as it failed."""
        with self._lock:
            batch.taken = True
            if self._open.get(batch.slot) is batch:
                del self._open[batch.slot]
        futures = [future for _, future in batch.rows]
        if carrier.cancelled() or carrier.exception() is not None:
            error = carrier.exception() if not carrier.cancelled() else DatabaseClosed()
            settle([(future, False, error) for future in futures])
            return
        settle([(future, ok, value) for future, (ok, value) in zip(futures, carrier.result())])

    def _execute(self, conn: Connection, unit: SetUnit[Any, Any],
                 rows: list[Any]) -> list[tuple[bool, Any]]:
        """Each row's (ok, result or exception), in order."""
        if len(rows) == 1:
            return [self._one(conn, unit, rows[0])]
        keys = [unit.key(row) for row in rows]
        first: dict[Hashable, int] = {}
        for index, key in enumerate(keys):
            first.setdefault(key, index)
        written: dict[Hashable, Any] = {}
        try:
            written = unit.run_set(conn, [rows[index] for index in first.values()])
        except Exception as error:  # noqa: BLE001 - nothing written: each row alone
            LOG.info("%s: a set statement of %d rows failed, each runs alone: %s",
                     unit.name, len(first), error)
        return [(True, written[key]) if first[key] == index and key in written
                else self._one(conn, unit, row)
                for index, (key, row) in enumerate(zip(keys, rows))]

    def _one(self, conn: Connection, unit: SetUnit[Any, Any], row: Any) -> tuple[bool, Any]:
        """``row`` alone; a deadlock rolled its statement back, so once more
        (as ``pgcommit`` does for a one-statement unit)."""
        run_one = onestatement.checked(unit.run_one) if self._check_units else unit.run_one
        for last in (False, True):
            try:
                return True, run_one(conn, row)
            except Exception as error:  # noqa: BLE001 - handed to its caller
                if last or not is_deadlock(error):
                    return False, error
        raise AssertionError("unreachable")
