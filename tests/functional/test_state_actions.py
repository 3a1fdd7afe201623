"""Guest-state server actions (issue #19) through the HTTP API on the fake
driver: pause/unpause, suspend/resume, rescue/unrescue, changePassword — their
states, instance actions, 409 from a wrong state, 400 bad bodies and driver
faults. Lock, security groups and soft delete: test_lock.py,
test_server_security_groups.py, test_soft_delete.py."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.virt import exception as vexc
from cirrus.virt.fake import FaultRule, fail_for_instance
from tests.functional.actions import SERVERS, act, last_action, wait_idle
from tests.functional.servers import (create_server, fake_drivers, server_body, upload_image,
                                      wait_for_status)

NAME = "guest"


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


@pytest.fixture
async def active(demo: httpx.AsyncClient, image: str) -> str:
    created = await create_server(demo, server_body(image, name=NAME))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    return created["id"]


def inject(cloud: Cloud, op: str, error: Any = None) -> None:
    """Every fake host fails ``op`` for the test's server."""
    for driver in fake_drivers(cloud).values():
        rule: FaultRule = (fail_for_instance(NAME, error) if error is not None
                           else fail_for_instance(NAME))
        driver.faults[op].append(rule)


# (action, status, vm_state, power_state, the compute event)
ROUND_TRIPS = [
    (("pause", "PAUSED", "paused", 3, "compute_pause_instance"),
     ("unpause", "ACTIVE", "active", 1, "compute_unpause_instance")),
    (("suspend", "SUSPENDED", "suspended", 4, "compute_suspend_instance"),
     ("resume", "ACTIVE", "active", 1, "compute_resume_instance")),
    (("rescue", "RESCUE", "rescued", 1, "compute_rescue_instance"),
     ("unrescue", "ACTIVE", "active", 1, "compute_unrescue_instance")),
]


def notifications(cloud: Cloud, uuid: str) -> list[str]:
    """The compute hosts' notifications about ``uuid``, in order, by type."""
    return [n["event_type"] for s in cloud.services if s.binary == "cirrus-compute"
            for n in s.endpoint.notifier.sent if n["payload"].get("instance_id") == uuid]


@pytest.mark.parametrize("there,back", ROUND_TRIPS, ids=[t[0][0] for t in ROUND_TRIPS])
async def test_action_and_its_reverse(cloud: Cloud, demo: httpx.AsyncClient, active: str,
                                      there: tuple[Any, ...], back: tuple[Any, ...]) -> None:
    for name, status, vm_state, power_state, event in (there, back):
        resp = await act(demo, active, {name: None})
        assert resp.status_code == (200 if name == "rescue" else 202), resp.text
        server = await wait_for_status(demo, active, {status})
        await wait_idle(demo, active)
        server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
        assert server["OS-EXT-STS:vm_state"] == vm_state
        assert server["OS-EXT-STS:power_state"] == power_state
        assert server["OS-EXT-STS:task_state"] is None
        action = await last_action(demo, active)
        assert action["action"] == name
        assert [(e["event"], e["result"]) for e in action["events"]] == [(event, "Success")]
        assert notifications(cloud, active)[-2:] == [f"compute.instance.{name}.start",
                                                     f"compute.instance.{name}.end"]


# (the action, the state it needs, its reverse) — asked from ACTIVE: 409
WRONG_STATE = ["unpause", "resume", "unrescue", "restore"]


@pytest.mark.parametrize("name", WRONG_STATE)
async def test_action_from_a_wrong_state_is_409(demo: httpx.AsyncClient, active: str,
                                                name: str) -> None:
    resp = await act(demo, active, {name: None})
    assert resp.status_code == 409, resp.text
    message = resp.json()["conflictingRequest"]["message"]
    assert f"Cannot '{name}' instance {active} while it is in vm_state active" == message


async def test_paused_server_cannot_be_paused_suspended_or_given_a_password(
        demo: httpx.AsyncClient, active: str) -> None:
    assert (await act(demo, active, {"pause": None})).status_code == 202
    await wait_for_status(demo, active, {"PAUSED"})
    for body in ({"pause": None}, {"suspend": None}, {"changePassword": {"adminPass": "x"}}):
        resp = await act(demo, active, body)
        assert resp.status_code == 409 and "vm_state paused" in resp.text, resp.text


async def test_stopped_server_can_be_rescued_and_comes_back_active(
        demo: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"os-stop": None})
    await wait_for_status(demo, active, {"SHUTOFF"})
    assert (await act(demo, active, {"rescue": {"adminPass": "s3cret"}})).json() == \
        {"adminPass": "s3cret"}
    await wait_for_status(demo, active, {"RESCUE"})
    await act(demo, active, {"unrescue": None})
    await wait_for_status(demo, active, {"ACTIVE"})


async def test_rescue_boots_the_image_asked_for(cloud: Cloud, demo: httpx.AsyncClient,
                                                active: str) -> None:
    other = await upload_image(demo, name="rescue-image")
    resp = await act(demo, active, {"rescue": {"rescue_image_ref": other}})
    password = resp.json()["adminPass"]
    assert len(password) == 12 and password.isalnum()
    await wait_for_status(demo, active, {"RESCUE"})
    guests = [d.instances[active] for d in fake_drivers(cloud).values() if active in d.instances]
    assert guests[0].rescue_image == other
    console = (await act(demo, active, {"os-getConsoleOutput": {}})).json()["output"]
    assert f"rescued from {other}" in console  # the rescue guest's console is readable
    await act(demo, active, {"unrescue": {}})
    await wait_for_status(demo, active, {"ACTIVE"})
    assert guests[0].rescue_image is None


