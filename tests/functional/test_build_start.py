"""The build's first transaction (``Builder._start``): the claim and late
group checks, then one guarded save out of SCHEDULING, the build event and the
block device mappings; and the instance the driver is handed to spawn.
"""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.build import BUILD_EVENT, Started
from cirrus.compute.models import (instance_actions_events, instance_group_members,
                                   instance_groups, instances)
from cirrus.compute.states import TaskState, VmState
from cirrus.context import RequestContext
from cirrus import claims
from tests.functional.servers import (create_server, fake_drivers, server_body, upload_image,
                                      wait_for_status)

HOST = "compute1"
CTX = RequestContext(user_id="u", project_id="p", request_id="req-start")


def _manager(cloud: Cloud) -> Any:
    return next(s.endpoint for s in cloud.services
                if s.binary == "cirrus-compute" and s.host == HOST)


def _instance(conn: sa.Connection, host: str | None = HOST,
              task_state: str = TaskState.SCHEDULING.value) -> str:
    """An instance the conductor placed on ``host``, with its create action."""
    uuid_ = str(uuid.uuid4())
    conn.execute(instances.insert().values(
        uuid=uuid_, project_id="p", user_id="u", display_name="vm", hostname="vm",
        reservation_id="r-1", image_ref="img", vcpus=1, memory_mb=512, root_gb=1,
        flavor={"name": "m1.tiny"}, vm_state=VmState.BUILDING.value, task_state=task_state,
        power_state=0, metadata={}, system_metadata={}, security_groups=[],
        config_drive=False, locked=False, host=host, node=host,
        created_at=dt.datetime(2026, 1, 1), deleted=False))
    instance_actions.action_start(conn, CTX, uuid_, "create")
    return uuid_


def _in_group(conn: sa.Connection, policy: str, *uuids: str) -> None:
    group = str(uuid.uuid4())
    conn.execute(instance_groups.insert().values(uuid=group, name="g", policy=policy, rules={},
                                                 project_id="p", user_id="u",
                                                 created_at=dt.datetime(2026, 1, 1)))
    for uuid_ in uuids:
        conn.execute(instance_group_members.insert().values(group_uuid=group,
                                                            instance_uuid=uuid_))


def _claimed(cloud: Cloud, conn: sa.Connection, uuid_: str) -> None:
    node_id = _manager(cloud).rt.node_ids[HOST]
    assert claims.claim(conn, node_id, uuid_, 1, 512, 1)


async def _start(cloud: Cloud, uuid_: str, in_group: bool = False) -> Started:
    return await _manager(cloud).builder._start_units(CTX, uuid_, HOST, in_group)


def _state_and_events(conn: sa.Connection, uuid_: str) -> tuple[tuple[str, str | None], list]:
    row = inst.get(conn, uuid_)
    ev = instance_actions_events
    events = conn.execute(sa.select(ev.c.event, ev.c.host, ev.c.finish_time)).all()
    return (row["vm_state"], row["task_state"]), [tuple(e) for e in events]


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_a_claimed_instance_starts_in_block_device_mapping(cloud: Cloud) -> None:
    def setup(conn: sa.Connection) -> str:
        uuid_ = _instance(conn)
        _claimed(cloud, conn, uuid_)
        return uuid_
    uuid_ = await cloud.db.run(setup)
    started = await _start(cloud, uuid_)
    assert started.error is None and started.claim is not None
    assert started.instance["task_state"] == TaskState.BLOCK_DEVICE_MAPPING.value
    state, events = await cloud.db.read(_state_and_events, uuid_)
    assert state == ("building", "block_device_mapping")
    assert events == [(BUILD_EVENT, HOST, None)]  # opened, not finished
    # Checked by the save itself (one round trip on PostgreSQL), it gives what
    # the checks one by one gave: the claim, the row, the event, the mappings.
    assert started.claim == await cloud.db.read(claims.of, uuid_)
    assert started.instance == await cloud.db.read(inst.get, uuid_)
    assert started.bdms == await cloud.db.read(inst.bdms, uuid_)
    event_ids = await cloud.db.read(lambda conn: conn.execute(
        sa.select(instance_actions_events.c.id)).scalars().all())
    assert event_ids == [started.event_id]


