"""The builds running on this host, as named background tasks.

The delete cancels a build of the instance it deletes; the build-time sweep
cancels builds that overran; ``sync_power_states`` leaves building instances
alone. Each is handed this registry.
"""
from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Coroutine

from cirrus.utils import spawn


class RunningBuilds:
    """Build tasks by instance uuid; a task leaves when it finishes."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[Any]] = {}

    def start(self, uuid: str, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as the build of ``uuid`` (a named task)."""
        task = spawn(coro, name=f"build:{uuid}")
        self._tasks[uuid] = task
        task.add_done_callback(lambda _t: self._forget(uuid, task))
        return task

    def _forget(self, uuid: str, task: asyncio.Task[Any]) -> None:
        if self._tasks.get(uuid) is task:
            del self._tasks[uuid]

    def get(self, uuid: str) -> asyncio.Task[Any] | None:
        return self._tasks.get(uuid)

    def tasks(self) -> list[asyncio.Task[Any]]:
        """The build tasks running now."""
        return list(self._tasks.values())

    def __contains__(self, uuid: object) -> bool:
        return uuid in self._tasks

    def __len__(self) -> int:
        return len(self._tasks)

    async def cancel(self, uuid: str, timeout: float) -> None:
        """Cancel the build of ``uuid``, if any, and let it unwind (≤ ``timeout`` s)."""
        task = self._tasks.get(uuid)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait({task}, timeout=timeout)

    async def cancel_many(self, uuids: list[str], timeout: float) -> None:
        """Cancel the builds of ``uuids`` together and let them unwind."""
        tasks = [t for t in (self._tasks.get(u) for u in uuids) if t is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    async def cancel_all(self, timeout: float = 30.0) -> None:
        """At service stop: every build cancelled, and waited for while it
        unwinds (≤ ``timeout`` s) — none is left running after its service."""
        await self.cancel_many(list(self._tasks), timeout)
