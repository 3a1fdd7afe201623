"""The build path's units folded into one statement on PostgreSQL
(cirrus/compute/build_folds.py) write what the units of several statements
write (SQLite's, and PostgreSQL's before), and a guard that fails changes
nothing and raises the same exception. On SQLite the slow path is compared
with itself: the folds are PostgreSQL's alone."""
from __future__ import annotations

from typing import Any, Callable

import pytest
import sqlalchemy as sa

from cirrus import claims
from cirrus.bootstrap import Cloud
from cirrus.compute import build_folds
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.build import _mark_active
from cirrus.compute.build_failure import BuildClosing, Started
from cirrus.compute.models import block_device_mappings as bdm
from cirrus.compute.models import instance_actions as act
from cirrus.compute.models import instance_actions_events as ev
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.timeline import BootTimeline
from cirrus.context import RequestContext
from cirrus.db.onestatement import is_one_statement
from tests.functional.test_build_statements import AT, _add

CTX = RequestContext(user_id="u", project_id="p", request_id="req-fold")
HOST = "h1"
ACTIVE = {"vm_state": VmState.ACTIVE, "task_state": None, "power_state": 1, "launched_at": AT}


def _spawning(conn: sa.Connection, task_state: str = TaskState.SPAWNING.value) -> tuple[str, int]:
    """An instance in ``task_state`` with its create action and open build event."""
    uuid_ = _add(conn, host=HOST, task_state=task_state)
    instance_actions.action_start(conn, CTX, uuid_, "create")
    event_id = instance_actions.event_start(conn, CTX, uuid_, "compute__build", host=HOST)
    assert event_id is not None
    return uuid_, event_id


def _closing(event_id: int) -> BuildClosing:
    timeline = BootTimeline()
    return BuildClosing(Started({}, event_id=event_id, timeline=timeline), '{"took": 1}',
                        '[["x", 1, 2, null]]')


def _written(conn: sa.Connection, uuid_: str) -> tuple[Any, ...]:
    """What a closing wrote, times left out (each unit takes its own now)."""
    row = inst.get(conn, uuid_)
    event = conn.execute(sa.select(ev.c.result, ev.c.details, ev.c.steps,
                                   ev.c.finish_time.is_not(None))
                         .join(act, act.c.id == ev.c.action_id)
                         .where(act.c.instance_uuid == uuid_)).one()
    action = conn.execute(sa.select(act.c.message, act.c.finish_time.is_not(None))
                          .where(act.c.instance_uuid == uuid_)).one()
    return ((row["vm_state"], row["task_state"], row["power_state"], row["launched_at"]),
            tuple(event), tuple(action))


def _slow_active(conn: sa.Connection, uuid_: str, event_id: int) -> None:
    _mark_active(conn, CTX, uuid_, ACTIVE, _closing(event_id), HOST)


def _fold_active(conn: sa.Connection, uuid_: str, event_id: int) -> None:
    closing = _closing(event_id)
    build_folds.mark_active(conn, uuid_, CTX.request_id, ACTIVE, event_id, closing.details,
                            closing.steps)


def _ways(cloud: Cloud, slow: Callable[..., Any], fold: Callable[..., Any]
          ) -> list[Callable[..., Any]]:
    return [slow, fold] if cloud.db.is_postgresql else [slow]


async def test_active_closes_the_event_and_the_action_as_the_slow_path(cloud: Cloud) -> None:
    outcomes = []
    for unit in _ways(cloud, _slow_active, _fold_active):
        uuid_, event_id = await cloud.db.run(_spawning)
        await cloud.db.run(unit, uuid_, event_id)
        outcomes.append(await cloud.db.read(_written, uuid_))
    assert outcomes[0] == (("active", None, 1, AT), ("Success", '{"took": 1}',
                                                     '[["x", 1, 2, null]]', True), (None, True))
    assert all(outcome == outcomes[0] for outcome in outcomes)