@pytest.mark.parametrize("settings_overrides", [{"computes": 2}])
async def test_a_claim_on_another_node_starts_with_no_task_to_reschedule(cloud: Cloud) -> None:
    """The save guarded by the claim matches nothing when the claim is on
    another node; the checks one by one then say why, under one event."""
    other = next(s.endpoint for s in cloud.services
                 if s.binary == "cirrus-compute" and s.host != HOST)

    def setup(conn: sa.Connection) -> str:
        uuid_ = _instance(conn)
        assert claims.claim(conn, other.rt.node_ids[other.host], uuid_, 1, 512, 1)
        return uuid_
    uuid_ = await cloud.db.run(setup)
    started = await _start(cloud, uuid_)
    assert isinstance(started.error, exc.ComputeResourcesUnavailable)
    state, events = await cloud.db.read(_state_and_events, uuid_)
    assert state == ("building", None)
    assert events == [(BUILD_EVENT, HOST, None)]


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_an_instance_without_a_claim_starts_with_no_task_to_reschedule(cloud: Cloud) -> None:
    uuid_ = await cloud.db.run(_instance)
    started = await _start(cloud, uuid_)
    assert isinstance(started.error, exc.ComputeResourcesUnavailable)
    state, events = await cloud.db.read(_state_and_events, uuid_)
    assert state == ("building", None)
    assert events == [(BUILD_EVENT, HOST, None)]  # the failure is recorded on it later


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_the_guard_refuses_before_any_check_counts(cloud: Cloud) -> None:
    """A repeated build request for an instance already started (and without
    the claim any more) is refused by the guarded save, changing nothing."""
    uuid_ = await cloud.db.run(_instance, HOST, TaskState.SPAWNING.value)
    with pytest.raises(exc.UnexpectedTaskStateError):
        await _start(cloud, uuid_)
    state, events = await cloud.db.read(_state_and_events, uuid_)
    assert state == ("building", "spawning") and events == []


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_the_late_group_check_runs_for_a_request_in_a_group(cloud: Cloud) -> None:
    """Another member of the anti-affinity group landed on this host meanwhile:
    the start reschedules. The check belongs to requests the API placed in a
    group (the request spec says so); for others there is no group to read."""
    def setup(conn: sa.Connection) -> str:
        uuid_ = _instance(conn)
        _in_group(conn, "anti-affinity", uuid_, _instance(conn, task_state=TaskState.SPAWNING.value))
        _claimed(cloud, conn, uuid_)
        return uuid_
    uuid_ = await cloud.db.run(setup)
    started = await _start(cloud, uuid_, in_group=True)
    assert isinstance(started.error, exc.RescheduledException)
    assert "Anti-affinity" in started.error.format_message()
    state, _ = await cloud.db.read(_state_and_events, uuid_)
    assert state == ("building", None)


async def test_the_driver_spawns_the_instance_in_spawning(cloud: Cloud,
                                                          demo: httpx.AsyncClient) -> None:
    """The instance handed to spawn is the row as the SPAWNING save left it
    (kept from the start's read and the values saved, not read back)."""
    seen: list[dict[str, Any]] = []

    class Record:
        times = None
        hang = False
        error = None

        def matches(self, host: str, instance: dict[str, Any]) -> bool:
            seen.append(dict(instance))
            return False
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(Record())  # type: ignore[arg-type]
    created = await create_server(demo, server_body(await upload_image(demo)))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert len(seen) == 1
    spawned = seen[0]
    stored = await cloud.db.read(inst.get, created["id"])
    assert (spawned["vm_state"], spawned["task_state"]) == ("building", "spawning")
    assert spawned["host"] == stored["host"] and spawned["node"] == stored["node"]
    assert spawned["updated_at"] < stored["updated_at"]  # ACTIVE was saved after it
    assert {k: v for k, v in spawned.items() if k not in ("vm_state", "task_state", "updated_at",
                                                          "power_state", "launched_at")} == \
        {k: v for k, v in stored.items() if k not in ("vm_state", "task_state", "updated_at",
                                                      "power_state", "launched_at")}