@pytest.mark.parametrize("settings_overrides", [{"enable_instance_password": False}])
async def test_rescue_without_instance_passwords_answers_empty(demo: httpx.AsyncClient,
                                                               active: str) -> None:
    resp = await act(demo, active, {"rescue": None})
    assert resp.status_code == 200 and resp.json() == {}


async def test_rescue_with_an_unknown_image_is_400(demo: httpx.AsyncClient, active: str) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    resp = await act(demo, active, {"rescue": {"rescue_image_ref": missing}})
    assert resp.status_code == 400 and "not supported" in resp.text, resp.text
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None


async def test_change_password_reaches_the_driver(cloud: Cloud, demo: httpx.AsyncClient,
                                                  active: str) -> None:
    resp = await act(demo, active, {"changePassword": {"adminPass": "n3w-pass"}})
    assert resp.status_code == 202, resp.text
    guest = next(d.instances[active] for d in fake_drivers(cloud).values()
                 if active in d.instances)
    assert guest.admin_password == "n3w-pass"
    server = await wait_idle(demo, active)
    assert server["status"] == "ACTIVE"
    action = await last_action(demo, active)
    assert action["action"] == "changePassword"
    assert [e["event"] for e in action["events"]] == ["compute_set_admin_password"]


# The driver's answer is the caller's (Nova: 501 not implemented, 409 no agent).
PASSWORD_FAULTS = [
    (lambda i: vexc.DriverNotImplemented(operation="set_admin_password"), 501,
     "Unable to set password on instance"),
    (lambda i: vexc.QemuGuestAgentNotEnabled(), 409, "QEMU guest agent is not enabled"),
    (lambda i: RuntimeError("the hunter2 leaked"), 409, "error setting admin password"),
]


@pytest.mark.parametrize("error,code,message", PASSWORD_FAULTS, ids=["501", "409", "other"])
async def test_change_password_failures(cloud: Cloud, demo: httpx.AsyncClient, active: str,
                                        error: Any, code: int, message: str) -> None:
    inject(cloud, "set_admin_password", error)
    resp = await act(demo, active, {"changePassword": {"adminPass": "hunter2"}})
    assert resp.status_code == code, resp.text
    assert message in resp.text and "hunter2" not in resp.text
    server = await wait_idle(demo, active)
    assert server["status"] == "ACTIVE"
    assert (await last_action(demo, active))["events"][0]["result"] == "Error"


# (action, the event that fails, the status the server is left in) as Nova
FAULTS = [
    ("pause", "pause", "ACTIVE"),  # reverts the task only
    ("suspend", "suspend", "ERROR"),  # _error_out_instance_on_exception
    ("rescue", "rescue", "ERROR"),  # InstanceNotRescuable, ERROR
]


@pytest.mark.parametrize("name,op,status", FAULTS)
async def test_driver_fault_is_recorded_and_the_task_cleared(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str,
        name: str, op: str, status: str) -> None:
    inject(cloud, op)
    resp = await act(demo, active, {name: None})
    assert resp.status_code in (200, 202), resp.text
    await wait_for_status(demo, active, {status, "ERROR"})
    server = await wait_idle(admin, active)
    assert server["status"] == status
    action = await last_action(admin, active)
    assert action["events"][0]["result"] == "Error"
    assert action["events"][0]["traceback"]
    assert notifications(cloud, active)[-1] == f"compute.instance.{name}.error"
    if status == "ERROR":
        assert server["fault"]["code"] in (400, 500)
        if name == "rescue":
            assert "cannot be rescued: Driver Error" in server["fault"]["message"]


async def test_failed_unpause_leaves_the_server_paused(cloud: Cloud, demo: httpx.AsyncClient,
                                                      active: str) -> None:
    await act(demo, active, {"pause": None})
    await wait_for_status(demo, active, {"PAUSED"})
    inject(cloud, "unpause")
    await act(demo, active, {"unpause": None})
    server = await wait_idle(demo, active)
    assert server["status"] == "PAUSED"
    assert (await last_action(demo, active))["events"][0]["result"] == "Error"


BAD_BODIES = [
    {"rescue": {"adminPass": 5}},
    {"rescue": {"rescue_image_ref": "not-a-uuid"}},
    {"rescue": {"spare": 1}},
    {"rescue": "yes"},
    {"changePassword": {}},
    {"changePassword": None},
    {"changePassword": {"adminPass": ["x"]}},
    {"changePassword": {"adminPass": "x", "more": 1}},
    {"addSecurityGroup": {}},
    {"addSecurityGroup": {"name": ""}},
    {"addSecurityGroup": {"name": "   "}},
    {"removeSecurityGroup": {"name": 7}},
    {"removeSecurityGroup": None},
]


@pytest.mark.parametrize("body", BAD_BODIES, ids=[str(b) for b in BAD_BODIES])
async def test_bad_bodies_are_400_naming_the_field(demo: httpx.AsyncClient, active: str,
                                                   body: dict[str, Any]) -> None:
    resp = await act(demo, active, body)
    assert resp.status_code == 400, resp.text
    assert next(iter(body)) in resp.json()["badRequest"]["message"]
