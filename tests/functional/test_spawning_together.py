"""Builds saved SPAWNING at the same moment share one statement on PostgreSQL
(cirrus/compute/build_folds.py's ``spawning_together``) and write what each
build's guarded save alone writes; a row whose guard fails gets that save's
exception, and only that row. Elsewhere the save runs alone, as before.

The writers are held busy while the rows queue, so the rows join one batch
whatever the timing (tests/functional/test_active_together.py)."""
from __future__ import annotations

from typing import Any, Awaitable

import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import build_folds
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute.states import TaskState
from tests.functional.test_active_together import _coalescer, _with_writers_busy
from tests.functional.test_build_folds import _spawning

pytestmark = pytest.mark.storage  # on PostgreSQL too (tests/databases.py)

MAPPING = TaskState.BLOCK_DEVICE_MAPPING.value


def _states(conn: sa.Connection, uuid_: str) -> tuple[Any, ...]:
    row = inst.get(conn, uuid_)
    return row["vm_state"], row["task_state"], row["updated_at"]


def _together(cloud: Cloud, uuid_: str) -> Awaitable[dict[str, Any]]:
    return build_folds.spawning_together(cloud.db, uuid_)


async def test_a_build_is_saved_spawning_on_either_database(cloud: Cloud) -> None:
    uuid_, _ = await cloud.db.run(_spawning, MAPPING)
    written = await _together(cloud, uuid_)
    vm_state, task_state, updated_at = await cloud.db.read(_states, uuid_)
    assert (vm_state, task_state) == ("building", "spawning")
    assert written == {"vm_state": "building", "task_state": "spawning",
                       "updated_at": updated_at}


async def test_a_save_whose_guard_fails_raises_on_either_database(cloud: Cloud) -> None:
    uuid_, _ = await cloud.db.run(_spawning, TaskState.DELETING.value)
    with pytest.raises(exc.UnexpectedDeletingTaskStateError):
        await _together(cloud, uuid_)
    assert (await cloud.db.read(_states, uuid_))[:2] == ("building", "deleting")


async def test_builds_saved_together_write_what_each_alone_writes(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)  # PostgreSQL's alone from here on
    made = [(await cloud.db.run(_spawning, MAPPING))[0] for _ in range(10)]
    before = coalescer.sizes[10]
    outcomes = await _with_writers_busy(cloud, lambda: [_together(cloud, u) for u in made])
    assert coalescer.sizes[10] == before + 1  # one batch for the ten…
    # …written by the set statement (one now for all), not row by row after it
    assert len({written["updated_at"] for written in outcomes}) == 1
    for uuid_, written in zip(made, outcomes):
        vm_state, task_state, updated_at = await cloud.db.read(_states, uuid_)
        assert (vm_state, task_state) == ("building", "spawning")
        assert written == {"vm_state": "building", "task_state": "spawning",
                           "updated_at": updated_at}


async def test_a_guard_that_fails_in_a_batch_fails_its_row_alone(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    good = [(await cloud.db.run(_spawning, MAPPING))[0] for _ in range(2)]
    deleting = (await cloud.db.run(_spawning, TaskState.DELETING.value))[0]
    spawning = (await cloud.db.run(_spawning))[0]  # saved already: a repeated save
    gone = (await cloud.db.run(_spawning, MAPPING))[0]
    await cloud.db.run(lambda conn: conn.execute(
        inst.instances.update().where(inst.instances.c.uuid == gone).values(deleted=True)))
    rows = [good[0], deleting, spawning, gone, good[1]]
    before = coalescer.sizes[5]
    outcomes = await _with_writers_busy(cloud, lambda: [_together(cloud, u) for u in rows])
    assert coalescer.sizes[5] == before + 1
    assert [type(outcome) for outcome in outcomes] == [
        dict, exc.UnexpectedDeletingTaskStateError, exc.UnexpectedTaskStateError,
        exc.InstanceNotFound, dict]
    for uuid_ in good:
        assert (await cloud.db.read(_states, uuid_))[:2] == ("building", "spawning")
    assert (await cloud.db.read(_states, deleting))[:2] == ("building", "deleting")
