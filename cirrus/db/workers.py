"""Threads that run units of work for the event loop (the DB's reader pool, and
its writers on databases other than SQLite).

Each unit's result goes back as an asyncio future settled through
:func:`cirrus.db.handoff.deliver` as soon as the unit ends, so a finished point
read never waits behind a listing queued after it (the boot path's reads run on
the loop on SQLite; what comes here is mostly listings and periodic reads).
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


class _Stop:
    """The marker that stops one thread."""


_STOP = _Stop()


class WorkerPool:
    """``threads`` threads calling ``run(fn, args, kwargs)`` for submitted units."""

    def __init__(self, run: Runner, threads: int, name: str) -> None:
        self._run = run
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
            outcome: Delivery
            try:
                outcome = (unit.loop, unit.future, True, self._run(unit.fn, unit.args, unit.kwargs))
            except BaseException as error:  # noqa: BLE001 - handed to its caller
                outcome = (unit.loop, unit.future, False, error)
            deliver([outcome])
