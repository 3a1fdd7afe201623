"""Builds started at the same moment on PostgreSQL share one statement
(cirrus/compute/build_folds.py's ``start_together``, cirrus/db/coalesce.py)
and get what each build's ``start`` alone gets: the instance with its claim's
amounts, its build event, its mappings; a row whose save matches nothing
gets None with nothing of it written, and only that row.

The writers are held busy while the rows queue (each blocked in a unit of its
own), so the rows join one batch whatever the timing."""
from __future__ import annotations

from typing import Any, Awaitable

import pytest
import sqlalchemy as sa

from cirrus import claims
from cirrus.bootstrap import Cloud
from cirrus.compute import build_folds
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.models import block_device_mappings as bdm
from cirrus.compute.models import instance_actions as act
from cirrus.compute.models import instance_actions_events as ev
from cirrus.compute.states import TaskState
from tests.functional.test_active_together import _coalescer, _with_writers_busy
from tests.functional.test_build_folds import CTX
from tests.functional.test_build_statements import AT, _add

pytestmark = pytest.mark.storage  # PostgreSQL's alone: skipped on SQLite


def _compute(cloud: Cloud) -> tuple[str, int]:
    compute = next(s.endpoint for s in cloud.services if s.binary == "cirrus-compute")
    return compute.host, compute.rt.node_ids[compute.host]


def _placed(host: str, node_id: int, *, mappings: int = 0, action: bool = True,
            claimed: bool = True, **values: Any) -> Any:
    """A unit making an instance the conductor placed on ``host`` (its
    action, its claim on ``node_id``, ``mappings`` block device mappings)."""
    def setup(conn: sa.Connection) -> str:
        uuid_ = _add(conn, host=host, **values)
        if action:
            instance_actions.action_start(conn, CTX, uuid_, "create")
        for index in range(mappings):
            conn.execute(bdm.insert().values(
                instance_uuid=uuid_, source_type="volume", destination_type="volume",
                boot_index=index, volume_id=f"vol-{index}", connection_info={"n": index},
                delete_on_termination=False, created_at=AT))
        if claimed:
            assert claims.claim(conn, node_id, uuid_, 1, 512, 1)
        return uuid_
    return setup


def _together(cloud: Cloud, uuid_: str, host: str, node_id: int
              ) -> Awaitable[build_folds.Found | None]:
    return build_folds.start_together(cloud.db, uuid_, CTX.request_id, host, node_id,
                                      build_folds.build_event("compute__build", host, AT))


def _events(conn: sa.Connection, uuid_: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(
        sa.select(ev.c.id, ev.c.event, ev.c.host, ev.c.start_time, ev.c.finish_time)
        .join(act, act.c.id == ev.c.action_id).where(act.c.instance_uuid == uuid_))]


async def _check_started(cloud: Cloud, uuid_: str, found: Any, host: str,
                         mappings: int) -> None:
    """``found`` is what ``start`` returns for ``uuid_``, and was written."""
    assert found is not None
    instance, event_id, read = found
    assert (instance.pop("claim_vcpus"), instance.pop("claim_memory_mb"),
            instance.pop("claim_disk_gb")) == (1, 512, 1)
    assert instance == await cloud.db.read(inst.get, uuid_)
    assert instance["task_state"] == TaskState.BLOCK_DEVICE_MAPPING.value
    assert read == await cloud.db.read(inst.bdms, uuid_)
    assert [m["volume_id"] for m in read] == [f"vol-{i}" for i in range(mappings)]
    assert await cloud.db.read(_events, uuid_) == [(event_id, "compute__build", host, AT, None)]


async def test_builds_started_together_get_what_each_alone_gets(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    host, node_id = _compute(cloud)
    counts = [0, 2, 0, 1, 0, 3, 0, 0]
    made = [await cloud.db.run(_placed(host, node_id, mappings=n)) for n in counts]
    before = coalescer.sizes[len(made)]
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, uuid_, host, node_id) for uuid_ in made])
    assert coalescer.sizes[len(made)] == before + 1  # one statement for the eight
    for uuid_, found, count in zip(made, outcomes, counts):
        await _check_started(cloud, uuid_, found, host, count)

    # The same as start alone (itself checked against the slow path's reads
    # in test_build_folds): a lone row runs start's own statement.
    lone = await cloud.db.run(_placed(host, node_id, mappings=2))
    before_lone = coalescer.sizes[1]
    await _check_started(cloud, lone, await _together(cloud, lone, host, node_id), host, 2)
    assert coalescer.sizes[1] == before_lone + 1


