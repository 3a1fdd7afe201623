"""lock/unlock (Nova's os-lock-server): who may lock and unlock, what a lock
refuses, and how it shows (``locked`` at 2.9, ``locked_reason`` and the
``locked`` filter at 2.73)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.actions import SERVERS, act, last_action, show, wait_idle
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.tenants import Tenants

OVERRIDE = "os_compute_api:os-lock-server:unlock:unlock_override"


@pytest.fixture
async def image(tenants: Tenants) -> str:
    return await upload_image(tenants.member)


async def boot(tenants: Tenants, image: str, name: str) -> str:
    created = await create_server(tenants.member, server_body(image, name=name))
    await wait_for_status(tenants.member, created["id"], {"ACTIVE"})
    return created["id"]


@pytest.fixture
async def server(tenants: Tenants, image: str) -> str:
    return await boot(tenants, image, "locked-one")


async def test_lock_shows_by_microversion(tenants: Tenants, server: str) -> None:
    owner = tenants.member
    resp = await act(owner, server, {"lock": {"locked_reason": "maintenance"}}, "2.73")
    assert resp.status_code == 202, resp.text
    assert "locked" not in await show(owner, server, "2.8")
    at_29 = await show(owner, server, "2.9")
    assert at_29["locked"] is True and "locked_reason" not in at_29
    at_273 = await show(owner, server, "2.73")
    assert at_273["locked"] is True and at_273["locked_reason"] == "maintenance"
    action = await last_action(owner, server)
    assert action["action"] == "lock"
    assert [(e["event"], e["result"]) for e in action["events"]] == [("api_lock", "Success")]
    app: Any = tenants.api.cloud.app
    sent = app.state.compute_api.notifier.sent
    assert [(n["event_type"], n["payload"]) for n in sent] == [
        ("compute.instance.lock", {"instance_id": server, "reason": "maintenance"})]


async def test_reason_before_273_is_ignored(tenants: Tenants, server: str) -> None:
    resp = await act(tenants.member, server, {"lock": {"locked_reason": "x", "any": 1}}, "2.72")
    assert resp.status_code == 202, resp.text
    assert (await show(tenants.member, server, "2.73"))["locked_reason"] is None


REFUSED = [
    ("POST", "action", {"os-stop": None}),
    ("POST", "action", {"reboot": {"type": "HARD"}}),
    ("POST", "action", {"pause": None}),
    ("POST", "action", {"suspend": None}),
    ("POST", "action", {"rescue": None}),
    ("POST", "action", {"changePassword": {"adminPass": "x"}}),
    ("POST", "action", {"forceDelete": None}),
    ("POST", "metadata", {"metadata": {"a": "b"}}),
    ("PUT", "metadata", {"metadata": {}}),
    ("POST", "os-interface",
     {"interfaceAttachment": {"net_id": "00000000-0000-4000-8000-000000000000"}}),
    ("DELETE", "", None),
]


async def test_a_locked_server_refuses_its_owner(tenants: Tenants, server: str) -> None:
    owner = tenants.member
    assert (await act(owner, server, {"lock": None})).status_code == 202
    for method, sub, body in REFUSED:
        url = f"{SERVERS}/{server}/{sub}".rstrip("/")
        resp = await owner.request(method, url, json=body)
        assert resp.status_code == 409, (method, sub, body, resp.text)
        assert resp.json()["conflictingRequest"]["message"] == f"Instance {server} is locked"
    shown = await show(owner, server)
    assert shown["status"] == "ACTIVE" and shown["metadata"] == {}
    # Reading goes on: the console, the actions.
    assert (await act(owner, server, {"os-getConsoleOutput": {}})).status_code == 200


async def test_an_admin_acts_on_a_locked_server(tenants: Tenants, server: str) -> None:
    assert (await act(tenants.member, server, {"lock": None})).status_code == 202
    assert (await act(tenants.admin, server, {"os-stop": None})).status_code == 202
    await wait_for_status(tenants.member, server, {"SHUTOFF"})


async def test_owner_unlocks_its_own_lock_and_relocking_changes_nothing(
        tenants: Tenants, server: str) -> None:
    owner = tenants.member
    await act(owner, server, {"lock": {"locked_reason": "first"}}, "2.73")
    await act(owner, server, {"lock": {"locked_reason": "second"}}, "2.73")
    assert (await show(owner, server, "2.73"))["locked_reason"] == "first"
    assert (await act(owner, server, {"unlock": None})).status_code == 202
    shown = await show(owner, server, "2.73")
    assert shown["locked"] is False and shown["locked_reason"] is None
    assert (await last_action(owner, server))["events"][0]["event"] == "api_unlock"
    assert (await act(owner, server, {"pause": None})).status_code == 202


async def test_admin_lock_holds_against_the_owner(tenants: Tenants, server: str) -> None:
    assert (await act(tenants.admin, server, {"lock": None})).status_code == 202
    resp = await act(tenants.member, server, {"unlock": None})
    assert resp.status_code == 403 and OVERRIDE in resp.text, resp.text
    assert (await show(tenants.member, server, "2.9"))["locked"] is True
    # The owner's own lock request does not take the admin's lock over.
    assert (await act(tenants.member, server, {"lock": None})).status_code == 202
    assert (await act(tenants.member, server, {"unlock": None})).status_code == 403
    assert (await act(tenants.admin, server, {"unlock": None})).status_code == 202
    assert (await show(tenants.member, server, "2.9"))["locked"] is False


async def test_admin_unlocks_the_owners_lock(tenants: Tenants, server: str) -> None:
    await act(tenants.member, server, {"lock": None})
    assert (await act(tenants.admin, server, {"unlock": None})).status_code == 202
    assert (await show(tenants.member, server, "2.9"))["locked"] is False


async def test_other_projects_cannot_lock_or_see(tenants: Tenants, server: str) -> None:
    for name in ("lock", "unlock"):
        assert (await act(tenants.other, server, {name: None})).status_code == 404
        assert (await act(tenants.reader, server, {name: None})).status_code == 403
    assert (await show(tenants.member, server, "2.9"))["locked"] is False


async def listed(client: httpx.AsyncClient, version: str, **params: Any) -> httpx.Response:
    return await client.get(f"{SERVERS}/detail", params=params,
                            headers={"OpenStack-API-Version": f"compute {version}"})


async def test_locked_filter_at_273(tenants: Tenants, image: str, server: str) -> None:
    other = await boot(tenants, image, "free-one")
    await act(tenants.member, server, {"lock": None})
    owner = tenants.member
    for value, expected in (("true", {server}), ("False", {other}), ("1", {server}),
                            ("no", {other})):
        resp = await listed(owner, "2.73", locked=value)
        assert {s["id"] for s in resp.json()["servers"]} == expected, value
    resp = await listed(owner, "2.73", locked="maybe")
    assert resp.status_code == 400 and "Unrecognized value 'maybe'" in resp.text
    # Before 2.73 Nova drops the filter.
    resp = await listed(owner, "2.72", locked="maybe")
    assert {s["id"] for s in resp.json()["servers"]} == {server, other}


@pytest.mark.parametrize("arg", [{"locked_reason": ""}, {"locked_reason": "x" * 256},
                                 {"locked_reason": 5}, {"why": "x"}, "because"])
async def test_bad_lock_bodies_at_273(tenants: Tenants, server: str, arg: Any) -> None:
    resp = await act(tenants.member, server, {"lock": arg}, "2.73")
    assert resp.status_code == 400 and "lock" in resp.text, resp.text
    assert (await wait_idle(tenants.member, server))["status"] == "ACTIVE"
