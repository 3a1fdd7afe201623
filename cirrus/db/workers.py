"""Threads that run units of work for the event loop (the DB's reader pool, and
its writers on databases other than SQLite).

Each unit's result goes back as an asyncio future settled through
:func:`cirrus.db.handoff.deliver` as soon as the unit ends, so a finished point
read never waits behind a listing queued after it (the boot path's reads run on
the loop on SQLite; what comes here is mostly listings and periodic reads).
A pool given a ``batch`` runner (PostgreSQL's writers, ``cirrus.db.pgcommit``)
hands each thread every unit already queued, up to ``max_batch``, at once, and
settles them together when the batch is done.

A unit queued while threads are idle wakes the one that went idle last. Threads
waiting on one queue are woken in turn, so a lightly loaded process spread its
units over every thread: each thread's connection prepared each statement
(``cirrus.db.pgdirect``) and warmed its caches separately, and a freshly started
cloud took three times as many boots to reach its steady single-boot latency
(docs/performance.md, round fifteen). The last idle thread is the warmest one;
under load every thread is busy and the order does not matter.
"""
from __future__ import annotations

import asyncio
import threading
from collections import deque
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
        self._mutex = threading.Lock()  # the queue and the idle stack
        self._queue: deque[Unit[Any] | _Stop] = deque()
        # Idle threads' wake-ups, the last one to go idle on top: a held lock
        # each, released once to wake its thread.
        self._idle: list[threading.Lock] = []
        self._threads = [threading.Thread(target=self._loop, name=f"{name}_{n}", daemon=True)
                         for n in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., T], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> asyncio.Future[T]:
        """Queue ``fn``; the future (of the running loop) settles with its outcome."""
        unit = new_unit(fn, args, kwargs, self._closed)
        if not unit.future.done():
            self._put(unit)
        return unit.future

    def _put(self, item: Unit[Any] | _Stop) -> None:
        with self._mutex:
            self._queue.append(item)
            wake = self._idle.pop() if self._idle else None
        if wake is not None:
            wake.release()

    def shutdown(self) -> None:
        """Finish what is queued, then stop every thread; what comes later
        (or slipped in behind the stop) fails with DatabaseClosed."""
        self._closed = True
        for _ in self._threads:
            self._put(_STOP)
        for thread in self._threads:
            thread.join()
        with self._mutex:
            left = list(self._queue)
            self._queue.clear()
        fail_left(left)

    def _next(self, wake: threading.Lock, idle: bool) -> list[Unit[Any]] | None:
        """The next units for this thread (waiting until there are some); None
        when it is to stop. ``idle``: ``wake`` is on the idle stack already."""
        while True:
            if idle:
                wake.acquire()  # released by the _put that pops it off the stack
            with self._mutex:
                if self._queue:
                    return self._take_queued()
                self._idle.append(wake)
            idle = True

    def _idle_unless_queued(self, wake: threading.Lock) -> bool:
        """On the idle stack if nothing is queued (whether it went there). A
        thread goes there *before* it hands its outcome back: the loop's next
        unit, queued in answer to that outcome, then wakes this thread, not
        one that has been idle longer."""
        with self._mutex:
            if self._queue:
                return False
            self._idle.append(wake)
            return True

    def _loop(self) -> None:
        wake = threading.Lock()
        wake.acquire()
        idle = False
        while True:
            units = self._next(wake, idle)
            if units is None:
                return
            outcomes: list[Delivery]
            if self._batch is not None:
                outcomes = [(u.loop, u.future, ok, value)
                            for u, (ok, value) in zip(units, self._batch(units))]
            else:
                unit = units[0]
                try:
                    outcomes = [(unit.loop, unit.future, True,
                                 self._run(unit.fn, unit.args, unit.kwargs))]
                except BaseException as error:  # noqa: BLE001 - handed to its caller
                    outcomes = [(unit.loop, unit.future, False, error)]
            idle = self._idle_unless_queued(wake)
            deliver(outcomes)

    def _take_queued(self) -> list[Unit[Any]] | None:
        """With the mutex held and the queue not empty: its first unit and that
        unit's share of those queued behind it (None for a stop marker): on
        PostgreSQL the threads' transactions run side by side, while a batch
        runs its units one after the other, so each thread takes no more than
        the backlog divided among the threads (at most ``max_batch``). A stop
        marker met on the way stays queued, for whichever thread takes it next."""
        first = self._queue.popleft()
        if isinstance(first, _Stop):
            return None
        units = [first]
        share = 1 + min(self._max_batch - 1, len(self._queue) // len(self._threads))
        while len(units) < share and self._queue:
            item = self._queue[0]
            if isinstance(item, _Stop):
                break
            self._queue.popleft()
            units.append(item)
        return units
