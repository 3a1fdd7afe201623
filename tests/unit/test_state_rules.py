"""Rules of the guest-state actions (issue #19) as tables: Nova's status of
each new state, which states each action accepts (its transition), who holds
a lock, the ``locked`` filter's words, and the fake driver's power states."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.api import _begin
from cirrus.compute.queries import STATUS_FILTERS
from cirrus.compute.state_api import is_expected_locked_by
from cirrus.compute.states import PowerState, TaskState, VmState, status_of
from cirrus.compute.transitions import TRANSITIONS
from cirrus.context import RequestContext
from cirrus.db import migrate
from cirrus.db.engine import make_engine
from cirrus.virt import exception as vexc
from cirrus.virt.driver import ComputeDriver
from cirrus.virt.fake import FakeDriver
from tests.unit.test_compute_rules import insert_instance


@pytest.mark.parametrize("vm_state,task_state,status", [
    (VmState.PAUSED, None, "PAUSED"),
    (VmState.SUSPENDED, None, "SUSPENDED"),
    (VmState.RESCUED, None, "RESCUE"),
    (VmState.RESCUED, TaskState.UNRESCUING, "RESCUE"),
    (VmState.SOFT_DELETED, None, "SOFT_DELETED"),
    (VmState.ACTIVE, TaskState.UPDATING_PASSWORD, "PASSWORD"),
    (VmState.ACTIVE, TaskState.PAUSING, "ACTIVE"),
    (VmState.ACTIVE, TaskState.SUSPENDING, "ACTIVE"),
    (VmState.ACTIVE, TaskState.RESCUING, "ACTIVE"),
    (VmState.ACTIVE, TaskState.SOFT_DELETING, "ACTIVE"),
    (VmState.SOFT_DELETED, TaskState.RESTORING, "SOFT_DELETED"),
])
def test_status_of_the_new_states(vm_state: VmState, task_state: TaskState | None,
                                  status: str) -> None:
    assert status_of(vm_state, task_state) == status


@pytest.mark.parametrize("status", ["RESCUE", "SOFT_DELETED", "PASSWORD", "PAUSED", "SUSPENDED"])
def test_every_new_status_can_be_listed_by(status: str) -> None:
    vm_states, task_states = STATUS_FILTERS[status]
    task_state = task_states[0] if task_states else None
    assert status_of(vm_states[0], task_state) == status


# Nova's check_instance_state of each action: (action, vm_states, task state set)
ACCEPTED = [
    ("pause", {"active"}, TaskState.PAUSING),
    ("unpause", {"paused"}, TaskState.UNPAUSING),
    ("suspend", {"active"}, TaskState.SUSPENDING),
    ("resume", {"suspended"}, TaskState.RESUMING),
    ("rescue", {"active", "stopped", "error"}, TaskState.RESCUING),
    ("unrescue", {"rescued"}, TaskState.UNRESCUING),
    ("changePassword", {"active"}, TaskState.UPDATING_PASSWORD),
    ("restore", {"soft-delete"}, TaskState.RESTORING),
]


@pytest.mark.parametrize("name,vm_states,task_state", ACCEPTED)
def test_transitions_are_novas(name: str, vm_states: set[str], task_state: TaskState) -> None:
    t = TRANSITIONS[name]
    assert {v.value for v in t.vm_states} == vm_states
    assert t.task_state is task_state and t.task_states == (None,)
    assert t.action == name


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> sa.Engine:
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'state.db'}"
    migrate.upgrade(url)
    return make_engine(url)


CTX = RequestContext(user_id="u", project_id="p1", roles=["member"])


@pytest.mark.parametrize("name,vm_states,task_state", ACCEPTED)
@pytest.mark.parametrize("vm_state", [v.value for v in VmState if v is not VmState.DELETED])
def test_begin_accepts_exactly_its_states(engine: sa.Engine, name: str, vm_states: set[str],
                                          task_state: TaskState, vm_state: str) -> None:
    uuid = f"{name}-{vm_state}"
    with engine.begin() as conn:
        insert_instance(conn, uuid, vm_state=vm_state, task_state=None, host="h1")
        if vm_state in vm_states:
            _begin(conn, CTX, uuid, TRANSITIONS[name])
            assert conn.execute(sa.text("SELECT task_state FROM instances WHERE uuid = :u"),
                                {"u": uuid}).scalar_one() == task_state.value
        else:
            with pytest.raises(exc.InstanceInvalidState, match=f"vm_state {vm_state}"):
                _begin(conn, CTX, uuid, TRANSITIONS[name])


@pytest.mark.parametrize("name", [a[0] for a in ACCEPTED])
def test_begin_refuses_a_busy_instance(engine: sa.Engine, name: str) -> None:
    uuid = f"busy-{name}"
    state = next(iter(TRANSITIONS[name].vm_states)).value
    with engine.begin() as conn:
        insert_instance(conn, uuid, vm_state=state, task_state="rebooting", host="h1")
        with pytest.raises(exc.InstanceInvalidState, match="task_state rebooting"):
            _begin(conn, CTX, uuid, TRANSITIONS[name])


# (caller's project, locked_by) → whether the caller holds the lock
@pytest.mark.parametrize("project,locked_by,expected", [
    ("p1", None, True),
    ("p1", "owner", True),
    ("p1", "admin", False),
    ("admins", "admin", True),
    ("admins", "owner", False),
    ("admins", None, True),
])
def test_who_holds_a_lock(project: str, locked_by: str | None, expected: bool) -> None:
    ctx = RequestContext(user_id="u", project_id=project, roles=["admin"])
    assert is_expected_locked_by(ctx, {"project_id": "p1", "locked_by": locked_by}) is expected


def fake() -> FakeDriver:
    return FakeDriver(SimpleNamespace(fake_host_vcpus=1, fake_host_memory_mb=512,
                                      fake_host_disk_gb=1), "h1")


INSTANCE = {"uuid": "u1", "display_name": "vm"}


async def _power_after(driver: FakeDriver, steps: list[tuple[str, tuple[Any, ...]]]) -> PowerState:
    await driver.spawn(None, INSTANCE, {}, [], None, {}, [])
    for op, args in steps:
        await getattr(driver, op)(*args)
    return (await driver.get_info(INSTANCE)).state


@pytest.mark.parametrize("steps,power", [
    ([("pause", (INSTANCE,))], PowerState.PAUSED),
    ([("pause", (INSTANCE,)), ("unpause", (INSTANCE,))], PowerState.RUNNING),
    ([("suspend", (None, INSTANCE))], PowerState.SHUTDOWN),
    ([("suspend", (None, INSTANCE)), ("resume", (None, INSTANCE, []))], PowerState.RUNNING),
    ([("power_off", (INSTANCE,)), ("rescue", (None, INSTANCE, [], {"id": "i"}, "pw"))],
     PowerState.RUNNING),
])
def test_fake_driver_power_states(steps: list[tuple[str, tuple[Any, ...]]],
                                  power: PowerState) -> None:
    assert asyncio.run(_power_after(fake(), steps)) == power


@pytest.mark.parametrize("op,args", [
    ("pause", (INSTANCE,)), ("unpause", (INSTANCE,)), ("suspend", (None, INSTANCE)),
    ("resume", (None, INSTANCE, [])), ("rescue", (None, INSTANCE, [], {}, "pw")),
    ("unrescue", (None, INSTANCE)), ("set_admin_password", (INSTANCE, "pw")),
])
def test_optional_driver_operations_default_to_not_implemented(op: str,
                                                               args: tuple[Any, ...]) -> None:
    # The seam's own method (the fake overrides them all).
    with pytest.raises(vexc.DriverNotImplemented) as raised:
        asyncio.run(getattr(ComputeDriver, op)(fake(), *args))
    assert raised.value.code == 501


def test_libvirt_has_no_guest_agent_to_set_a_password() -> None:
    from cirrus.virt.libvirt.guest_state import GuestStateOps

    with pytest.raises(vexc.QemuGuestAgentNotEnabled) as raised:
        asyncio.run(GuestStateOps().set_admin_password(INSTANCE, "pw"))
    assert raised.value.code == 409
