"""Builds marked ACTIVE at the same moment on PostgreSQL share one statement
(cirrus/compute/build_folds.py's ``mark_active_together``, cirrus/db/coalesce.py)
and write what each build's ``mark_active`` alone writes; a row whose guard
fails raises that row's exception, and only that row's.

The writers are held busy while the rows queue (each blocked in a unit of its
own), so the rows join one batch whatever the timing."""
from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, Callable

import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import build_folds
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute.states import TaskState
from cirrus.db import engine
from cirrus.db.coalesce import Coalescer
from tests.functional.test_build_folds import (ACTIVE, CTX, _closing, _fold_active, _spawning,
                                               _written)

pytestmark = pytest.mark.storage  # PostgreSQL's alone: skipped on SQLite


def _coalescer(cloud: Cloud) -> Coalescer:
    if cloud.db.coalescer is None:
        pytest.skip("coalesced statements are PostgreSQL's")
    return cloud.db.coalescer


async def _with_writers_busy(cloud: Cloud, rows: Callable[[], list[Awaitable[Any]]]
                             ) -> list[Any]:
    """The awaitables of ``rows()`` started while every writer thread waits in
    a unit of its own, then the writers let go; their outcomes."""
    release = threading.Event()
    started: list[int] = []

    def hold(_conn: sa.Connection) -> None:
        started.append(1)
        release.wait(30)

    holders = []
    for count in range(1, engine.PG_WRITERS + 1):
        holders.append(asyncio.ensure_future(cloud.db.run(hold)))
        # One at a time: each writer takes its unit from an otherwise empty queue.
        while len(started) < count:
            await asyncio.sleep(0.001)
    tasks = [asyncio.ensure_future(row) for row in rows()]
    await asyncio.sleep(0)  # every row queued behind the holders
    release.set()
    await asyncio.gather(*holders)
    return await asyncio.gather(*tasks, return_exceptions=True)


def _together(cloud: Cloud, uuid_: str, event_id: int | None) -> Awaitable[dict[str, Any]]:
    closing = _closing(event_id)  # type: ignore[arg-type]
    return build_folds.mark_active_together(cloud.db, uuid_, CTX.request_id, ACTIVE, event_id,
                                            closing.details, closing.steps)


async def test_builds_marked_together_write_what_each_alone_writes(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    alone_uuid, alone_event = await cloud.db.run(_spawning)
    await cloud.db.run(_fold_active, alone_uuid, alone_event)
    alone = await cloud.db.read(_written, alone_uuid)

    made = [await cloud.db.run(_spawning) for _ in range(12)]
    before = coalescer.sizes[12]
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, uuid_, event_id) for uuid_, event_id in made])
    assert coalescer.sizes[12] == before + 1  # one statement for the twelve
    for outcome in outcomes:
        assert isinstance(outcome, dict) and outcome["vm_state"] == "active"
        assert outcome["task_state"] is None and outcome["power_state"] == 1
    for uuid_, _ in made:
        assert await cloud.db.read(_written, uuid_) == alone


async def test_a_guard_that_fails_in_a_batch_fails_its_row_alone(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    good = [await cloud.db.run(_spawning) for _ in range(3)]
    deleting = await cloud.db.run(_spawning, TaskState.DELETING.value)
    mapping = await cloud.db.run(_spawning, TaskState.BLOCK_DEVICE_MAPPING.value)
    gone = await cloud.db.run(_spawning)
    await cloud.db.run(lambda conn: conn.execute(
        inst.instances.update().where(inst.instances.c.uuid == gone[0]).values(deleted=True)))
    rows = [good[0], deleting, good[1], mapping, gone, good[2]]
    before = coalescer.sizes[6]
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, uuid_, event_id) for uuid_, event_id in rows])
    assert coalescer.sizes[6] == before + 1
    assert [type(outcome) for outcome in outcomes] == [
        dict, exc.UnexpectedDeletingTaskStateError, dict, exc.UnexpectedTaskStateError,
        exc.InstanceNotFound, dict]
    for uuid_, _ in good:
        state, event, action = await cloud.db.read(_written, uuid_)
        assert state[0] == "active" and event[0] == "Success" and action == (None, True)
    for (uuid_, _), task_state in ((deleting, "deleting"), (mapping, "block_device_mapping")):
        state, event, action = await cloud.db.read(_written, uuid_)
        assert state[:2] == ("building", task_state)
        assert event == (None, None, None, False) and action == (None, False)


async def test_the_same_build_twice_in_a_batch_is_marked_once(cloud: Cloud) -> None:
    """A row whose uuid is already in the batch runs alone after it: the
    second finds the build ACTIVE already, as it would alone."""
    _coalescer(cloud)
    uuid_, event_id = await cloud.db.run(_spawning)
    other = await cloud.db.run(_spawning)
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, uuid_, event_id), _together(cloud, *other),
        _together(cloud, uuid_, event_id)])
    assert isinstance(outcomes[0], dict) and isinstance(outcomes[1], dict)
    assert isinstance(outcomes[2], exc.UnexpectedTaskStateError)


async def test_a_lone_build_runs_alone(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    uuid_, event_id = await cloud.db.run(_spawning)
    before = coalescer.sizes[1]
    written = await _together(cloud, uuid_, event_id)
    assert written["vm_state"] == "active"
    assert coalescer.sizes[1] == before + 1
    state, _, _ = await cloud.db.read(_written, uuid_)
    assert state[0] == "active"


async def test_a_failing_set_statement_runs_each_row_alone(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error in the set statement (here: a statement the server refuses)
    changed nothing; each row then runs alone and gets its own outcome."""
    _coalescer(cloud)
    good = await cloud.db.run(_spawning)
    deleting = await cloud.db.run(_spawning, TaskState.DELETING.value)
    broken = sa.text("SELECT no_such_column FROM instances")
    monkeypatch.setattr(build_folds, "_mark_active_set_sql", lambda columns: broken)
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, *good), _together(cloud, *deleting)])
    assert isinstance(outcomes[0], dict)
    assert isinstance(outcomes[1], exc.UnexpectedDeletingTaskStateError)
    state, event, action = await cloud.db.read(_written, good[0])
    assert state[0] == "active" and event[0] == "Success" and action == (None, True)
