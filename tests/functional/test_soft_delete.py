"""Soft delete (``reclaim_instance_interval`` > 0, Nova's deferred delete):
DELETE powers the guest off and keeps it (SOFT_DELETED, its resources and
quota kept), ``restore`` brings it back, ``forceDelete`` deletes now, and the
host's periodic reclaim deletes what stayed soft-deleted past the interval."""
from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.manager import ComputeManager
from cirrus.compute.models import allocations, instances
from cirrus.compute.states import PowerState
from cirrus.virt.fake import fail_for_instance
from tests.functional.actions import SERVERS, act, last_action, show, wait_idle
from tests.functional.servers import (create_server, db_count, fake_drivers, server_body,
                                      upload_image, wait_for_status)

pytestmark = pytest.mark.parametrize("settings_overrides",
                                     [{"reclaim_instance_interval": 3600.0}])
NAME = "deferred"


@pytest.fixture
async def server(demo: httpx.AsyncClient) -> str:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image, name=NAME))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    return created["id"]


def managers(cloud: Cloud) -> list[ComputeManager]:
    return [s.endpoint for s in cloud.services if s.binary == "cirrus-compute"]


async def soft_deleted(demo: httpx.AsyncClient, server: str) -> dict:
    assert (await demo.delete(f"{SERVERS}/{server}")).status_code == 204
    await wait_for_status(demo, server, {"SOFT_DELETED"})
    return await wait_idle(demo, server)


async def instances_used(client: httpx.AsyncClient) -> int:
    limits = (await client.get("/compute/v2.1/limits")).json()["limits"]["absolute"]
    return int(limits["totalInstancesUsed"])


async def test_delete_soft_deletes_and_keeps_everything(cloud: Cloud, demo: httpx.AsyncClient,
                                                        server: str) -> None:
    shown = await soft_deleted(demo, server)
    assert shown["OS-EXT-STS:vm_state"] == "soft-delete"
    assert shown["OS-EXT-STS:power_state"] == PowerState.SHUTDOWN
    guest = next(d.instances[server] for d in fake_drivers(cloud).values()
                 if server in d.instances)
    assert guest.state == PowerState.SHUTDOWN
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == server) > 0
    assert await instances_used(demo) == 1  # it still counts against the quota
    action = await last_action(demo, server)
    assert action["action"] == "delete"
    assert [e["event"] for e in action["events"]] == ["compute_soft_delete_instance"]
    listed = (await demo.get(f"{SERVERS}/detail", params={"status": "SOFT_DELETED"})).json()
    assert [s["id"] for s in listed["servers"]] == [server]


async def test_restore_brings_it_back(demo: httpx.AsyncClient, server: str) -> None:
    await soft_deleted(demo, server)
    assert (await act(demo, server, {"restore": None})).status_code == 202
    shown = await wait_for_status(demo, server, {"ACTIVE"})
    shown = await wait_idle(demo, server)
    assert shown["OS-EXT-STS:power_state"] == PowerState.RUNNING
    action = await last_action(demo, server)
    assert (action["action"], action["events"][0]["event"]) == ("restore",
                                                                "compute_restore_instance")
    resp = await act(demo, server, {"restore": None})
    assert resp.status_code == 409 and "vm_state active" in resp.text


async def test_force_delete_deletes_now(cloud: Cloud, demo: httpx.AsyncClient,
                                        server: str) -> None:
    await soft_deleted(demo, server)
    assert (await act(demo, server, {"forceDelete": None})).status_code == 202
    await wait_for_status(demo, server, {"DELETED"})
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == server) == 0
    assert await instances_used(demo) == 0


async def test_force_delete_of_a_running_server(demo: httpx.AsyncClient, server: str) -> None:
    assert (await act(demo, server, {"forceDelete": None})).status_code == 202
    await wait_for_status(demo, server, {"DELETED"})


async def age(cloud: Cloud, server: str, seconds: float) -> None:
    """Pretend the server was soft-deleted ``seconds`` ago."""
    then = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=seconds)

    def update(conn: sa.Connection) -> None:
        conn.execute(instances.update().where(instances.c.uuid == server).values(deleted_at=then))
    assert cloud.db is not None
    await cloud.db.run(update)


async def test_reclaim_deletes_only_what_is_old_enough(cloud: Cloud, demo: httpx.AsyncClient,
                                                       server: str) -> None:
    await soft_deleted(demo, server)
    assert [await m.soft_delete.reclaim_queued_deletes() for m in managers(cloud)] == [[], []]
    await age(cloud, server, 3601)
    reclaimed = [await m.soft_delete.reclaim_queued_deletes() for m in managers(cloud)]
    assert sorted(reclaimed) == [[], [server]]
    await wait_for_status(demo, server, {"DELETED"})
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == server) == 0


async def test_reclaim_leaves_a_restored_server(cloud: Cloud, demo: httpx.AsyncClient,
                                                server: str) -> None:
    await soft_deleted(demo, server)
    await age(cloud, server, 3601)
    await act(demo, server, {"restore": None})
    await wait_for_status(demo, server, {"ACTIVE"})
    assert [await m.soft_delete.reclaim_queued_deletes() for m in managers(cloud)] == [[], []]
    assert (await show(demo, server))["status"] == "ACTIVE"


async def test_the_reclaim_is_a_periodic_task(cloud: Cloud) -> None:
    tasks = [t for m in managers(cloud) for t in m.periodic_tasks()
             if t.name == "reclaim_queued_deletes"]
    assert [t.interval for t in tasks] == [3600.0, 3600.0]


async def test_a_locked_soft_deleted_server_is_not_restored_by_its_owner(
        demo: httpx.AsyncClient, server: str) -> None:
    await soft_deleted(demo, server)
    assert (await act(demo, server, {"lock": None})).status_code == 202
    resp = await act(demo, server, {"restore": None})
    assert resp.status_code == 409 and "is locked" in resp.text


async def test_failed_soft_delete_is_recorded(cloud: Cloud, demo: httpx.AsyncClient,
                                              server: str) -> None:
    for driver in fake_drivers(cloud).values():
        driver.faults["power_off"].append(fail_for_instance(NAME))
    assert (await demo.delete(f"{SERVERS}/{server}")).status_code == 204
    shown = await wait_idle(demo, server)
    assert shown["status"] == "ACTIVE"  # Nova reverts the task state only
    assert (await last_action(demo, server))["events"][0]["result"] == "Error"


async def test_host_down_soft_deletes_here(cloud: Cloud, demo: httpx.AsyncClient,
                                           server: str) -> None:
    cloud.settings.service_down_time = 0  # every compute looks down now
    await asyncio.sleep(0.05)
    assert (await demo.delete(f"{SERVERS}/{server}")).status_code == 204
    shown = await show(demo, server)
    assert shown["status"] == "SOFT_DELETED" and shown["OS-EXT-STS:task_state"] is None
