"""Threads that run units of work for the event loop (the DB's reader pool, and
its writers on databases other than SQLite).

Each unit's result goes back as an asyncio future settled through
:func:`cirrus.db.handoff.deliver` as soon as the unit ends, so a finished point
read never waits behind a listing queued after it (the boot path's reads run on
the loop on SQLite; what comes here is mostly listings and periodic reads).
A pool given a ``batch`` runner (PostgreSQL's writers, ``cirrus.db.pgcommit``)
hands each thread every unit already queued, up to ``max_batch``, at once, and
settles them together when the batch is done.
"""
from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Callable, TypeVar

from cirrus.db.handoff import Delivery, Unit, deliver, fail_left, new_unit

T = TypeVar("T")

# What a pool's threads call: ``run(fn, args, kwargs)`` (a transaction around fn).
Runner = Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], Any]
# Or, for batches: ``run(units)`` → (ok, result or exception) per unit, in order.
BatchRunner = Callable[[list[Unit[Any]]], list[tuple[bool, Any]]]


class _Stop:
    """The marker that stops one thread."""


_STOP = _Stop()


class WorkerPool:
    """``threads`` threads calling ``run(fn, args, kwargs)`` for submitted units
    (or ``batch(units)`` for up to ``max_batch`` of them at a time)."""

    def __init__(self, run: Runner, threads: int, name: str, *,
                 batch: BatchRunner | None = None, max_batch: int = 1) -> None:
        self._run = run
        self._batch = batch
        self._max_batch = max_batch if batch is not None else 1
        self._closed = False
        self._queue: queue.SimpleQueue[Unit[Any] | _Stop] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._loop, name=f"{name}_{n}", daemon=True)
                         for n in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> asyncio.Future[T]:
        """Queue ``fn``; the future (of the running loop) settles with its outcome."""
        unit = new_unit(fn, args, kwargs, self._closed)
        if not unit.future.done():
            self._queue.put(unit)
        return unit.future

    def shutdown(self) -> None:
        """Finish what is queued, then stop every thread; what comes later
        (or slipped in behind the stop) fails with DatabaseClosed."""
        self._closed = True
        for _ in self._threads:
            self._queue.put(_STOP)
        for thread in self._threads:
            thread.join()
        fail_left(self._queue)

    def _loop(self) -> None:
        while True:
            unit = self._queue.get()
            if isinstance(unit, _Stop):
                return
            if self._batch is not None:
                units = self._take_queued(unit)
                deliver([(u.loop, u.future, ok, value)
                         for u, (ok, value) in zip(units, self._batch(units))])
                continue
            outcome: Delivery
            try:
                outcome = (unit.loop, unit.future, True, self._run(unit.fn, unit.args, unit.kwargs))
            except BaseException as error:  # noqa: BLE001 - handed to its caller
                outcome = (unit.loop, unit.future, False, error)
            deliver([outcome])

    def _take_queued(self, first: Unit[Any]) -> list[Unit[Any]]:
        """``first`` and its share of the units queued behind it: on PostgreSQL
        the threads' transactions run side by side, while a batch runs its
        units one after the other, so each thread takes no more than the
        backlog divided among the threads (at most ``max_batch``). A stop
        marker met on the way goes back to the queue, for whichever thread
        takes it next."""
        units = [first]
        share = 1 + min(self._max_batch - 1, self._queue.qsize() // len(self._threads))
        while len(units) < share:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, _Stop):
                self._queue.put(item)
                break
            units.append(item)
        return units
