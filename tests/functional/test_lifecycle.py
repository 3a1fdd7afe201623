"""Server lifecycle after boot: stop, start (seed 003), reboot, console, delete,
state guards (409) and the periodic clean-up of builds nobody finishes."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations, instance_info_caches
from cirrus.virt.fake import hang
from tests.functional.servers import (create_server, db_count, fake_drivers, server_body,
                                      upload_image, wait_for_status)

SERVERS = "/compute/v2.1/servers"


@pytest.fixture
async def active(demo: httpx.AsyncClient) -> str:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    return created["id"]


async def act(client: httpx.AsyncClient, server_id: str, body: dict) -> httpx.Response:
    return await client.post(f"{SERVERS}/{server_id}/action", json=body)


async def test_stop_then_start(cloud: Cloud, demo: httpx.AsyncClient, active: str) -> None:
    assert (await act(demo, active, {"os-stop": None})).status_code == 202
    server = await wait_for_status(demo, active, {"SHUTOFF"})
    assert server["OS-EXT-STS:power_state"] == 4
    assert server["OS-EXT-STS:task_state"] is None
    assert (await act(demo, active, {"os-start": None})).status_code == 202
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert server["OS-EXT-STS:power_state"] == 1


async def test_wrong_state_is_409_naming_the_state(demo: httpx.AsyncClient, active: str) -> None:
    resp = await act(demo, active, {"os-start": None})
    assert resp.status_code == 409
    assert "vm_state active" in resp.json()["conflictingRequest"]["message"]
    await act(demo, active, {"os-stop": None})
    await wait_for_status(demo, active, {"SHUTOFF"})
    resp = await act(demo, active, {"reboot": {"type": "SOFT"}})
    assert resp.status_code == 409
    assert "stopped" in resp.json()["conflictingRequest"]["message"]


async def test_reboot_soft_and_hard(cloud: Cloud, demo: httpx.AsyncClient, active: str) -> None:
    for kind in ("SOFT", "HARD"):
        assert (await act(demo, active, {"reboot": {"type": kind}})).status_code == 202
        await wait_for_status(demo, active, {"ACTIVE"})
    console = (await act(demo, active, {"os-getConsoleOutput": {}})).json()["output"]
    assert "rebooted (soft)" in console and "rebooted (hard)" in console
    assert "fake: 1 vcpus" in console and "fake: hostname " in console  # what the guest got


@pytest.mark.parametrize("body", [{"reboot": {"type": "SIDEWAYS"}}, {"reboot": {}},
                                  {"os-getConsoleOutput": {"length": "x"}}, {"fly": None}, {}])
async def test_bad_actions_are_400(demo: httpx.AsyncClient, active: str, body: dict) -> None:
    resp = await act(demo, active, body)
    assert resp.status_code == 400, resp.text


async def test_console_output_length(demo: httpx.AsyncClient, active: str) -> None:
    full = (await act(demo, active, {"os-getConsoleOutput": {}})).json()["output"]
    assert "CIRRUS-BOOT-OK" in full
    last = (await act(demo, active, {"os-getConsoleOutput": {"length": 1}})).json()["output"]
    assert last.strip() == full.strip().splitlines()[-1]


async def test_other_projects_server_is_404(api, admin: httpx.AsyncClient, active: str) -> None:
    # admin sees it; a user of another project would not (demo owns it here).
    assert (await admin.get(f"{SERVERS}/{active}")).status_code == 200
    resp = await admin.get(f"{SERVERS}/00000000-0000-4000-8000-000000000000")
    assert resp.status_code == 404 and "itemNotFound" in resp.json()


async def test_metadata_api(demo: httpx.AsyncClient, active: str) -> None:
    url = f"{SERVERS}/{active}/metadata"
    assert (await demo.post(url, json={"metadata": {"a": "1"}})).json()["metadata"] == {"a": "1"}
    assert (await demo.put(f"{url}/b", json={"meta": {"b": "2"}})).status_code == 200
    assert (await demo.get(url)).json()["metadata"] == {"a": "1", "b": "2"}
    assert (await demo.delete(f"{url}/a")).status_code == 204
    assert (await demo.get(f"{url}/a")).status_code == 404
    assert (await demo.put(url, json={"metadata": {"c": "3"}})).json()["metadata"] == {"c": "3"}
    assert (await demo.post(url, json={"metadata": {"k": 5}})).status_code == 400


async def test_power_state_sync_marks_vanished_guest_stopped(cloud: Cloud, demo: httpx.AsyncClient,
                                                             active: str) -> None:
    for svc in cloud.services:
        if svc.binary == "cirrus-compute":
            for build in list(svc.endpoint.builds.tasks()):
                await build  # ACTIVE shows before the build task ends; the sync skips it till then
            svc.endpoint.driver.instances.pop(active, None)
            await svc.endpoint.periodics.sync_power_states()
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "SHUTOFF"
    assert server["OS-EXT-STS:power_state"] == 0


async def test_info_cache_heal_restores_lost_addresses(cloud: Cloud, demo: httpx.AsyncClient,
                                                      active: str) -> None:
    import sqlalchemy as sa

    addresses = (await demo.get(f"{SERVERS}/{active}")).json()["server"]["addresses"]
    assert addresses  # networks "auto": one address at least

    def forget(conn: sa.Connection) -> None:
        conn.execute(instance_info_caches.update().where(
            instance_info_caches.c.instance_uuid == active).values(network_info=[]))
    assert cloud.db is not None
    await cloud.db.run(forget)
    assert (await demo.get(f"{SERVERS}/{active}")).json()["server"]["addresses"] == {}

    for svc in cloud.services:
        if svc.binary == "cirrus-compute":
            await svc.endpoint.periodics.heal_instance_info_cache()
    assert (await demo.get(f"{SERVERS}/{active}")).json()["server"]["addresses"] == addresses


@pytest.mark.parametrize("settings_overrides", [{"instance_build_timeout": 0.3}])
async def test_hung_build_times_out_to_error(cloud: Cloud, demo: httpx.AsyncClient,
                                             admin: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(hang())
    created = await create_server(demo, server_body(image))
    await asyncio.sleep(0.5)  # past the timeout ("advancing time")
    for svc in cloud.services:
        if svc.binary == "cirrus-compute":
            await svc.endpoint.periodics.check_instance_build_time()
    server = await wait_for_status(demo, created["id"], {"ERROR"})
    assert "timed out" in server["fault"]["message"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    resp = await admin.get("/network/v2.0/ports", params={"device_id": created["id"]})
    assert resp.json()["ports"] == []


@pytest.mark.parametrize("settings_overrides", [{"instance_build_timeout": 0.3}])
async def test_build_on_a_dead_host_is_swept_by_the_conductor(cloud: Cloud,
                                                              demo: httpx.AsyncClient) -> None:
    """A compute that crashed mid-build (its task killed, heartbeats stopped)."""
    for svc in cloud.services:
        for task in svc._tasks:
            task.cancel()  # the test runs the one sweep itself; no periodic task races it
    image = await upload_image(demo)
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(hang())
    created = await create_server(demo, server_body(image))
    computes = [s for s in cloud.services if s.binary == "cirrus-compute"]
    for _ in range(2000):  # until a compute runs the build (its spawn hangs)
        if any(list(s.endpoint.builds.tasks()) for s in computes):
            break
        await asyncio.sleep(0.01)
    for svc in computes:
        for task in list(svc.endpoint.builds.tasks()):
            task.cancel()  # the process died: its build is gone
    cloud.settings.service_down_time = 0.1  # and its heartbeats stopped
    await asyncio.sleep(0.5)
    conductor = next(s.endpoint for s in cloud.services if s.binary == "cirrus-conductor")
    assert created["id"] in await conductor.fail_orphaned_builds()
    server = await wait_for_status(demo, created["id"], {"ERROR"})
    assert "timed out" in server["fault"]["message"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0


async def test_delete_on_a_down_host_is_local(cloud: Cloud, demo: httpx.AsyncClient,
                                              admin: httpx.AsyncClient, active: str) -> None:
    cloud.settings.service_down_time = 0  # every compute looks down now
    await asyncio.sleep(0.05)
    assert (await demo.delete(f"{SERVERS}/{active}")).status_code == 204
    await wait_for_status(demo, active, {"DELETED"})
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == active) == 0
    ports = (await admin.get("/network/v2.0/ports", params={"device_id": active})).json()["ports"]
    assert ports == []
