"""Server-group policies hold when a member moves: resize, cold and live
migration, evacuation and the unshelve of an offloaded server are scheduled
with the member's group, so the group filters and weigher apply to the new
host as they did at boot (Nova's conductor ``setup_instance_group``).

The scheduler stacks in these tests (negative weights prefer the fullest
host): without the group the move would go to the other member's host, so
each test fails if the policy is not applied.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import instance_faults
from cirrus.virt.fake import hold
from tests.functional.servers import fake_drivers, server_body, upload_image, wait_for_status
from tests.functional.test_moves import (act, claims_of, events_of, force_down, host_of,
                                         only_migration, wait_for_migration)

SERVERS = "/compute/v2.1/servers"
STACK = {"ram_weight_multiplier": -1.0, "cpu_weight_multiplier": -1.0,
         "disk_weight_multiplier": -1.0}


async def new_group(demo: httpx.AsyncClient, policy: str) -> str:
    resp = await demo.post("/compute/v2.1/os-server-groups",
                           json={"server_group": {"name": policy, "policy": policy}},
                           headers={"OpenStack-API-Version": "compute 2.64"})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["server_group"]["id"])


async def boot_members(demo: httpx.AsyncClient, group: str, name: str, count: int,
                       statuses: frozenset[str] = frozenset({"ACTIVE"})) -> list[str]:
    """``count`` servers booted into ``group``, once each is in ``statuses``."""
    body = server_body(await upload_image(demo), name=name, min_count=count, max_count=count)
    body["os:scheduler_hints"] = {"group": group}
    assert (await demo.post(SERVERS, json=body)).status_code == 202
    found = (await demo.get(SERVERS, params={"name": f"^{name}"})).json()["servers"]
    uuids = sorted(s["id"] for s in found)
    for uuid in uuids:
        await wait_for_status(demo, uuid, set(statuses))
    return uuids


async def boot_group(demo: httpx.AsyncClient, policy: str, count: int = 2) -> list[str]:
    """``count`` ACTIVE servers booted into a new group of ``policy``."""
    return await boot_members(demo, await new_group(demo, policy), "member", count)


async def faults_of(cloud: Cloud, uuid: str) -> list[str]:
    def read(conn: sa.Connection) -> list[str]:
        return list(conn.execute(sa.select(instance_faults.c.message).where(
            instance_faults.c.instance_uuid == uuid)).scalars())
    assert cloud.db is not None
    return await cloud.db.read(read)


async def wait_for_fault(cloud: Cloud, uuid: str, timeout: float = 20.0) -> list[str]:
    """The server's fault messages, once it has one."""
    deadline = time.monotonic() + timeout
    while not (faults := await faults_of(cloud, uuid)):
        assert time.monotonic() < deadline, f"no fault on {uuid}"
        await asyncio.sleep(0.02)
    return faults


async def assert_not_moved(cloud: Cloud, admin: httpx.AsyncClient, uuid: str, host: str,
                           action: str, event: str) -> None:
    """Nova's answer to NoValidHost for a move: the migration in error, the
    server ACTIVE on its host with no task, a fault and an error event."""
    m = await wait_for_migration(admin, {"error", "completed", "finished", "done"})
    assert m["status"] == "error" and m["dest_compute"] is None, m
    server = await wait_for_status(admin, uuid, {"ACTIVE"})
    assert server["OS-EXT-STS:task_state"] is None
    assert await host_of(admin, uuid) == host
    assert uuid in fake_drivers(cloud)[host].instances
    assert [c["host"] for c in await claims_of(cloud, uuid)] == [host]
    assert any("No valid host" in f for f in await faults_of(cloud, uuid))
    (failed,) = [e for e in await events_of(admin, uuid, action) if e["event"] == event]
    assert failed["result"] == "Error"
    assert "affinity" in failed["details"]  # the group filter that removed the hosts


