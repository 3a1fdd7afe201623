"""Wait for guests' taps to join their bridges.

libvirt creates a port's tap and enslaves it to the network's bridge when the
domain starts (paused); that is when the port is up. One poll of ``ip -j link``
every ``interval`` serves every port being waited for, so a burst of boots
costs no more than one.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Coroutine

from cirrus.network.linux import ip
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)


@dataclass
class _Wait:
    dev: str
    bridge: str
    deadline: float


class TapWatcher:
    """Calls ``on_up(port_id)`` once when the port's tap is on its bridge."""

    def __init__(self, settings: Any, on_up: Callable[[str], Coroutine[Any, Any, None]],
                 interval: float = 0.1) -> None:
        self.settings = settings
        self.on_up = on_up
        self.interval = interval
        self._waits: dict[str, _Wait] = {}
        # Ports whose wait ended (tap found or timed out): not watched again
        # until they are unbound or explicitly watched.
        self._settled: set[str] = set()
        self._task: asyncio.Task[Any] | None = None
        # Set by stop(): a sync or bind still in flight then must not start
        # the poll again (it would outlive the backend).
        self._stopped = False

    def watch(self, port_id: str, dev: str, bridge: str, timeout: float) -> None:
        """Start waiting (again) for ``dev`` to be enslaved to ``bridge``
        (nothing once stopped)."""
        if self._stopped:
            return
        self._settled.discard(port_id)
        self._waits[port_id] = _Wait(dev, bridge, time.monotonic() + timeout)
        if self._task is None or self._task.done():
            self._task = spawn(self._poll(), name="linuxbridge-tap-watch")

    def cancel(self, port_id: str) -> None:
        """Stop waiting for ``port_id`` (unbound or deleted) and forget it."""
        self._waits.pop(port_id, None)
        self._settled.discard(port_id)

    def known(self) -> set[str]:
        """Ports being waited for or whose wait ended."""
        return set(self._waits) | self._settled

    def settled(self, port_id: str) -> bool:
        """Whether the wait for ``port_id`` ended (reported up, or timed out)."""
        return port_id in self._settled

    async def stop(self) -> None:
        """Stop polling for good; later :meth:`watch` calls do nothing."""
        self._stopped = True
        self._waits.clear()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _poll(self) -> None:
        while self._waits:
            try:
                links = await ip.links(self.settings)
            except ip.CommandError as e:
                LOG.warning("listing links failed: %s", e)
                links = {}
            now = time.monotonic()
            for port_id, wait in list(self._waits.items()):
                if links.get(wait.dev, {}).get("master") == wait.bridge:
                    del self._waits[port_id]
                    self._settled.add(port_id)
                    spawn(self.on_up(port_id), name=f"linuxbridge-port-up-{port_id}")
                elif now >= wait.deadline:
                    del self._waits[port_id]
                    self._settled.add(port_id)
                    LOG.warning("port %s: %s did not join %s in time; not reporting it up",
                                port_id, wait.dev, wait.bridge)
            if self._waits:
                await asyncio.sleep(self.interval)
