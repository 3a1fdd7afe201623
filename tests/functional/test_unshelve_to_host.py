"""Unshelve at 2.91: an admin's ``host`` (the scheduler's filters still
run), ``availability_zone: null`` unpinning the server, and the refusals
(403 for a member's host, 400 for an unknown host or zone, 409 for a server
not offloaded or a host outside the server's zone)."""
from __future__ import annotations

import httpx
import pytest

from tests.functional.servers import wait_for_status
from tests.functional.test_image_actions import act, active, image, v  # noqa: F401

SERVERS = "/compute/v2.1/servers"


async def offloaded(demo: httpx.AsyncClient, admin: httpx.AsyncClient, server: str) -> None:
    assert (await act(demo, server, {"shelve": None})).status_code == 202
    await wait_for_status(admin, server, {"SHELVED_OFFLOADED"})


async def hosts(admin: httpx.AsyncClient) -> list[str]:
    services = (await admin.get("/compute/v2.1/os-services", params={
        "binary": "nova-compute"})).json()["services"]
    return sorted(s["host"] for s in services)


async def test_unshelve_to_each_host(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                     active: str) -> None:
    for host in await hosts(admin):
        await offloaded(demo, admin, active)
        resp = await act(admin, active, {"unshelve": {"host": host}}, "2.91")
        assert resp.status_code == 202, resp.text
        server = await wait_for_status(admin, active, {"ACTIVE"})
        assert server["OS-EXT-SRV-ATTR:host"] == host


async def test_unpin_and_zone_with_host(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                        active: str) -> None:
    await offloaded(demo, admin, active)
    resp = await act(demo, active, {"unshelve": {"availability_zone": None}}, "2.91")
    assert resp.status_code == 202, resp.text
    await wait_for_status(admin, active, {"ACTIVE"})
    await offloaded(demo, admin, active)
    host = (await hosts(admin))[0]
    both = await act(admin, active, {"unshelve": {"availability_zone": "nova", "host": host}},
                     "2.91")
    assert both.status_code == 202, both.text
    assert (await wait_for_status(admin, active, {"ACTIVE"}))["OS-EXT-SRV-ATTR:host"] == host


@pytest.mark.parametrize("who, body, status", [
    ("demo", {"unshelve": {"host": "HOST"}}, 403),
    ("admin", {"unshelve": {"host": "no-such-host"}}, 400),
    ("admin", {"unshelve": {"availability_zone": "nowhere"}}, 400),
    ("admin", {"unshelve": {}}, 400),
    ("admin", {"unshelve": {"host": 5}}, 400),
    ("admin", {"unshelve": {"hots": "HOST"}}, 400),
])
async def test_refusals(demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str,
                        who: str, body: dict, status: int) -> None:
    await offloaded(demo, admin, active)
    host = (await hosts(admin))[0]
    if isinstance(body["unshelve"].get("host"), str):
        body = {"unshelve": {**body["unshelve"], "host": body["unshelve"]["host"].replace(
            "HOST", host)}}
    if "hots" in body["unshelve"]:
        body = {"unshelve": {"hots": host}}
    client = demo if who == "demo" else admin
    resp = await act(client, active, body, "2.91")
    assert resp.status_code == status, resp.text
    assert (await admin.get(f"{SERVERS}/{active}")).json()["server"]["status"] == \
        "SHELVED_OFFLOADED"


async def test_a_host_outside_the_zone_is_409(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                              active: str) -> None:
    first, second = (await hosts(admin))[:2]
    agg = (await admin.post("/compute/v2.1/os-aggregates", json={"aggregate": {
        "name": "east", "availability_zone": "east"}})).json()["aggregate"]
    resp = await admin.post(f"/compute/v2.1/os-aggregates/{agg['id']}/action",
                            json={"add_host": {"host": second}})
    assert resp.status_code == 200, resp.text
    await offloaded(demo, admin, active)
    clash = await act(admin, active, {"unshelve": {"availability_zone": "east", "host": first}},
                      "2.91")
    assert clash.status_code == 409 and "is not in the availability zone" in clash.text
    ok = await act(admin, active, {"unshelve": {"availability_zone": "east", "host": second}},
                   "2.91")
    assert ok.status_code == 202, ok.text
    server = await wait_for_status(admin, active, {"ACTIVE"})
    assert server["OS-EXT-SRV-ATTR:host"] == second


async def test_a_server_not_offloaded_is_409(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                             active: str) -> None:
    resp = await act(admin, active, {"unshelve": {"host": (await hosts(admin))[0]}}, "2.91")
    assert resp.status_code == 409


@pytest.mark.parametrize("version, name, status", [
    ("2.91", "me@example.org", 400), ("2.91", "dotted.name", 400), ("2.91", "plain-name_1", 201),
    ("2.92", "me@example.org", 201), ("2.92", "dotted.name", 201), ("2.92", "bad/name", 400),
])
async def test_keypair_names_by_microversion(demo: httpx.AsyncClient, version: str, name: str,
                                             status: int) -> None:
    key = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHcq1ZQ1IzXKV0m0Xv0Rj5bA1pXrWyvzjGx4l5q6Lx8F "
           "t@h")
    body = {"keypair": {"name": name, **({"public_key": key} if version >= "2.92" else {})}}
    resp = await demo.post("/compute/v2.1/os-keypairs", json=body, headers=v(version))
    assert resp.status_code == status, resp.text


async def test_keypairs_are_not_generated_from_292(demo: httpx.AsyncClient) -> None:
    resp = await demo.post("/compute/v2.1/os-keypairs", json={"keypair": {"name": "k"}},
                           headers=v("2.92"))
    assert resp.status_code == 400 and "public_key" in resp.text