@pytest.mark.parametrize("task_state, error", [
    (TaskState.DELETING.value, exc.UnexpectedDeletingTaskStateError),
    (TaskState.BLOCK_DEVICE_MAPPING.value, exc.UnexpectedTaskStateError),
])
async def test_active_refused_changes_nothing(cloud: Cloud, task_state: str,
                                              error: type[Exception]) -> None:
    for unit in _ways(cloud, _slow_active, _fold_active):
        uuid_, event_id = await cloud.db.run(_spawning, task_state)
        with pytest.raises(error):
            await cloud.db.run(unit, uuid_, event_id)
        state, event, action = await cloud.db.read(_written, uuid_)
        assert state[:2] == ("building", task_state)
        assert event == (None, None, None, False) and action == (None, False)


async def test_active_of_a_deleted_instance_is_not_found(cloud: Cloud) -> None:
    for unit in _ways(cloud, _slow_active, _fold_active):
        uuid_, event_id = await cloud.db.run(_spawning)
        await cloud.db.run(lambda conn: conn.execute(
            inst.instances.update().where(inst.instances.c.uuid == uuid_).values(deleted=True)))
        with pytest.raises(exc.InstanceNotFound):
            await cloud.db.run(unit, uuid_, event_id)


async def test_active_without_a_build_event_finishes_the_action(cloud: Cloud) -> None:
    """A build whose event could not be opened (no action then) still ends ACTIVE."""
    def unit(conn: sa.Connection, uuid_: str) -> None:
        if conn.dialect.name == "postgresql":
            build_folds.mark_active(conn, uuid_, CTX.request_id, ACTIVE, None, "{}", None)
        else:
            _mark_active(conn, CTX, uuid_, ACTIVE, _closing(None), HOST)  # type: ignore[arg-type]
    uuid_, _ = await cloud.db.run(_spawning)
    await cloud.db.run(unit, uuid_)
    state, event, action = await cloud.db.read(_written, uuid_)
    assert state[0] == "active" and event[3] is False and action == (None, True)


async def test_the_start_reads_every_mapping_in_order(cloud: Cloud) -> None:
    """The folded start returns the instance once and each of its mappings
    (a boot from volume has several), as ``inst.bdms`` reads them."""
    if not cloud.db.is_postgresql:
        pytest.skip("the folded start is PostgreSQL's")
    compute = next(s.endpoint for s in cloud.services if s.binary == "cirrus-compute")
    host = compute.host
    node_id = compute.rt.node_ids[host]

    def setup(conn: sa.Connection) -> str:
        uuid_ = _add(conn, host=host)
        instance_actions.action_start(conn, CTX, uuid_, "create")
        for index in (0, 1, 2):
            conn.execute(bdm.insert().values(
                instance_uuid=uuid_, source_type="volume", destination_type="volume",
                boot_index=index, volume_id=f"vol-{index}", connection_info={"n": index},
                delete_on_termination=False, created_at=AT))
        assert claims.claim(conn, node_id, uuid_, 1, 512, 1)
        return uuid_
    uuid_ = await cloud.db.run(setup)
    found = await cloud.db.run(build_folds.start, uuid_, CTX.request_id, host, node_id,
                               build_folds.build_event("compute__build", host, AT))
    assert found is not None
    instance, event_id, mappings = found
    assert mappings == await cloud.db.read(inst.bdms, uuid_)
    assert [m["volume_id"] for m in mappings] == ["vol-0", "vol-1", "vol-2"]
    assert (instance.pop("claim_vcpus"), instance.pop("claim_memory_mb"),
            instance.pop("claim_disk_gb")) == (1, 512, 1)
    assert instance == await cloud.db.read(inst.get, uuid_)
    assert event_id is not None
    # A second delivery: nothing matches, nothing is written.
    again = await cloud.db.run(build_folds.start, uuid_, CTX.request_id, host, node_id,
                               build_folds.build_event("compute__build", host, AT))
    assert again is None
    events = await cloud.db.read(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(ev)).scalar_one())
    assert events == 1


def test_a_fold_is_declared_one_statement() -> None:
    assert all(is_one_statement(fn) for fn in (build_folds.mark_active, build_folds.record_host,
                                                build_folds.start))

