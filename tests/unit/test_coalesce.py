"""The coalescer (cirrus/db/coalesce.py): rows queued while their carrier
waits for a writer share one set statement; each caller gets its own row's
result, or what the row alone gives (its guard failed, the set statement
failed, its key came twice); a lone row runs alone; nothing waits for a batch
to fill and nothing is left behind. A fake writer pool runs the carriers when
the test says so."""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Hashable

import pytest

from cirrus.db.coalesce import Coalescer, SetUnit
from cirrus.db.handoff import DatabaseClosed
from cirrus.db.onestatement import is_one_statement

Row = tuple[str, str]  # (key, value)
CONN: Any = object()  # the fake writers' connection: the fake unit ignores it


class FakeWriters:
    """Queues units as the writer threads would; ``run_next`` runs the oldest."""

    def __init__(self) -> None:
        self.queued: list[tuple[Callable[..., Any], tuple[Any, ...], asyncio.Future[Any]]] = []
        self.closed = False

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> asyncio.Future[Any]:
        assert not kwargs
        future = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_exception(DatabaseClosed())
        else:
            self.queued.append((fn, args, future))
        return future

    async def run_next(self) -> None:
        fn, args, future = self.queued.pop(0)
        assert is_one_statement(fn)  # pgcommit runs it in autocommit
        future.set_result(fn(CONN, *args))
        await _settle()

    async def shutdown(self) -> None:
        """What ``WorkerPool.shutdown`` does to units that never ran."""
        self.closed = True
        for _, _, future in self.queued:
            future.set_exception(DatabaseClosed())
        self.queued.clear()
        await _settle()


async def _settle() -> None:
    for _ in range(3):  # the deliveries' call_soon_threadsafe, then the callbacks
        await asyncio.sleep(0)


class FakeStore:
    """A unit over rows ``(key, value)``: a row is written if its key is
    ``allowed``; alone, a refused row raises KeyError (its precise error)."""

    def __init__(self, allowed: set[str], fail_set: bool = False) -> None:
        self.allowed = allowed
        self.fail_set = fail_set
        self.sets: list[list[Row]] = []
        self.ones: list[Row] = []

    def run_set(self, _conn: Any, rows: list[Row]) -> dict[Hashable, str]:
        self.sets.append(list(rows))
        if self.fail_set:
            raise RuntimeError("deadlock detected")
        # Keys back in reverse: results go by key, not by position.
        return {key: f"set:{value}" for key, value in reversed(rows) if key in self.allowed}

    def run_one(self, _conn: Any, row: Row) -> str:
        self.ones.append(row)
        if row[0] not in self.allowed:
            raise KeyError(row[0])
        return f"one:{row[1]}"

    def unit(self) -> SetUnit[Row, str]:
        return SetUnit("fake", key=lambda row: row[0], run_set=self.run_set, run_one=self.run_one)


def _start(coalescer: Coalescer, unit: SetUnit[Row, str], rows: list[Row],
           shape: Hashable = "s") -> list[asyncio.Task[str]]:
    return [asyncio.ensure_future(coalescer.run(unit, shape, row)) for row in rows]


async def _outcomes(tasks: list[asyncio.Task[str]]) -> list[Any]:
    return list(await asyncio.gather(*tasks, return_exceptions=True))


@pytest.fixture
def writers() -> FakeWriters:
    return FakeWriters()