async def test_a_build_without_an_action_starts_without_an_event(cloud: Cloud) -> None:
    _coalescer(cloud)
    host, node_id = _compute(cloud)
    bare = await cloud.db.run(_placed(host, node_id, action=False))
    other = await cloud.db.run(_placed(host, node_id))
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, bare, host, node_id),
                        _together(cloud, other, host, node_id)])
    assert outcomes[0] is not None and outcomes[0][1] is None  # no event id
    assert (await cloud.db.read(inst.get, bare))["task_state"] == "block_device_mapping"
    await _check_started(cloud, other, outcomes[1], host, 0)


async def test_a_save_that_matches_nothing_in_a_batch_writes_nothing_of_its_row(
        cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    host, node_id = _compute(cloud)
    good = [await cloud.db.run(_placed(host, node_id)) for _ in range(3)]
    refused = [
        await cloud.db.run(_placed(host, node_id, task_state=TaskState.DELETING.value)),
        await cloud.db.run(_placed("elsewhere", node_id)),  # placed on another host
        await cloud.db.run(_placed(host, node_id, claimed=False)),  # no claim here
        await cloud.db.run(_placed(host, node_id, deleted=True)),
        await cloud.db.run(_placed(host, node_id, task_state=TaskState.SPAWNING.value)),
    ]
    rows = [good[0], *refused[:3], good[1], *refused[3:], good[2]]
    before = coalescer.sizes[len(rows)]
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, uuid_, host, node_id) for uuid_ in rows])
    assert coalescer.sizes[len(rows)] == before + 1
    by_uuid = dict(zip(rows, outcomes))
    for uuid_ in good:
        await _check_started(cloud, uuid_, by_uuid[uuid_], host, 0)
    for uuid_ in refused:
        assert by_uuid[uuid_] is None
        assert await cloud.db.read(_events, uuid_) == []
        row = await cloud.db.read(lambda conn, u=uuid_: conn.execute(
            sa.select(inst.instances.c.task_state, inst.instances.c.updated_at)
            .where(inst.instances.c.uuid == u)).one())
        assert row[0] != TaskState.BLOCK_DEVICE_MAPPING.value and row[1] is None


async def test_the_same_build_twice_in_a_batch_is_started_once(cloud: Cloud) -> None:
    """A row whose uuid is already in the batch runs alone after it: the
    second delivery finds the build started, as it would alone."""
    _coalescer(cloud)
    host, node_id = _compute(cloud)
    uuid_ = await cloud.db.run(_placed(host, node_id))
    other = await cloud.db.run(_placed(host, node_id))
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, uuid_, host, node_id), _together(cloud, other, host, node_id),
        _together(cloud, uuid_, host, node_id)])
    await _check_started(cloud, uuid_, outcomes[0], host, 0)
    await _check_started(cloud, other, outcomes[1], host, 0)
    assert outcomes[2] is None


async def test_a_failing_set_statement_starts_each_row_alone(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error in the set statement (here: a statement the server refuses)
    changed nothing; each row then runs alone and gets its own outcome."""
    _coalescer(cloud)
    host, node_id = _compute(cloud)
    good = await cloud.db.run(_placed(host, node_id, mappings=1))
    deleting = await cloud.db.run(_placed(host, node_id, task_state=TaskState.DELETING.value))
    broken = sa.text("SELECT no_such_column FROM instances")
    monkeypatch.setattr(build_folds, "_start_set_sql", lambda columns: broken)
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, good, host, node_id), _together(cloud, deleting, host, node_id)])
    await _check_started(cloud, good, outcomes[0], host, 1)
    assert outcomes[1] is None and await cloud.db.read(_events, deleting) == []


def test_the_row_alone_is_one_statement() -> None:
    from cirrus.db.onestatement import is_one_statement
    assert is_one_statement(build_folds._start_one)
