"""The build path's cheaper statements give what the slower ones gave, on both
databases: the instance row read on the cursor, a save that returns the row,
an event inserted under its action in one statement, an event closed only
while open, the conductor's waiting check for one instance and for several.
"""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.models import instance_actions_events as ev
from cirrus.compute.models import instances
from cirrus.compute.states import TaskState, VmState
from cirrus.conductor.manager import _waiting_for_host
from cirrus.context import RequestContext

AT = dt.datetime(2026, 1, 2, 3, 4, 5, 678901)


def _add(conn: sa.Connection, **values: Any) -> str:
    row = {"uuid": str(uuid.uuid4()), "project_id": "p", "user_id": "u", "display_name": "vm",
           "hostname": "vm", "reservation_id": "r-1", "image_ref": "img", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
           "flavor": {"name": "m1.tiny", "extra_specs": {"hw:x": "1"}, "rxtx_factor": 1.0},
           "vm_state": VmState.BUILDING.value, "task_state": TaskState.SCHEDULING.value,
           "power_state": 0, "metadata": {"k": "v"}, "system_metadata": {},
           "security_groups": ["default"], "requested_networks": None, "config_drive": True,
           "locked": False, "created_at": AT, "deleted": False}
    row.update(values)
    conn.execute(instances.insert().values(row))
    return row["uuid"]


def _core_get(conn: sa.Connection, uuid_: str) -> dict[str, Any]:
    return dict(conn.execute(sa.select(instances).where(instances.c.uuid == uuid_))
                .mappings().one())


def _types(row: dict[str, Any]) -> dict[str, type]:
    return {k: type(v) for k, v in row.items()}


async def test_get_reads_what_core_reads(cloud: Cloud) -> None:
    def both(conn: sa.Connection) -> tuple[Any, ...]:
        live, gone = _add(conn), _add(conn, deleted=True, deleted_at=AT)
        with pytest.raises(exc.InstanceNotFound):
            inst.get(conn, gone)
        return (inst.get(conn, live), _core_get(conn, live),
                inst.get(conn, gone, read_deleted=True), _core_get(conn, gone))
    got, want, got_gone, want_gone = await cloud.db.run(both)
    assert got == want and _types(got) == _types(want) and list(got) == list(want)
    assert got_gone == want_gone and _types(got_gone) == _types(want_gone)


async def test_save_and_get_is_a_save_then_a_get(cloud: Cloud) -> None:
    def run(conn: sa.Connection) -> tuple[Any, Any]:
        uuid_ = _add(conn, host="h1")
        got = inst.save_and_get(conn, uuid_, {"task_state": None, "progress": 5},
                                expected_task_state=[TaskState.SCHEDULING],
                                expected_vm_state=[VmState.BUILDING], expected_host="h1")
        return got, inst.get(conn, uuid_)
    got, after = await cloud.db.run(run)
    assert got == after and _types(got) == _types(after)
    assert got["task_state"] is None and got["progress"] == 5 and got["config_drive"] is True


async def test_save_and_get_refuses_as_save_does(cloud: Cloud) -> None:
    def refused(conn: sa.Connection, **values: Any) -> type[Exception]:
        uuid_ = _add(conn, **values)
        errors = []
        for save in (inst.save, inst.save_and_get):
            try:
                save(conn, uuid_, {"task_state": None}, expected_task_state=[TaskState.SPAWNING])
            except exc.CirrusException as error:
                errors.append(type(error))
        assert len(errors) == 2 and errors[0] is errors[1]
        return errors[0]
    db = cloud.db
    assert await db.run(refused) is exc.UnexpectedTaskStateError
    assert await db.run(refused, task_state=TaskState.DELETING.value) is \
        exc.UnexpectedDeletingTaskStateError
    assert await db.run(refused, deleted=True) is exc.InstanceNotFound


async def test_event_goes_under_the_requests_latest_action_or_nowhere(cloud: Cloud) -> None:
    ctx, other = RequestContext(user_id="u", project_id="p"), RequestContext()

    def run(conn: sa.Connection) -> tuple[Any, ...]:
        uuid_ = _add(conn)
        instance_actions.action_start(conn, ctx, uuid_, "create")
        latest = instance_actions.action_start(conn, ctx, uuid_, "create")
        event_id = instance_actions.event_start(conn, ctx, uuid_, "compute_x", host="h1")
        none = instance_actions.event_start(conn, other, uuid_, "compute_x")
        instance_actions.record_event(conn, other, uuid_, "conductor_x")
        rows = conn.execute(sa.select(ev.c.id, ev.c.action_id, ev.c.event, ev.c.host,
                                      ev.c.start_time, ev.c.finish_time)).all()
        return latest, event_id, none, rows
    latest, event_id, none, rows = await cloud.db.run(run)
    assert none is None and len(rows) == 1
    assert rows[0][:4] == (event_id, latest, "compute_x", "h1")
    assert isinstance(rows[0][4], dt.datetime) and rows[0][5] is None


