"""The tap watcher's lifecycle: once stopped, a late watch starts nothing."""
from __future__ import annotations

import asyncio

from cirrus.config import Settings
from cirrus.network.backends.tapwatch import TapWatcher


async def _never_up(port_id: str) -> None:
    raise AssertionError(f"{port_id} reported up by a stopped watcher")


async def test_a_watch_after_stop_starts_no_poll() -> None:
    # A sync or a bind still in flight when the backend stops may ask for a
    # tap wait; the poll it would start outlives the backend.
    watcher = TapWatcher(Settings(), _never_up, interval=0.01)
    await watcher.stop()
    before = asyncio.all_tasks()
    watcher.watch("port-1", "tapport-1", "brq-net", timeout=60)
    assert asyncio.all_tasks() == before
    assert watcher.known() == set()


async def test_stop_ends_a_running_poll() -> None:
    watcher = TapWatcher(Settings(), _never_up, interval=0.01)
    watcher.watch("port-1", "tap-absent", "brq-absent", timeout=60)
    assert watcher.known() == {"port-1"}
    await watcher.stop()
    assert watcher.known() == set()
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "linuxbridge-tap-watch"]
