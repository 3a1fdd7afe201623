"""The hand-back of DB threads' outcomes to a loop (cirrus/db/handoff.py
``Inbox``): every outcome settles its future exactly once, outcomes that arrive
before the loop drains share one wake-up, and a loop that is gone is harmless."""
from __future__ import annotations

import asyncio
import gc
import os
import threading
from typing import Any

import pytest

from cirrus.db import handoff
from cirrus.db.workers import WorkerPool


def _run_on_threads(loop: asyncio.AbstractEventLoop, futures: list[asyncio.Future[Any]],
                    threads: int) -> list[threading.Thread]:
    """Threads that each deliver a share of ``futures``, one by one, some as
    failures (odd indexes)."""
    def deliver(share: list[tuple[int, asyncio.Future[Any]]]) -> None:
        for i, future in share:
            ok = i % 2 == 0
            handoff.deliver([(loop, future, ok, i if ok else ValueError(i))])

    indexed = list(enumerate(futures))
    started = [threading.Thread(target=deliver, args=(indexed[n::threads],))
               for n in range(threads)]
    for thread in started:
        thread.start()
    return started


async def test_every_outcome_from_many_threads_settles_its_own_future() -> None:
    loop = asyncio.get_running_loop()
    handoff.inbox_for(loop)
    futures: list[asyncio.Future[Any]] = [loop.create_future() for _ in range(4000)]
    threads = _run_on_threads(loop, futures, threads=4)
    results = await asyncio.gather(*futures, return_exceptions=True)
    for thread in threads:
        thread.join()
    for i, result in enumerate(results):
        if i % 2 == 0:
            assert result == i
        else:
            assert isinstance(result, ValueError) and result.args == (i,)


async def test_outcomes_posted_before_the_loop_drains_share_one_wake_up() -> None:
    loop = asyncio.get_running_loop()
    inbox = handoff.inbox_for(loop)
    first, second, third = (loop.create_future() for _ in range(3))
    # Posted from this thread without yielding: the loop has not drained yet.
    inbox.post([(first, True, 1)])
    inbox.post([(second, True, 2), (third, False, KeyError("x"))])
    assert os.eventfd_read(inbox._fd) == 1  # one write for three outcomes
    os.eventfd_write(inbox._fd, 1)  # put back the wake-up taken above
    assert await first == 1 and await second == 2
    with pytest.raises(KeyError):
        await third
    # Drained: the next post wakes the loop again.
    fourth = loop.create_future()
    inbox.post([(fourth, True, 4)])
    assert await asyncio.wait_for(fourth, 5) == 4


async def test_a_cancelled_future_is_skipped() -> None:
    loop = asyncio.get_running_loop()
    gone, kept = loop.create_future(), loop.create_future()
    gone.cancel()
    handoff.inbox_for(loop).post([(gone, True, 1), (kept, True, 2)])
    assert await kept == 2


def test_a_unit_made_on_a_loop_gets_that_loops_inbox() -> None:
    loop = asyncio.new_event_loop()
    try:
        async def make() -> handoff.Unit[int]:
            return handoff.new_unit(int, (), {}, closed=False)

        unit = loop.run_until_complete(make())
        assert unit.loop is loop and loop in handoff._INBOXES
    finally:
        loop.close()


def test_delivering_to_a_closed_loop_raises_nothing() -> None:
    loop = asyncio.new_event_loop()
    future = loop.create_future()

    async def make() -> None:
        handoff.inbox_for(loop)

    loop.run_until_complete(make())
    loop.close()
    done = threading.Thread(target=handoff.deliver, args=([(loop, future, True, 1)],))
    done.start()
    done.join()
    assert not future.done()  # nobody is left to settle it, and nothing failed


def test_the_eventfd_is_closed_with_the_loop() -> None:
    loop = asyncio.new_event_loop()

    async def make() -> int:
        return handoff.inbox_for(loop)._fd

    fd = loop.run_until_complete(make())
    os.fstat(fd)  # open
    loop.close()
    del loop, make
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)


async def test_a_worker_pool_hands_back_through_the_inbox() -> None:
    pool = WorkerPool(lambda fn, args, kwargs: fn(*args, **kwargs), threads=3, name="t-inbox")
    try:
        results = await asyncio.gather(*[pool.submit(pow, (i, 2), {}) for i in range(300)])
    finally:
        pool.shutdown()
    assert results == [i * i for i in range(300)]
    assert asyncio.get_running_loop() in handoff._INBOXES


async def test_no_wake_up_is_lost_while_the_loop_drains() -> None:
    """Waves of outcomes from threads racing the loop's drains: a drain that
    swallowed a wake-up meant for a later outcome would leave a wave waiting."""
    loop = asyncio.get_running_loop()
    handoff.inbox_for(loop)
    for _ in range(40):
        futures: list[asyncio.Future[Any]] = [loop.create_future() for _ in range(100)]
        threads = _run_on_threads(loop, futures, threads=3)
        await asyncio.wait_for(asyncio.gather(*futures, return_exceptions=True), 10)
        for thread in threads:
            thread.join()


async def test_a_post_during_the_drains_read_still_wakes_the_loop_later(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministically, the race the order of ``_drain`` closes: a thread
    posts while the loop is in its eventfd read. That post's outcome is taken
    by the drain under way, and the *next* post must still wake the loop."""
    loop = asyncio.get_running_loop()
    inbox = handoff.inbox_for(loop)
    real_read = os.eventfd_read
    during, later = loop.create_future(), loop.create_future()
    hooked: list[bool] = []

    def read_with_a_post_racing(fd: int) -> int:
        if fd == inbox._fd and not hooked:
            hooked.append(True)
            racer = threading.Thread(target=inbox.post, args=([(during, True, "during")],))
            racer.start()
            racer.join()
        return real_read(fd)

    monkeypatch.setattr(handoff.os, "eventfd_read", read_with_a_post_racing)
    first = loop.create_future()
    inbox.post([(first, True, "first")])
    assert await asyncio.wait_for(first, 5) == "first"
    assert await asyncio.wait_for(during, 5) == "during"
    poster = threading.Thread(target=inbox.post, args=([(later, True, "later")],))
    poster.start()
    poster.join()
    assert await asyncio.wait_for(later, 5) == "later"
