"""IoOpsWeigher through the API: boots spread by builds in progress, and the
scheduler's count comes back down when builds end (ACTIVE, ERROR, deleted)."""
from __future__ import annotations

import asyncio

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import instances
from cirrus.scheduler.host_manager import HostManager
from cirrus.virt.fake import fail_on_host, hold
from tests.functional.servers import (create_server, fake_drivers, server_body, upload_image,
                                      wait_for_status)

SERVERS = "/compute/v2.1/servers"
# RAM weigher off: without the io ops weigher every tie goes to the lowest
# node id, so all boots would land on one host.
SPREAD = {"computes": 3, "ram_weight_multiplier": 0.0, "cpu_weight_multiplier": 0.0,
          "disk_weight_multiplier": 0.0, "io_ops_weight_multiplier": -1.0,
          "quota_instances": 20, "quota_cores": 20}


def _host_manager(cloud: Cloud) -> HostManager:
    (svc,) = [s for s in cloud.services if s.binary == "cirrus-scheduler"]
    hm = svc.endpoint.driver.host_manager  # type: ignore[attr-defined]
    assert isinstance(hm, HostManager) and hm.count_io_ops
    return hm


async def _io_ops(cloud: Cloud) -> dict[str, int]:
    hm = _host_manager(cloud)
    await hm.refresh()
    return {h.host: h.num_io_ops for h in hm.hosts}


async def _wait_task_state(cloud: Cloud, server_id: str, state: str) -> str:
    """The host of ``server_id`` once its task state is ``state``."""
    def read(conn: sa.Connection) -> tuple[str | None, str | None]:
        row = conn.execute(sa.select(instances.c.task_state, instances.c.host)
                           .where(instances.c.uuid == server_id)).one()
        return row.task_state, row.host
    for _ in range(2000):
        task_state, host = await cloud.db.read(read)  # type: ignore[union-attr]
        if task_state == state and host:
            return host
        await asyncio.sleep(0.01)
    raise AssertionError(f"{server_id} never reached {state}: {task_state}")


@pytest.mark.parametrize("settings_overrides", [SPREAD])
async def test_boots_spread_by_builds_in_progress(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    release = asyncio.Event()
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(hold(release))
    ids, hosts = [], []
    for i in range(3):  # one at a time: each held in spawn before the next
        server = await create_server(demo, server_body(image, name=f"s{i}"))
        ids.append(server["id"])
        hosts.append(await _wait_task_state(cloud, server["id"], "spawning"))
    assert sorted(hosts) == sorted(fake_drivers(cloud)), hosts  # one per host
    assert await _io_ops(cloud) == {h: 1 for h in hosts}  # read from the database
    release.set()
    for server_id in ids:
        await wait_for_status(demo, server_id, {"ACTIVE"})
    assert set((await _io_ops(cloud)).values()) == {0}  # ACTIVE: no longer counted


@pytest.mark.parametrize("settings_overrides", [SPREAD])
async def test_failed_and_deleted_builds_leave_no_count(cloud: Cloud,
                                                         demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    release = asyncio.Event()
    drivers = fake_drivers(cloud)
    for driver in drivers.values():
        driver.faults["spawn"].append(hold(release))
    held = await create_server(demo, server_body(image, name="held"))
    held_host = await _wait_task_state(cloud, held["id"], "spawning")
    assert (await _io_ops(cloud))[held_host] == 1
    # Deleted while building: out of the count.
    resp = await demo.delete(f"{SERVERS}/{held['id']}")
    assert resp.status_code == 204, resp.text
    await wait_for_status(demo, held["id"], {"DELETED"})
    assert set((await _io_ops(cloud)).values()) == {0}
    # Builds that fail on every host (reschedules included): ERROR, out of
    # the count.
    release.set()
    for name, driver in drivers.items():
        driver.faults["spawn"].clear()
        driver.faults["spawn"].append(fail_on_host(name))
    failed = [await create_server(demo, server_body(image, name=f"f{i}")) for i in range(3)]
    states = [await wait_for_status(demo, s["id"], {"ACTIVE", "ERROR"}) for s in failed]
    assert [s["status"] for s in states] == ["ERROR"] * 3
    assert set((await _io_ops(cloud)).values()) == {0}