async def test_finishing_if_open_keeps_a_finished_events_outcome(cloud: Cloud) -> None:
    ctx = RequestContext()

    def run(conn: sa.Connection) -> tuple[Any, ...]:
        uuid_ = _add(conn)
        instance_actions.action_start(conn, ctx, uuid_, "create")
        first = instance_actions.event_start(conn, ctx, uuid_, "a")
        second = instance_actions.event_start(conn, ctx, uuid_, "b")
        instance_actions.event_finish(conn, first, exc=RuntimeError("timed out"))
        instance_actions.event_finish(conn, first, if_open=True)
        instance_actions.event_finish(conn, second, if_open=True)
        return tuple(conn.execute(sa.select(ev.c.result).order_by(ev.c.id)).scalars())
    assert await cloud.db.run(run) == ("Error", "Success")


async def test_an_events_timestamps_are_one_utcnow(cloud: Cloud) -> None:
    ctx = RequestContext()

    def run(conn: sa.Connection) -> tuple[Any, ...]:
        uuid_ = _add(conn)
        instance_actions.action_start(conn, ctx, uuid_, "create")
        instance_actions.record_event(conn, ctx, uuid_, "conductor_x", details={"hosts": 1})
        started = instance_actions.event_start(conn, ctx, uuid_, "compute_x")
        instance_actions.event_finish(conn, started, exc=RuntimeError("no"), if_open=True)
        return tuple(conn.execute(sa.select(ev.c.start_time, ev.c.created_at, ev.c.finish_time,
                                            ev.c.updated_at, ev.c.result, ev.c.details)
                                  .order_by(ev.c.id)).all())
    recorded, finished = await cloud.db.run(run)
    assert len(set(recorded[:4])) == 1 and isinstance(recorded[0], dt.datetime)
    assert recorded[4:] == ("Success", '{"hosts": 1}')
    assert finished[0] == finished[1] and finished[2] == finished[3] and finished[4] == "Error"
    assert finished[0] <= finished[2]


async def test_waiting_for_host_of_one_and_of_several(cloud: Cloud) -> None:
    def run(conn: sa.Connection) -> tuple[Any, ...]:
        waiting = [_add(conn), _add(conn)]
        placed = _add(conn, host="h1")
        started = _add(conn, task_state=None)
        gone = _add(conn, deleted=True)
        ones = [_waiting_for_host(conn, [u]) for u in (*waiting, placed, started, gone)]
        return waiting, ones, _waiting_for_host(conn, [placed, waiting[1], gone, waiting[0]])
    waiting, ones, several = await cloud.db.run(run)
    assert ones == [[waiting[0]], [waiting[1]], [], [], []]
    assert several == [waiting[1], waiting[0]]


async def test_record_host_records_its_event_only_with_the_host(cloud: Cloud) -> None:
    """The conductor's one write: the guarded save and the schedule event; a
    save that finds the instance placed already (another delivery) or gone
    records no event."""
    conductor = next(s.endpoint for s in cloud.services if s.binary == "cirrus-conductor")
    ctx = RequestContext(user_id="u", project_id="p")
    dest = {"host": "h9", "nodename": "h9", "node_id": 0, "availability_zone": "az9"}

    def run(conn: sa.Connection) -> tuple[Any, ...]:
        waiting, placed, gone = _add(conn), _add(conn, host="h1"), _add(conn, deleted=True)
        for uuid_ in (waiting, placed, gone):
            instance_actions.action_start(conn, ctx, uuid_, "create")
        outcomes = [conductor._record_host(conn, ctx, u, dest, '{"x": 1}', AT)
                    for u in (waiting, placed, gone)]
        events = conn.execute(sa.select(ev.c.event, ev.c.details, ev.c.start_time, ev.c.result)
                              .join(instance_actions.act, instance_actions.act.c.id == ev.c.action_id)
                              .order_by(ev.c.id)).all()
        row = inst.get(conn, waiting)
        return outcomes, [tuple(e) for e in events], row
    outcomes, events, row = await cloud.db.run(run)
    assert outcomes == [True, False, False]
    assert events == [("conductor_schedule_and_build_instances", '{"x": 1}', AT, "Success")]
    assert (row["host"], row["node"], row["launched_on"], row["availability_zone"]) == \
        ("h9", "h9", "h9", "az9")
