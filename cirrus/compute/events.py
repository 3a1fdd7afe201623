"""Waiting for external events (``network-vif-plugged``) with a deadline.

A waiter is prepared *before* the action that triggers the event (plugging
VIFs), so an event cannot slip past; ``external_instance_event`` pops it.
"""
from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, ContextManager, Iterable


class InstanceEvents:
    """Pending event futures per instance, keyed by ``name-tag``."""

    def __init__(self) -> None:
        self._waiters: dict[str, dict[str, asyncio.Future[dict[str, Any]]]] = {}

    def prepare(self, instance_uuid: str, keys: Iterable[str]
                ) -> dict[str, asyncio.Future[dict[str, Any]]]:
        loop = asyncio.get_running_loop()
        mine = self._waiters.setdefault(instance_uuid, {})
        return {k: mine.setdefault(k, loop.create_future()) for k in keys}

    def pop(self, instance_uuid: str, key: str) -> asyncio.Future[dict[str, Any]] | None:
        return self._waiters.get(instance_uuid, {}).pop(key, None)

    def clear(self, instance_uuid: str) -> None:
        for fut in self._waiters.pop(instance_uuid, {}).values():
            if not fut.done():
                fut.cancel()

    def deliver(self, event: dict[str, Any]) -> bool:
        """Resolve the waiter for ``event``; False if nobody waited for it."""
        key = f"{event['name']}-{event.get('tag')}"
        fut = self.pop(event["server_uuid"], key)
        if fut is None or fut.done():
            return False
        fut.set_result(event)
        return True

    async def external_instance_event(self, ctx: Any, events: list[dict[str, Any]]) -> None:
        """Deliver the VIF events among ``events`` (others have no waiter here)."""
        for event in events:
            if event.get("name") in ("network-vif-plugged", "network-vif-unplugged"):
                self.deliver(event)

    @staticmethod
    async def _wait(futures: dict[str, asyncio.Future[dict[str, Any]]], deadline: float,
                    error_cb: Any) -> None:
        done, pending = await asyncio.wait(futures.values(), timeout=deadline)
        if pending and error_cb is not None:
            missing = [k for k, f in futures.items() if f in pending]
            error_cb(missing)
        for fut in done:
            event = fut.result()
            if event.get("status") == "failed" and error_cb is not None:
                error_cb([f"{event['name']}-{event.get('tag')}"])

    @contextlib.asynccontextmanager
    async def wait_for_instance_event(self, instance_uuid: str, keys: list[str], *,
                                      deadline: float, error_cb: Any = None,
                                      timed: ContextManager[Any] | None = None
                                      ) -> AsyncIterator[None]:
        """Prepare waiters for ``keys``, run the body, then wait up to ``deadline`` s.

        On timeout ``error_cb(keys_missing)`` decides: it raises to fail, or
        returns to carry on (``vif_plugging_is_fatal = False``). ``timed``
        wraps the wait after the body (the boot timeline's step).
        """
        futures = self.prepare(instance_uuid, keys)
        try:
            yield
            if futures:
                with timed or contextlib.nullcontext():
                    await self._wait(futures, deadline, error_cb)
        finally:
            for key in keys:
                waiter = self.pop(instance_uuid, key)
                if waiter is not None and not waiter.done():
                    waiter.cancel()