async def test_a_lone_row_runs_alone_at_once(writers: FakeWriters) -> None:
    store = FakeStore({"a"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1")])
    await asyncio.sleep(0)
    assert len(writers.queued) == 1  # queued at once: no timer, no waiting for company
    await writers.run_next()
    assert await _outcomes(tasks) == ["one:1"]
    assert store.sets == [] and store.ones == [("a", "1")]
    assert coalescer.sizes == {1: 1}


async def test_rows_queued_behind_a_waiting_carrier_share_its_statement(
        writers: FakeWriters) -> None:
    store = FakeStore({"a", "b", "c"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2"), ("c", "3")])
    await asyncio.sleep(0)
    assert len(writers.queued) == 1
    await writers.run_next()
    assert await _outcomes(tasks) == ["set:1", "set:2", "set:3"]
    assert store.sets == [[("a", "1"), ("b", "2"), ("c", "3")]] and store.ones == []
    assert coalescer.sizes == {3: 1}


async def test_a_row_that_did_not_come_back_runs_alone_and_gets_its_error(
        writers: FakeWriters) -> None:
    store = FakeStore({"a", "c"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2"), ("c", "3")])
    await asyncio.sleep(0)
    await writers.run_next()
    outcomes = await _outcomes(tasks)
    assert outcomes[0] == "set:1" and outcomes[2] == "set:3"
    assert isinstance(outcomes[1], KeyError) and outcomes[1].args == ("b",)
    assert store.ones == [("b", "2")]


async def test_a_failing_set_statement_runs_every_row_alone(writers: FakeWriters) -> None:
    store = FakeStore({"a", "c"}, fail_set=True)
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2"), ("c", "3")])
    await asyncio.sleep(0)
    await writers.run_next()
    outcomes = await _outcomes(tasks)
    assert outcomes[0] == "one:1" and outcomes[2] == "one:3"
    assert isinstance(outcomes[1], KeyError)
    assert store.ones == [("a", "1"), ("b", "2"), ("c", "3")]  # in order


async def test_a_key_twice_in_a_batch_runs_alone_after_it(writers: FakeWriters) -> None:
    store = FakeStore({"a", "b"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2"), ("a", "3")])
    await asyncio.sleep(0)
    await writers.run_next()
    assert await _outcomes(tasks) == ["set:1", "set:2", "one:3"]
    assert store.sets == [[("a", "1"), ("b", "2")]] and store.ones == [("a", "3")]


async def test_a_started_batch_takes_no_more_rows(writers: FakeWriters) -> None:
    store = FakeStore({"a", "b", "c"})
    coalescer = Coalescer(writers.submit)
    first = _start(coalescer, store.unit(), [("a", "1")])
    await asyncio.sleep(0)
    await writers.run_next()
    later = _start(coalescer, store.unit(), [("b", "2"), ("c", "3")])
    await asyncio.sleep(0)
    assert len(writers.queued) == 1  # a carrier of their own
    await writers.run_next()
    assert await _outcomes(first + later) == ["one:1", "set:2", "set:3"]


async def test_rows_beyond_the_cap_start_another_batch(writers: FakeWriters) -> None:
    store = FakeStore({"a", "b", "c", "d", "e"})
    coalescer = Coalescer(writers.submit, max_rows=2)
    tasks = _start(coalescer, store.unit(), [(k, k) for k in "abcde"])
    await asyncio.sleep(0)
    assert len(writers.queued) == 3
    while writers.queued:
        await writers.run_next()
    assert await _outcomes(tasks) == ["set:a", "set:b", "set:c", "set:d", "one:e"]
    assert coalescer.sizes == {2: 2, 1: 1}


async def test_shapes_and_units_do_not_mix(writers: FakeWriters) -> None:
    store, other = FakeStore({"a", "b", "c"}), FakeStore({"d"})
    coalescer = Coalescer(writers.submit)
    tasks = (_start(coalescer, store.unit(), [("a", "1"), ("b", "2")], shape="x")
             + _start(coalescer, store.unit(), [("c", "3")], shape="y")
             + _start(coalescer, other.unit(), [("d", "4")], shape="x"))
    await asyncio.sleep(0)
    assert len(writers.queued) == 3
    while writers.queued:
        await writers.run_next()
    assert await _outcomes(tasks) == ["set:1", "set:2", "one:3", "one:4"]


async def test_rows_queued_at_shutdown_fail_as_their_carrier(writers: FakeWriters) -> None:
    store = FakeStore({"a", "b"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2")])
    await asyncio.sleep(0)
    await writers.shutdown()
    outcomes = await _outcomes(tasks)
    assert all(isinstance(outcome, DatabaseClosed) for outcome in outcomes)
    assert store.sets == [] and store.ones == []
    # After the close, a row fails at once.
    late = _start(coalescer, store.unit(), [("a", "3")])
    assert isinstance((await _outcomes(late))[0], DatabaseClosed)


async def test_a_cancelled_caller_waits_for_its_row(writers: FakeWriters) -> None:
    store = FakeStore({"a", "b"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2")])
    await asyncio.sleep(0)
    tasks[0].cancel()
    await asyncio.sleep(0)
    assert not tasks[0].done()  # its row may still be written
    await writers.run_next()
    outcomes = await _outcomes(tasks)
    assert isinstance(outcomes[0], asyncio.CancelledError) and outcomes[1] == "set:2"
    assert store.sets == [[("a", "1"), ("b", "2")]]


async def test_nothing_is_left_behind(writers: FakeWriters) -> None:
    store = FakeStore({"a", "b"})
    coalescer = Coalescer(writers.submit)
    tasks = _start(coalescer, store.unit(), [("a", "1"), ("b", "2")])
    await asyncio.sleep(0)
    await writers.run_next()
    await _outcomes(tasks)
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert coalescer._open == {}  # no batch kept open for rows to come
