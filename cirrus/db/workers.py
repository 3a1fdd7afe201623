"""Threads that run units of work for the event loop (the DB's reader pool, and
its writers on databases other than SQLite).

Each unit's result goes back as an asyncio future settled through
:func:`cirrus.db.handoff.deliver`. A thread that finds more work queued runs it
before handing results over, up to ``max_batch`` units, so a busy thread wakes
the loop once per batch rather than once per unit; with nothing queued it hands
over at once.
"""
from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Callable

from cirrus.db.handoff import deliver

_STOP = object()


class WorkerPool:
    """``threads`` threads calling ``run(fn, args, kwargs)`` for submitted units."""

    def __init__(self, run: Callable[[Callable[..., Any], tuple, dict], Any], threads: int,
                 name: str, max_batch: int = 16) -> None:
        self._run = run
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._loop, name=f"{name}_{n}", daemon=True)
                         for n in range(threads)]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> asyncio.Future:
        """Queue ``fn``; the future (of the running loop) settles with its outcome."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.put((loop, future, fn, args, kwargs))
        return future

    def shutdown(self) -> None:
        """Finish what is queued, then stop every thread."""
        for _ in self._threads:
            self._queue.put(_STOP)
        for thread in self._threads:
            thread.join()

    def _loop(self) -> None:
        done: list[tuple[Any, asyncio.Future, bool, Any]] = []
        while True:
            if done:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    deliver(done)
                    done = []
                    continue
            else:
                item = self._queue.get()
            if item is _STOP:
                deliver(done)
                return
            loop, future, fn, args, kwargs = item
            try:
                done.append((loop, future, True, self._run(fn, args, kwargs)))
            except BaseException as error:  # noqa: BLE001 - handed to its caller
                done.append((loop, future, False, error))
            if len(done) >= self._max_batch:
                deliver(done)
                done = []
