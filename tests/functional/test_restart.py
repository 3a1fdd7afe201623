"""Stopping and starting again in one process: the drain a SIGTERM starts,
the 503 it gives new builds, the start-up sweeps that give every build the
previous process left a cause, and fake guests that outlive the process."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import instances
from cirrus.compute.states import PowerState
from cirrus.config import Settings
from cirrus.virt.fake import hold
from tests.conftest import Api, AppTransport, make_settings
from tests.databases import Databases
from tests.functional.servers import (create_server, fake_drivers, server_body, upload_image,
                                      wait_for_status)

SERVERS = "/compute/v2.1/servers"
SHUTTING_DOWN = "cirrus is shutting down"


@pytest.fixture
def settings(tmp_path: Path, database: Databases) -> Iterator[Settings]:
    s = make_settings(tmp_path, database, computes=1, shutdown_grace_period=0.5)
    yield s
    database.drop(s)


@asynccontextmanager
async def running(settings: Settings, **kw: Any) -> AsyncIterator[Cloud]:
    cloud = Cloud(settings, http_transport=AppTransport(lambda: cloud.app), **kw)
    await cloud.start()
    try:
        yield cloud
    finally:
        await cloud.stop()


async def task_state(cloud: Cloud, uuid: str) -> str | None:
    assert cloud.db is not None
    return await cloud.db.read(lambda conn: conn.execute(sa.select(instances.c.task_state).where(
        instances.c.uuid == uuid)).scalar_one())


async def wait_task_state(cloud: Cloud, uuid: str, wanted: str) -> None:
    for _ in range(2000):
        if await task_state(cloud, uuid) == wanted:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{uuid} never reached {wanted}")


async def server_after_restart(settings: Settings, uuid: str) -> dict[str, Any]:
    """The server as the next start leaves it (ACTIVE or ERROR)."""
    async with running(settings) as cloud, await Api(cloud).as_user("demo") as demo:
        return await wait_for_status(demo, uuid, {"ACTIVE", "ERROR"}, timeout=10)


async def held_build(cloud: Cloud, demo: httpx.AsyncClient,
                     release: asyncio.Event | None = None) -> str:
    """A server whose spawn waits for ``release`` (never, without one)."""
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(hold(release or asyncio.Event()))
    server = await create_server(demo, server_body(await upload_image(demo)))
    await wait_task_state(cloud, server["id"], "spawning")
    return str(server["id"])


async def test_a_drain_refuses_creates_and_lets_a_build_finish(settings: Settings) -> None:
    settings.shutdown_grace_period = 30
    async with running(settings) as cloud, await Api(cloud).as_user("demo") as demo:
        release = asyncio.Event()
        uuid = await held_build(cloud, demo, release)
        draining = asyncio.ensure_future(cloud.drain())
        while not cloud.app.state.compute_api.admission.closed:  # type: ignore[union-attr]
            await asyncio.sleep(0.01)
        resp = await demo.post(SERVERS, json=server_body(await upload_image(demo)))
        assert resp.status_code == 503, resp.text
        assert SHUTTING_DOWN in resp.json()["serviceUnavailable"]["message"]
        assert not draining.done()  # it waits for the build in flight
        release.set()
        assert await draining == 0
        assert (await wait_for_status(demo, uuid, {"ACTIVE"}))["status"] == "ACTIVE"
    assert (await server_after_restart(settings, uuid))["status"] == "ACTIVE"


async def test_what_the_grace_period_did_not_see_finish_fails_naming_the_shutdown(
        settings: Settings) -> None:
    async with running(settings) as cloud, await Api(cloud).as_user("demo") as demo:
        uuid = await held_build(cloud, demo)
        assert await cloud.drain() == 1
    server = await server_after_restart(settings, uuid)
    assert server["status"] == "ERROR"
    assert SHUTTING_DOWN in server["fault"]["message"]
    assert "0.5 s grace period" in server["fault"]["message"]


async def test_a_build_cut_short_by_a_crash_fails_at_start_naming_its_host(
        settings: Settings) -> None:
    async with running(settings) as cloud, await Api(cloud).as_user("demo") as demo:
        uuid = await held_build(cloud, demo)
    # (a stop without a drain is what a crash leaves: the build in BUILD)
    server = await server_after_restart(settings, uuid)
    assert server["status"] == "ERROR"
    assert server["fault"]["message"] == (
        "Build interrupted: the compute service on compute1 stopped before the build "
        "finished. Set to error state.")


async def test_a_build_never_scheduled_fails_when_the_conductor_starts(
        settings: Settings) -> None:
    # No conductor: the build request is lost, as with a conductor killed before it ran.
    async with running(settings, roles=("scheduler", "compute")) as cloud, \
            await Api(cloud).as_user("demo") as demo:
        server = await create_server(demo, server_body(await upload_image(demo)))
        assert await task_state(cloud, server["id"]) == "scheduling"
    server = await server_after_restart(settings, server["id"])
    assert server["status"] == "ERROR"
    assert server["fault"]["message"] == (
        "Build interrupted: the conductor stopped before the build was scheduled. "
        "Set to error state.")


async def test_fake_guests_outlive_the_process(settings: Settings) -> None:
    async with running(settings) as cloud, await Api(cloud).as_user("demo") as demo:
        server = await create_server(demo, server_body(await upload_image(demo)))
        await wait_for_status(demo, server["id"], {"ACTIVE"})
        stopped = await create_server(demo, server_body(await upload_image(demo), name="off"))
        await wait_for_status(demo, stopped["id"], {"ACTIVE"})
        resp = await demo.post(f"{SERVERS}/{stopped['id']}/action", json={"os-stop": None})
        assert resp.status_code == 202, resp.text
        await wait_for_status(demo, stopped["id"], {"SHUTOFF"})
    async with running(settings) as cloud, await Api(cloud).as_user("demo") as demo:
        (driver,) = fake_drivers(cloud).values()
        row = {"uuid": server["id"]}
        assert (await driver.get_info(row)).state == PowerState.RUNNING
        assert (await driver.get_info({"uuid": stopped["id"]})).state == PowerState.SHUTDOWN
        assert "CIRRUS-BOOT-OK" in await driver.get_console_output(None, row)
        compute = next(s.endpoint for s in cloud.services if s.binary == "cirrus-compute")
        await compute.periodics.sync_power_states()  # what flipped them to SHUTOFF before
        assert (await wait_for_status(demo, server["id"], {"ACTIVE"}))["status"] == "ACTIVE"
        assert (await wait_for_status(demo, stopped["id"], {"SHUTOFF"}))["status"] == "SHUTOFF"
        assert (await demo.delete(f"{SERVERS}/{server['id']}")).status_code == 204
        await wait_for_status(demo, server["id"], {"DELETED"})
        assert server["id"] not in driver.instances
    async with running(settings) as cloud:
        (driver,) = fake_drivers(cloud).values()
        assert list(driver.instances) == [stopped["id"]]


@pytest.mark.parametrize("settings_overrides", [{"computes": 2}])
@pytest.mark.parametrize("user,action,body", [
    ("demo", "rebuild", {"imageRef": "IMAGE"}),
    ("demo", "resize", {"flavorRef": "2"}),
    ("admin", "migrate", None),
    ("admin", "os-migrateLive", {"host": None, "block_migration": "auto"}),
    ("admin", "evacuate", {}),
])
async def test_a_closed_admission_refuses_every_action_that_starts_a_build(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, user: str,
        action: str, body: Any) -> None:
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert cloud.app is not None
    cloud.app.state.compute_api.admission.close()
    client = admin if user == "admin" else demo
    if isinstance(body, dict) and body.get("imageRef") == "IMAGE":
        body = {"imageRef": image}
    resp = await client.post(f"{SERVERS}/{server['id']}/action", json={action: body},
                             headers={"OpenStack-API-Version": "compute 2.30"})
    assert resp.status_code == 503, resp.text
    assert SHUTTING_DOWN in resp.json()["serviceUnavailable"]["message"]
    # What starts no build goes on: reads, stops, deletes.
    assert (await demo.get(f"{SERVERS}/{server['id']}")).status_code == 200
    assert (await demo.post(SERVERS, json=server_body(image))).status_code == 503
    assert (await demo.delete(f"{SERVERS}/{server['id']}")).status_code == 204
