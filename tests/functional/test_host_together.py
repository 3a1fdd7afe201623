"""Instances placed at the same moment on PostgreSQL share one statement
(cirrus/compute/build_folds.py's ``record_host_together``, the conductor's
placement; cirrus/db/coalesce.py) and write what each ``record_host`` alone
writes: the host and the scheduling event; an instance that no longer waits
for a host gets False with nothing of it written, and only that one.

The writers are held busy while the rows queue, so the rows join one batch
whatever the timing."""
from __future__ import annotations

import datetime as dt
from typing import Any, Awaitable

import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import build_folds
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.models import instance_actions as act
from cirrus.compute.models import instance_actions_events as ev
from cirrus.compute.states import TaskState
from tests.functional.test_active_together import _coalescer, _with_writers_busy
from tests.functional.test_build_folds import CTX
from tests.functional.test_build_statements import AT, _add

pytestmark = pytest.mark.storage  # PostgreSQL's alone: skipped on SQLite

SCHEDULED = dt.datetime(2026, 1, 2, 3, 4, 6)


def _waiting(*, action: bool = True, **values: Any) -> Any:
    """A unit making an instance that waits for a host (and its action)."""
    def setup(conn: sa.Connection) -> str:
        uuid_ = _add(conn, **values)
        if action:
            instance_actions.action_start(conn, CTX, uuid_, "create")
        return uuid_
    return setup


def _values(host: str, zone: bool = True) -> dict[str, Any]:
    return {"host": host, "node": f"{host}-node", "launched_on": host, "scheduled_at": SCHEDULED,
            **({"availability_zone": "az1"} if zone else {})}


def _event(details: str = '{"hosts": 3}') -> dict[str, Any]:
    event = instance_actions.finished_event("conductor_schedule_and_build_instances",
                                            host="conductor", details=details, start=AT)
    return event


def _together(cloud: Cloud, uuid_: str, host: str, zone: bool = True) -> Awaitable[bool]:
    return build_folds.record_host_together(cloud.db, uuid_, CTX.request_id, _values(host, zone),
                                            _event())


def _written(conn: sa.Connection, uuid_: str) -> tuple[Any, ...]:
    """What a placement wrote, the event's own times left out."""
    row = inst.get(conn, uuid_, read_deleted=True)
    events = [tuple(r) for r in conn.execute(
        sa.select(ev.c.event, ev.c.host, ev.c.details, ev.c.result, ev.c.start_time,
                  ev.c.finish_time.is_not(None))
        .join(act, act.c.id == ev.c.action_id).where(act.c.instance_uuid == uuid_))]
    return ((row["host"], row["node"], row["launched_on"], row["availability_zone"],
             row["scheduled_at"], row["task_state"], row["updated_at"] is not None), events)


async def _alone(cloud: Cloud, uuid_: str, host: str, zone: bool = True) -> bool:
    return bool(await cloud.db.run(build_folds.record_host, uuid_, CTX.request_id,
                                   _values(host, zone), _event()))


async def test_instances_placed_together_write_what_each_alone_writes(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    alone = await cloud.db.run(_waiting())
    assert await _alone(cloud, alone, "h1")
    expected = await cloud.db.read(_written, alone)
    assert expected[0][0] == "h1" and len(expected[1]) == 1

    made = [await cloud.db.run(_waiting()) for _ in range(10)]
    before = coalescer.sizes[10]
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, uuid_, "h1") for uuid_ in made])
    assert coalescer.sizes[10] == before + 1  # one statement for the ten
    assert outcomes == [True] * 10
    for uuid_ in made:
        assert await cloud.db.read(_written, uuid_) == expected


async def test_each_row_gets_its_own_host(cloud: Cloud) -> None:
    _coalescer(cloud)
    made = [await cloud.db.run(_waiting()) for _ in range(3)]
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, uuid_, f"h{index}") for index, uuid_ in enumerate(made)])
    assert outcomes == [True] * 3
    for index, uuid_ in enumerate(made):
        written = await cloud.db.read(_written, uuid_)
        assert written[0][:3] == (f"h{index}", f"h{index}-node", f"h{index}")


async def test_an_instance_no_longer_waiting_writes_nothing_of_its_row(cloud: Cloud) -> None:
    coalescer = _coalescer(cloud)
    good = [await cloud.db.run(_waiting()) for _ in range(3)]
    refused = [
        await cloud.db.run(_waiting(host="placed-already")),
        await cloud.db.run(_waiting(task_state=TaskState.DELETING.value)),
        await cloud.db.run(_waiting(deleted=True)),
        await cloud.db.run(_waiting(vm_state="error")),
    ]
    rows = [good[0], *refused[:2], good[1], *refused[2:], good[2]]
    before_refused = [await cloud.db.read(_written, uuid_) for uuid_ in refused]
    before = coalescer.sizes[len(rows)]
    outcomes = await _with_writers_busy(
        cloud, lambda: [_together(cloud, uuid_, "h1") for uuid_ in rows])
    assert coalescer.sizes[len(rows)] == before + 1
    assert dict(zip(rows, outcomes)) == {**{u: True for u in good}, **{u: False for u in refused}}
    for uuid_ in good:
        assert (await cloud.db.read(_written, uuid_))[0][0] == "h1"
    assert [await cloud.db.read(_written, uuid_) for uuid_ in refused] == before_refused
    assert all(not written[1] for written in before_refused)


async def test_an_instance_without_an_action_is_placed_without_an_event(cloud: Cloud) -> None:
    _coalescer(cloud)
    bare = await cloud.db.run(_waiting(action=False))
    other = await cloud.db.run(_waiting())
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, bare, "h1"), _together(cloud, other, "h1")])
    assert outcomes == [True, True]
    assert (await cloud.db.read(_written, bare))[0][0] == "h1"
    assert len((await cloud.db.read(_written, other))[1]) == 1


async def test_shapes_apart_and_a_twice_placed_instance(cloud: Cloud) -> None:
    """Rows without a zone go in a statement of their own shape; a uuid
    already in the batch runs alone after it and finds it placed."""
    _coalescer(cloud)
    zoned, plain = await cloud.db.run(_waiting()), await cloud.db.run(_waiting())
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, zoned, "h1"), _together(cloud, plain, "h2", zone=False),
        _together(cloud, zoned, "h3")])
    assert outcomes == [True, True, False]
    assert (await cloud.db.read(_written, zoned))[0][:4] == ("h1", "h1-node", "h1", "az1")
    assert (await cloud.db.read(_written, plain))[0][:4] == ("h2", "h2-node", "h2", None)


async def test_a_failing_set_statement_places_each_row_alone(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    _coalescer(cloud)
    good = await cloud.db.run(_waiting())
    placed = await cloud.db.run(_waiting(host="placed-already"))
    broken = sa.text("SELECT no_such_column FROM instances")
    monkeypatch.setattr(build_folds, "_record_host_set_sql", lambda *shape: broken)
    outcomes = await _with_writers_busy(cloud, lambda: [
        _together(cloud, good, "h1"), _together(cloud, placed, "h1")])
    assert outcomes == [True, False]
    assert len((await cloud.db.read(_written, good))[1]) == 1
    assert (await cloud.db.read(_written, placed))[1] == []
