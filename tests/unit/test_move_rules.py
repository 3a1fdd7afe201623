"""Rules of moves as tables: statuses a client sees, the states each move
accepts, the body parsers and the request the conductor sends the scheduler."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from cirrus.api.compute.move_actions import boolean, host_name
from cirrus.compute.migrations import MigrationType, flavor_id_of
from cirrus.compute.server_groups import GroupRef
from cirrus.compute.states import TaskState, VmState, status_of
from cirrus.compute.transitions import TRANSITIONS
from cirrus.conductor.migrate import MoveTarget, request_spec
from cirrus.exception import ValidationError


@pytest.mark.parametrize("vm_state, task_state, status", [
    ("active", "resize_prep", "RESIZE"),
    ("active", "resize_migrating", "RESIZE"),
    ("active", "resize_migrated", "RESIZE"),
    ("active", "resize_finish", "RESIZE"),
    ("stopped", "resize_prep", "RESIZE"),
    ("resized", None, "VERIFY_RESIZE"),
    ("resized", "resize_reverting", "REVERT_RESIZE"),
    ("active", "migrating", "MIGRATING"),
    ("active", "rebuilding", "REBUILD"),
    ("stopped", "rebuild_spawning", "REBUILD"),
    ("error", "rebuilding", "REBUILD"),
    ("active", None, "ACTIVE"),
    ("stopped", None, "SHUTOFF"),
])
def test_status_of_a_moving_server(vm_state: str, task_state: str | None, status: str) -> None:
    assert status_of(vm_state, task_state) == status


@pytest.mark.parametrize("name, vm_states, task_state, action", [
    ("resize", ("active", "stopped"), "resize_prep", "resize"),
    ("migrate", ("active", "stopped"), "resize_prep", "migrate"),
    ("confirm_resize", ("resized",), None, "confirmResize"),
    ("revert_resize", ("resized",), "resize_reverting", "revertResize"),
    ("live_migrate", ("active", "paused"), "migrating", "live-migration"),
    ("evacuate", ("active", "stopped", "error"), "rebuilding", "evacuate"),
])
def test_what_each_move_accepts(name: str, vm_states: tuple[str, ...], task_state: str | None,
                                action: str) -> None:
    t = TRANSITIONS[name]
    assert tuple(v.value for v in t.vm_states) == vm_states
    assert (t.task_state.value if t.task_state else None) == task_state
    assert t.action == action and t.task_states == (None,)


@pytest.mark.parametrize("value, auto, parsed", [
    (True, False, True), ("True", False, True), ("yes", False, True), ("1", False, True),
    ("off", False, False), ("NO", False, False), (False, False, False),
    ("auto", True, None),
])
def test_boolean_spellings(value: Any, auto: bool, parsed: bool | None) -> None:
    assert boolean(value, "f", auto=auto) is parsed


@pytest.mark.parametrize("value, auto", [("auto", False), ("maybe", True), (1, False),
                                         (None, False), ("yEs", False)])
def test_boolean_refusals(value: Any, auto: bool) -> None:
    with pytest.raises(ValidationError):
        boolean(value, "f", auto=auto)


@pytest.mark.parametrize("value, ok", [("compute1", True), ("a.b-c_d", True), ("", False),
                                       ("x" * 256, False), ("bad host", False), (5, False)])
def test_host_names(value: Any, ok: bool) -> None:
    if ok:
        assert host_name(value, "host") == value
    else:
        with pytest.raises(ValidationError):
            host_name(value, "host")


@pytest.mark.parametrize("flavor, shown", [({"flavorid": "1"}, 1), ({"flavorid": "42"}, 42),
                                           ({"flavorid": "huge"}, None), (None, None),
                                           ({"flavorid": "9" * 12}, None)])
def test_instance_type_ids(flavor: dict | None, shown: int | None) -> None:
    assert flavor_id_of(flavor) == shown


INSTANCE = {"uuid": "i", "host": "compute1", "node": "compute1", "image_ref": "img",
            "project_id": "p", "user_id": "u", "availability_zone": "nova",
            "flavor": {"vcpus": 1, "memory_mb": 512, "root_gb": 1}}


def _migration(kind: MigrationType, new: dict | None = None) -> Any:
    return {"uuid": "m", "migration_type": kind.value, "new_flavor": new,
            "created_at": dt.datetime(2026, 1, 1)}


@pytest.mark.parametrize("kind, target, retry, forced, requested, release", [
    (MigrationType.RESIZE, MoveTarget(), [["compute1", "compute1"]], [], None, False),
    (MigrationType.RESIZE, MoveTarget(same_host=True), [], [], None, False),
    (MigrationType.MIGRATION, MoveTarget("compute2"), [["compute1", "compute1"]], [],
     {"host": "compute2", "node": None}, False),
    (MigrationType.LIVE_MIGRATION, MoveTarget("compute2", force=True),
     [["compute1", "compute1"]], ["compute2"], None, False),
    (MigrationType.EVACUATION, MoveTarget(), [["compute1", "compute1"]], [], None, True),
])
def test_the_schedulers_request_for_a_move(kind: MigrationType, target: MoveTarget,
                                           retry: list, forced: list, requested: Any,
                                           release: bool) -> None:
    spec = request_spec(INSTANCE, _migration(kind, {"vcpus": 2, "memory_mb": 2048,
                                                    "root_gb": 20}), target)
    assert spec["retry"]["hosts"] == retry
    assert spec["force_hosts"] == forced and spec["requested_destination"] == requested
    assert spec["move"] == {"migration_uuid": "m", "release_source": release}
    assert (spec["flavor"]["vcpus"], spec["flavor"]["memory_mb"]) == (2, 2048)
    assert spec["instance_uuids"] == ["i"] and spec["availability_zone"] == "nova"


def test_vm_and_task_states_keep_novas_values() -> None:
    assert VmState.RESIZED.value == "resized"
    assert [t.value for t in (TaskState.RESIZE_PREP, TaskState.RESIZE_MIGRATING,
                              TaskState.RESIZE_MIGRATED, TaskState.RESIZE_FINISH,
                              TaskState.RESIZE_REVERTING, TaskState.MIGRATING,
                              TaskState.REBUILD_SPAWNING)] == [
        "resize_prep", "resize_migrating", "resize_migrated", "resize_finish",
        "resize_reverting", "migrating", "rebuild_spawning"]


@pytest.mark.parametrize("group", [None, {"uuid": "g", "policy": "anti-affinity"},
                                   {"uuid": "g", "policy": "soft-affinity"}])
@pytest.mark.parametrize("kind", list(MigrationType))
def test_a_move_is_scheduled_with_the_instances_group(kind: MigrationType,
                                                      group: GroupRef | None) -> None:
    """Nova's setup_instance_group: the group's filters judge the destination."""
    spec = request_spec(INSTANCE, _migration(kind, {"vcpus": 1, "memory_mb": 512,
                                                    "root_gb": 1}), MoveTarget(), group)
    assert spec["instance_group"] == group
