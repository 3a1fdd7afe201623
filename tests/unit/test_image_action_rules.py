"""Rules of the image server actions, as tables: statuses, accepted keys per
microversion, a snapshot's image record, rebuild values, unshelve bodies."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.api.compute.image_actions import parse_rebuild, parse_unshelve, rebuild_keys
from cirrus.compute.image_requests import UnshelveRequest
from cirrus.compute.image_requests import (RebuildRequest, rebuild_values, snapshot_image_body,
                                           without_shelved_keys)
from cirrus.compute.states import TaskState, VmState, status_of
from cirrus.compute.transitions import TRANSITIONS
from cirrus.exception import ValidationError

IMG = "11111111-1111-4111-8111-111111111111"


@pytest.mark.parametrize("vm_state,task_state,status", [
    (VmState.ACTIVE, TaskState.REBUILDING, "REBUILD"),
    (VmState.ACTIVE, TaskState.REBUILD_BLOCK_DEVICE_MAPPING, "REBUILD"),
    (VmState.ACTIVE, TaskState.REBUILD_SPAWNING, "REBUILD"),
    (VmState.STOPPED, TaskState.REBUILDING, "REBUILD"),
    (VmState.ERROR, TaskState.REBUILD_SPAWNING, "REBUILD"),
    (VmState.ACTIVE, TaskState.IMAGE_SNAPSHOT, "ACTIVE"),
    (VmState.ACTIVE, TaskState.SHELVING, "ACTIVE"),
    (VmState.SHELVED, None, "SHELVED"),
    (VmState.SHELVED, TaskState.SHELVING_OFFLOADING, "SHELVED"),
    (VmState.SHELVED_OFFLOADED, None, "SHELVED_OFFLOADED"),
    (VmState.SHELVED_OFFLOADED, TaskState.UNSHELVING, "SHELVED_OFFLOADED"),
    (VmState.STOPPED, None, "SHUTOFF"),
])
def test_status_of(vm_state: VmState, task_state: TaskState | None, status: str) -> None:
    assert status_of(vm_state, task_state) == status


@pytest.mark.parametrize("name,vm_states,task_state", [
    ("rebuild", {"active", "stopped", "error"}, "rebuilding"),
    ("snapshot", {"active", "stopped", "paused", "suspended"}, "image_snapshot_pending"),
    ("backup", {"active", "stopped", "paused", "suspended"}, "image_backup"),
    ("shelve", {"active", "stopped", "paused", "suspended"}, "shelving"),
    ("shelve_offload", {"shelved"}, "shelving_offloading"),
    ("unshelve", {"shelved", "shelved_offloaded"}, "unshelving"),
])
def test_transitions_are_novas(name: str, vm_states: set[str], task_state: str) -> None:
    t = TRANSITIONS[name]
    assert {v.value for v in t.vm_states} == vm_states
    assert t.task_state == task_state and t.task_states == (None,)


@pytest.mark.parametrize("version,key,allowed", [
    ((2, 1), "personality", True), ((2, 56), "personality", True),
    ((2, 57), "personality", False), ((2, 18), "description", False),
    ((2, 19), "description", True), ((2, 53), "key_name", False), ((2, 54), "key_name", True),
    ((2, 56), "user_data", False), ((2, 57), "user_data", True),
    ((2, 62), "trusted_image_certificates", False), ((2, 63), "trusted_image_certificates", True),
    ((2, 89), "hostname", False), ((2, 90), "hostname", True),
])
def test_rebuild_keys_per_microversion(version: tuple[int, int], key: str, allowed: bool) -> None:
    assert (key in rebuild_keys(version)) is allowed


@pytest.mark.parametrize("body,field", [
    ({}, "imageRef"), ({"imageRef": IMG, "name": ""}, "name"),
    ({"imageRef": IMG, "accessIPv6": "1.2.3.4"}, "accessIPv6"),
    ({"imageRef": IMG, "description": 5}, "description"),
    ({"imageRef": IMG, "hostname": "-bad-"}, "hostname"),
    ({"imageRef": IMG, "key_name": ""}, "key_name"),
    ({"imageRef": IMG, "trusted_image_certificates": []}, "trusted_image_certificates"),
    ({"imageRef": IMG, "adminPass": 5}, "adminPass"),
])
def test_rebuild_bodies_refused_name_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        parse_rebuild(body, (2, 90))


def test_rebuild_parse_keeps_only_what_was_given() -> None:
    req = parse_rebuild({"imageRef": f"http://x/images/{IMG}", "name": "n",
                         "key_name": None}, (2, 54))
    assert req.image_ref == IMG and req.changes == {"display_name": "n"}
    assert req.key_name_given and req.key_name is None
    assert req.admin_password  # generated when not given


@pytest.mark.parametrize("version,arg,expected", [
    ((2, 76), {"availability_zone": "x"}, UnshelveRequest()),
    ((2, 77), None, UnshelveRequest()),
    ((2, 77), {"availability_zone": "az1"}, UnshelveRequest(zone_given=True, zone="az1")),
    ((2, 91), None, UnshelveRequest()),
    ((2, 91), {"availability_zone": None}, UnshelveRequest(zone_given=True)),
    ((2, 91), {"host": "h1"}, UnshelveRequest(host="h1")),
    ((2, 91), {"availability_zone": "az1", "host": "h1"},
     UnshelveRequest(zone_given=True, zone="az1", host="h1")),
])
def test_unshelve_target(version: tuple[int, int], arg: Any,
                         expected: UnshelveRequest) -> None:
    assert parse_unshelve(arg, version) == expected


@pytest.mark.parametrize("arg", [{}, {"host": ""}, {"host": None}, {"zone": "a"},
                                 {"availability_zone": 3}, "az"])
def test_unshelve_bad_bodies_at_291(arg: Any) -> None:
    with pytest.raises(ValidationError):
        parse_unshelve(arg, (2, 91))


@pytest.mark.parametrize("arg", [{}, {"availability_zone": None}, {"availability_zone": "a",
                                                                    "host": "h"}, "az"])
def test_unshelve_bad_bodies_at_277(arg: Any) -> None:
    with pytest.raises(ValidationError):
        parse_unshelve(arg, (2, 77))


ROW = {"uuid": "u1", "project_id": "p1", "image_ref": IMG, "root_gb": 5,
       "system_metadata": {"image_os_distro": "cirros", "image_min_ram": 64, "image_min_disk": 1,
                           "image_disk_format": "qcow2", "image_container_format": "bare",
                           "image_img_signature": "sig", "image_os_glance_x": "y",
                           "image_base_image_ref": IMG, "shelved_at": "t"}}


@pytest.mark.parametrize("project,image_type,expected", [
    ("p1", "snapshot", {"visibility": "private", "min_disk": 5, "min_ram": 64,
                        "os_distro": "cirros", "image_type": "snapshot", "base_image_ref": IMG,
                        "instance_uuid": "u1", "user_id": "usr", "owner_id": "p1"}),
    ("p2", "backup", {"visibility": "shared", "instance_owner": "p1", "disk_format": "qcow2",
                      "image_type": "backup"}),
])
def test_snapshot_image_body(project: str, image_type: str, expected: dict[str, Any]) -> None:
    body = snapshot_image_body(project, "usr", ROW, "snap", image_type, {"extra": "1"})
    assert {k: body.get(k) for k in expected} == expected
    assert body["name"] == "snap" and body["extra"] == "1"
    # never inherited: signatures, os_glance*, what cirrus keeps for itself
    assert not {"img_signature", "os_glance_x", "shelved_at"} & set(body)
    assert ("disk_format" in body) is (image_type == "backup")


def test_rebuild_values_reset_the_image_metadata() -> None:
    image = {"id": "new", "properties": {"hw_x": "1"}, "min_ram": 0, "disk_format": "raw"}
    req = RebuildRequest(image_ref="new", admin_password=None, changes={"display_name": "n"})
    values = rebuild_values(ROW, image, req, None)
    assert values["image_ref"] == "new" and values["display_name"] == "n"
    assert values["system_metadata"]["image_hw_x"] == "1"
    assert "image_os_distro" not in values["system_metadata"]
    assert values["system_metadata"]["shelved_at"] == "t" and "key_name" not in values


def test_without_shelved_keys() -> None:
    assert without_shelved_keys({"shelved_at": 1, "shelved_image_id": 2, "shelved_host": 3,
                                 "image_x": 4}) == {"image_x": 4}
