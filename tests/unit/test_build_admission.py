"""Build admission rules: creates wait while the backlog is at the limit, first
come first admitted, never longer than the wait bound."""
from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest

from cirrus.compute import admission
from cirrus.compute.admission import BuildAdmission


class CountingDB:
    """What admission reads: the backlog count, set by the test."""

    is_sqlite = False

    def __init__(self, backlog: int = 0) -> None:
        self.backlog = backlog
        self.reads = 0

    async def read(self, fn: Callable[..., Any], *args: Any) -> int:
        assert fn is admission.count_backlog
        self.reads += 1
        return self.backlog


@pytest.fixture(autouse=True)
def fast_recount(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admission, "RECOUNT_S", 0.001)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.002)


async def test_creates_go_ahead_until_the_backlog_is_at_the_limit() -> None:
    db = CountingDB()
    gate = BuildAdmission(db, limit=3, max_wait=10)  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.wait_for(gate.admit(1), 1)
    db.backlog = 3  # the three wait to build
    fourth = asyncio.ensure_future(gate.admit(1))
    await settle()
    assert not fourth.done()
    db.backlog = 2  # one of them left the backlog
    await asyncio.wait_for(fourth, 1)


async def test_waiting_creates_are_admitted_in_order_without_overtaking() -> None:
    db = CountingDB(backlog=4)
    gate = BuildAdmission(db, limit=4, max_wait=10)  # type: ignore[arg-type]
    order: list[str] = []

    async def create(name: str, count: int) -> None:
        await gate.admit(count)
        order.append(name)
    big = asyncio.ensure_future(create("big", 3))
    await settle()
    small = asyncio.ensure_future(create("small", 1))
    await settle()
    db.backlog = 3  # room for one: the small one must not pass the big one
    await settle()
    assert order == []
    db.backlog = 0
    await asyncio.wait_for(asyncio.gather(big, small), 1)
    assert order == ["big", "small"]


async def test_a_request_larger_than_the_limit_goes_alone() -> None:
    db = CountingDB(backlog=1)
    gate = BuildAdmission(db, limit=5, max_wait=10)  # type: ignore[arg-type]
    many = asyncio.ensure_future(gate.admit(20))
    await settle()
    assert not many.done()
    db.backlog = 0
    await asyncio.wait_for(many, 1)


async def test_a_backlog_that_does_not_move_holds_a_create_only_max_wait() -> None:
    db = CountingDB(backlog=10)
    gate = BuildAdmission(db, limit=10, max_wait=0.1)  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    start = loop.time()
    # Bounded, not timed: a loaded machine may take longer than max_wait, but
    # a create held for good would never return.
    await asyncio.wait_for(gate.admit(1), 60)
    assert loop.time() - start >= 0.1


async def test_a_cancelled_create_leaves_the_queue() -> None:
    db = CountingDB(backlog=2)
    gate = BuildAdmission(db, limit=2, max_wait=10)  # type: ignore[arg-type]
    first = asyncio.ensure_future(gate.admit(2))
    await settle()
    second = asyncio.ensure_future(gate.admit(1))
    await settle()
    first.cancel()  # its client went away
    db.backlog = 1
    await asyncio.wait_for(second, 1)  # not stuck behind the cancelled one


async def test_creates_that_count_first_together_all_count_against_the_limit() -> None:
    db = SlowCountingDB()
    gate = BuildAdmission(db, limit=2, max_wait=10)  # type: ignore[arg-type]
    creates = [asyncio.ensure_future(gate.admit(1)) for _ in range(4)]
    await asyncio.sleep(0)  # all four count the backlog at once: 0
    db.backlog = 2  # what two admitted creates make it
    await settle()
    assert sum(c.done() for c in creates) == 2
    db.backlog = 0
    await asyncio.wait_for(asyncio.gather(*creates), 1)


class SlowCountingDB(CountingDB):
    """A count that yields to the loop, as a read on a DB thread does: what it
    returns is the backlog when it began."""

    async def read(self, fn: Callable[..., Any], *args: Any) -> int:
        counted = await super().read(fn, *args)
        await asyncio.sleep(0.01)
        return counted


async def test_no_limit_reads_nothing() -> None:
    db = CountingDB(backlog=10_000)
    gate = BuildAdmission(db, limit=0, max_wait=10)  # type: ignore[arg-type]
    await asyncio.wait_for(gate.admit(100), 1)
    assert db.reads == 0