# -- anti-affinity: no host but the other member's -------------------------------------------
@pytest.mark.parametrize("settings_overrides", [STACK])
async def test_cold_migrating_an_anti_affinity_member_finds_no_host(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    first, second = await boot_group(demo, "anti-affinity")
    host = await host_of(admin, first)
    assert host != await host_of(admin, second)
    assert (await act(admin, first, {"migrate": None})).status_code == 202
    await assert_not_moved(cloud, admin, first, host, "migrate", "conductor_migrate_server")


@pytest.mark.parametrize("settings_overrides", [STACK])
async def test_resizing_an_anti_affinity_member_finds_no_host(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    first, _second = await boot_group(demo, "anti-affinity")
    host = await host_of(admin, first)
    assert (await act(demo, first, {"resize": {"flavorRef": "2"}})).status_code == 202
    await assert_not_moved(cloud, admin, first, host, "resize", "conductor_migrate_server")
    server = (await demo.get(f"{SERVERS}/{first}")).json()["server"]
    assert server["flavor"]["id"] == "1"


@pytest.mark.parametrize("settings_overrides", [STACK])
@pytest.mark.parametrize("named", [False, True])
async def test_live_migrating_an_anti_affinity_member_finds_no_host(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, named: bool) -> None:
    """``named``: the other member's host asked for without ``force``, which
    still passes the filters (Nova 2.30+)."""
    first, second = await boot_group(demo, "anti-affinity")
    host = await host_of(admin, first)
    target = await host_of(admin, second) if named else None
    body = {"os-migrateLive": {"host": target, "block_migration": "auto"}}
    assert (await act(admin, first, body, "2.68")).status_code == 202
    await assert_not_moved(cloud, admin, first, host, "live-migration",
                           "conductor_live_migrate_instance")


@pytest.mark.parametrize("settings_overrides", [STACK])
async def test_a_forced_host_skips_the_group_filters(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    """``force`` bypasses the scheduler's filters, the group's too, as in Nova."""
    first, second = await boot_group(demo, "anti-affinity")
    other = await host_of(admin, second)
    body = {"os-migrateLive": {"host": other, "block_migration": "auto", "force": True}}
    assert (await act(admin, first, body, "2.30")).status_code == 202
    assert (await wait_for_migration(admin, {"completed", "error"}))["status"] == "completed"
    await wait_for_status(admin, first, {"ACTIVE"})
    assert await host_of(admin, first) == other


# -- anti-affinity with a free host: the move goes there -----------------------------------
@pytest.mark.parametrize("settings_overrides", [{**STACK, "computes": 3}])
@pytest.mark.parametrize("action", [{"migrate": None}, {"resize": {"flavorRef": "2"}}])
async def test_a_move_lands_on_the_host_without_the_other_member(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient,
        action: dict[str, Any]) -> None:
    first, second = await boot_group(demo, "anti-affinity")
    taken = {await host_of(admin, first), await host_of(admin, second)}
    (free,) = set(fake_drivers(cloud)) - taken
    assert (await act(admin, first, action)).status_code == 202
    await wait_for_status(admin, first, {"VERIFY_RESIZE"})
    assert await host_of(admin, first) == free
    assert (await act(admin, first, {"confirmResize": None})).status_code == 204
    await wait_for_status(admin, first, {"ACTIVE"})
    assert (await only_migration(admin))["dest_compute"] == free


@pytest.mark.parametrize("settings_overrides", [{**STACK, "computes": 3}])
async def test_live_migration_lands_on_the_host_without_the_other_member(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    first, second = await boot_group(demo, "anti-affinity")
    taken = {await host_of(admin, first), await host_of(admin, second)}
    (free,) = set(fake_drivers(cloud)) - taken
    body = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    assert (await act(admin, first, body, "2.68")).status_code == 202
    assert (await wait_for_migration(admin, {"completed", "error"}))["status"] == "completed"
    await wait_for_status(admin, first, {"ACTIVE"})
    assert await host_of(admin, first) == free


@pytest.mark.parametrize("settings_overrides", [{**STACK, "computes": 3}])
async def test_evacuation_lands_on_the_host_without_the_other_member(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    first, second = await boot_group(demo, "anti-affinity")
    source = await host_of(admin, first)
    (free,) = set(fake_drivers(cloud)) - {source, await host_of(admin, second)}
    await force_down(admin, source)
    assert (await act(admin, first, {"evacuate": {}}, "2.14")).status_code == 200
    assert (await wait_for_migration(admin, {"done", "failed", "error"}))["status"] == "done"
    await wait_for_status(admin, first, {"ACTIVE"})
    assert await host_of(admin, first) == free


@pytest.mark.parametrize("settings_overrides", [STACK])
async def test_evacuating_an_anti_affinity_member_finds_no_host(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    """Nova's rebuild_instance: no host for an evacuation is an ERROR."""
    first, _second = await boot_group(demo, "anti-affinity")
    source = await host_of(admin, first)
    await force_down(admin, source)
    assert (await act(admin, first, {"evacuate": {}}, "2.14")).status_code == 200
    m = await wait_for_migration(admin, {"done", "failed", "error"})
    assert m["status"] == "error" and m["dest_compute"] is None
    server = await wait_for_status(admin, first, {"ERROR"})
    assert server["OS-EXT-STS:task_state"] is None and await host_of(admin, first) == source
    assert "No valid host" in server["fault"]["message"]


# -- unshelve of an offloaded member ---------------------------------------------------------
@pytest.mark.parametrize("settings_overrides", [STACK])
async def test_unshelve_keeps_anti_affinity(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    """Offloaded, the member holds no host: stacking would put it beside the
    other one, the group sends it back to the free host."""
    cloud.settings.scheduler_cache_seconds = 0  # the offload's release seen at once
    first, second = await boot_group(demo, "anti-affinity")
    host = await host_of(admin, first)
    assert (await act(demo, first, {"shelve": None})).status_code == 202
    await wait_for_status(admin, first, {"SHELVED_OFFLOADED"})
    assert (await act(demo, first, {"unshelve": None})).status_code == 202
    await wait_for_status(admin, first, {"ACTIVE"})
    assert await host_of(admin, first) == host != await host_of(admin, second)


@pytest.mark.parametrize("settings_overrides", [STACK])
async def test_unshelve_with_no_host_left_stays_offloaded(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    first, _second = await boot_group(demo, "anti-affinity")
    host = await host_of(admin, first)
    await act(demo, first, {"shelve": None})
    await wait_for_status(admin, first, {"SHELVED_OFFLOADED"})
    cloud.settings.scheduler_cache_seconds = 0  # the scheduler sees the host go down at once
    await force_down(admin, host)  # the one host the group allows
    assert (await act(demo, first, {"unshelve": None})).status_code == 202
    assert any("No valid host" in f for f in await wait_for_fault(cloud, first))
    server = (await admin.get(f"{SERVERS}/{first}")).json()["server"]
    assert server["status"] == "SHELVED_OFFLOADED" and server["OS-EXT-STS:task_state"] is None
    assert server["OS-EXT-SRV-ATTR:host"] is None


# -- the other policies ----------------------------------------------------------------------
@pytest.mark.parametrize("settings_overrides", [{"computes": 3}])
async def test_an_affinity_member_cannot_leave_its_host(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    """As in Nova: the group's host is the only one it allows, and a move
    excludes the source."""
    first, second = await boot_group(demo, "affinity")
    host = await host_of(admin, first)
    assert await host_of(admin, second) == host
    assert (await act(admin, first, {"migrate": None})).status_code == 202
    await assert_not_moved(cloud, admin, first, host, "migrate", "conductor_migrate_server")


# Stacking that the group's weigher (multiplier 1) outweighs.
SOFT_STACK = {"ram_weight_multiplier": -0.5, "cpu_weight_multiplier": 0.0,
              "disk_weight_multiplier": 0.0, "computes": 3}


@pytest.mark.parametrize("settings_overrides", [SOFT_STACK])
async def test_soft_anti_affinity_weighs_the_move_away_from_the_other_member(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    first, second = await boot_group(demo, "soft-anti-affinity")
    taken = {await host_of(admin, first), await host_of(admin, second)}
    (free,) = set(fake_drivers(cloud)) - taken
    assert (await act(admin, first, {"migrate": None})).status_code == 202
    await wait_for_status(admin, first, {"VERIFY_RESIZE"})
    assert await host_of(admin, first) == free


# -- a move in flight holds its destination --------------------------------------------------
@pytest.mark.parametrize("settings_overrides", [{**STACK, "computes": 3,
                                                "scheduler_cache_seconds": 0.0}])
async def test_a_member_moving_to_a_host_holds_it_against_the_group(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    """While a member's live migration runs, its record still names the
    source: the destination must count as the member's all the same."""
    group = await new_group(demo, "anti-affinity")
    first, second = await boot_members(demo, group, "member", 2)
    source = await host_of(admin, first)
    (free,) = set(fake_drivers(cloud)) - {source, await host_of(admin, second)}
    release = asyncio.Event()
    fake_drivers(cloud)[source].faults["live_migration"].append(hold(release))
    body = {"os-migrateLive": {"host": None, "block_migration": "auto"}}
    assert (await act(admin, first, body, "2.68")).status_code == 202
    try:
        assert (await wait_for_migration(admin, {"running"}))["dest_compute"] == free
        (third,) = await boot_members(demo, group, "third", 1, frozenset({"ACTIVE", "ERROR"}))
        server = (await demo.get(f"{SERVERS}/{third}")).json()["server"]
        assert server["status"] == "ERROR" and "No valid host" in server["fault"]["message"]
    finally:
        release.set()
    await wait_for_migration(admin, {"completed"})
    await wait_for_status(admin, first, {"ACTIVE"})
    assert await host_of(admin, first) == free
