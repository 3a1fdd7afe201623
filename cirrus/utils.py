"""Small helpers shared by every service."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Coroutine

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


def running_tasks() -> set[asyncio.Task[Any]]:
    """Background tasks still running (tests use it to find leaks)."""
    return {t for t in _TASKS if not t.done()}


async def cancel_all(timeout: float = 5.0) -> None:
    """Cancel every background task and wait for them to finish."""
    tasks = running_tasks()
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)
