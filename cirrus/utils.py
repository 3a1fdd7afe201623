"""Small helpers shared by every service."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Coroutine, Hashable

LOG = logging.getLogger(__name__)

# Strong references: the loop keeps only weak ones to tasks.
_TASKS: set[asyncio.Task[Any]] = set()


def spawn(coro: Coroutine[Any, Any, Any], name: str, awaited: bool = False) -> asyncio.Task[Any]:
    """Start named background work whose failure is logged, never lost.

    ``awaited=True``: the caller awaits the task and handles its failure, so
    it is tracked (and cancelled on shutdown) but not logged here.
    """
    task = asyncio.get_running_loop().create_task(coro, name=name)
    _TASKS.add(task)
    task.add_done_callback(_discard if awaited else _finished)
    return task


def _discard(task: asyncio.Task[Any]) -> None:
    _TASKS.discard(task)


def _finished(task: asyncio.Task[Any]) -> None:
    _TASKS.discard(task)
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        LOG.error("background task %s failed", task.get_name(), exc_info=exc)


class Supervisor:
    """The background tasks of one owner (a transport, a service), started
    through :func:`spawn` and ended together by :meth:`stop`: an owner that
    stops leaves nothing of its own running."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        """:func:`spawn` ``coro`` as one of this owner's tasks."""
        task = spawn(coro, name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        """Cancel the tasks still running and wait for each to end."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)


class KeyedLocks:
    """An asyncio lock per key (an instance, an image), ``async with
    locks(key)``. A key's lock is kept only while someone holds or waits for
    it: a host sees thousands of instances, and a lock per key ever seen would
    stay for the life of the process."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[asyncio.Lock, list[int]]] = {}

    def __call__(self, key: Hashable) -> "_KeyedLock":
        return _KeyedLock(self._entries, key)

    def __len__(self) -> int:
        return len(self._entries)


class _KeyedLock:
    __slots__ = ("entries", "key", "lock", "users")

    def __init__(self, entries: dict[Hashable, tuple[asyncio.Lock, list[int]]],
                 key: Hashable) -> None:
        self.entries = entries
        self.key = key

    async def __aenter__(self) -> None:
        entry = self.entries.get(self.key)
        if entry is None:
            entry = self.entries[self.key] = (asyncio.Lock(), [0])
        self.lock, self.users = entry
        self.users[0] += 1
        try:
            await self.lock.acquire()
        except BaseException:
            self._leave()
            raise

    async def __aexit__(self, *exc_info: Any) -> None:
        self.lock.release()
        self._leave()

    def _leave(self) -> None:
        self.users[0] -= 1
        if not self.users[0]:
            del self.entries[self.key]

