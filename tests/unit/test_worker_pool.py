"""The DB threads' pool: which thread takes a unit, batches, shutdown."""
from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any, Iterator

import pytest

from cirrus.db import handoff
from cirrus.db.handoff import DatabaseClosed, Unit
from cirrus.db.workers import _STOP, WorkerPool


def _call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


def _thread_name() -> str:
    return threading.current_thread().name


async def _all_idle(pool: WorkerPool, threads: int) -> None:
    """Until every thread waits for work (a thread that started late would
    otherwise go idle after the others, on top of the stack)."""
    while len(pool._idle) < threads:
        await asyncio.sleep(0.001)


@contextlib.contextmanager
def _pool(threads: int) -> Iterator[WorkerPool]:
    pool = WorkerPool(_call, threads=threads, name=f"t-pool{threads}")
    try:
        yield pool
    finally:
        pool.shutdown()


async def _names_one_at_a_time(pool: WorkerPool, count: int) -> list[str]:
    """The threads that ran ``count`` units queued one after the other's end."""
    return [await pool.submit(_thread_name, (), {}) for _ in range(count)]


async def _all_at_once(pool: WorkerPool, count: int) -> list[int]:
    """``count`` units that each wait for all the others (a thread each)."""
    barrier = threading.Barrier(count, timeout=10)
    return await asyncio.gather(*[pool.submit(barrier.wait, (), {}) for _ in range(count)])


async def test_units_one_at_a_time_stay_on_the_thread_that_went_idle_last() -> None:
    """An idle pool hands each unit to its warmest thread: a process booting
    one server at a time uses one connection, not each in turn."""
    with _pool(4) as pool:
        await _all_idle(pool, 4)
        names = await _names_one_at_a_time(pool, 20)
    assert len(set(names)) == 1, names


async def test_units_at_once_still_run_side_by_side() -> None:
    """Four units that each wait for the others: they finish only if four
    threads run them together."""
    with _pool(4) as pool:
        results = await _all_at_once(pool, 4)
    assert sorted(results) == [0, 1, 2, 3]


async def test_after_a_burst_the_last_thread_to_finish_takes_the_next_unit() -> None:
    with _pool(3) as pool:
        await _all_at_once(pool, 3)
        await _all_idle(pool, 3)
        names = await _names_one_at_a_time(pool, 10)
    assert len(set(names)) == 1, names


async def test_a_batch_takes_its_share_of_the_backlog() -> None:
    """One thread, at most four units a batch: the first unit alone (nothing
    queued behind it yet), then four, then the two left."""
    sizes: list[int] = []
    release = threading.Event()

    def batch(units: list[Unit[Any]]) -> list[tuple[bool, Any]]:
        sizes.append(len(units))
        release.wait(10)
        return [(True, unit.fn(*unit.args)) for unit in units]

    pool = WorkerPool(_call, threads=1, name="t-batch", batch=batch, max_batch=4)
    try:
        first = pool.submit(pow, (2, 1), {})
        while not sizes:  # the thread holds the first unit
            await asyncio.sleep(0.001)
        rest = [pool.submit(pow, (2, i), {}) for i in range(2, 8)]
        release.set()
        results = await asyncio.gather(first, *rest)
    finally:
        pool.shutdown()
    assert sizes == [1, 4, 2]
    assert results == [2 ** i for i in range(1, 8)]


async def test_shutdown_finishes_what_is_queued_and_refuses_what_comes_later() -> None:
    started, release = threading.Event(), threading.Event()

    def blocked() -> str:
        started.set()
        release.wait(10)
        return "done"

    pool = WorkerPool(_call, threads=1, name="t-stop")
    first = pool.submit(blocked, (), {})
    queued = pool.submit(pow, (3, 2), {})
    assert await asyncio.to_thread(started.wait, 10)
    stopping = asyncio.get_running_loop().run_in_executor(None, pool.shutdown)
    release.set()
    await stopping
    assert await first == "done"
    assert await queued == 9
    late = pool.submit(pow, (3, 3), {})
    with pytest.raises(DatabaseClosed):
        await late


async def test_units_left_behind_the_stop_markers_fail() -> None:
    loop = asyncio.get_running_loop()
    handoff.inbox_for(loop)
    units = [Unit(pow, (2, 2), {}, loop, loop.create_future()) for _ in range(2)]
    handoff.fail_left([_STOP, units[0], _STOP, units[1]])
    for unit in units:
        with pytest.raises(DatabaseClosed):
            await unit.future
