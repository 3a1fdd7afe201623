"""The SPAWNING save made while the network allocation still runs (Nova's
order: its ``NetworkInfoAsyncWrapper`` allocates while ``_build_and_run_instance``
saves SPAWNING), and what a build does when that allocation then fails or the
server is deleted meanwhile.

The compute's network API is wrapped by one that holds ``allocate_for_instance``
until the test releases it (a fake around the real API, not a mock): the test
sees the instance's state while the allocation is held, then decides how the
allocation ends.
"""
from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.claims.allocations import held
from cirrus.compute import instance as inst
from cirrus.db.engine import Database
from cirrus.network import exception as nexc
from cirrus.network.models import ports
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

# On both databases: on PostgreSQL the save and the allocation run on two writer threads.
pytestmark = [pytest.mark.storage,
              pytest.mark.parametrize("settings_overrides", [{"computes": 1}])]


class HeldNetwork:
    """The compute's network API with ``allocate_for_instance`` held until
    ``release`` is set; it then allocates, or raises ``fail`` if set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.fail: BaseException | None = None

    async def allocate_for_instance(self, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return await self.inner.allocate_for_instance(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _db(cloud: Cloud) -> Database:
    assert cloud.db is not None
    return cloud.db


def _hold_network(cloud: Cloud) -> HeldNetwork:
    manager = next(s.endpoint for s in cloud.services if s.binary == "cirrus-compute")
    network = HeldNetwork(manager.builder.network)
    manager.builder = dataclasses.replace(manager.builder, network=network)
    return network


async def _wait_task_state(cloud: Cloud, uuid: str, task_state: str,
                           timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while (await _db(cloud).read(inst.get, uuid))["task_state"] != task_state:
        assert time.monotonic() < deadline, f"{uuid} never reached task_state {task_state}"
        await asyncio.sleep(0.01)


def _ports_of(conn: sa.Connection, uuid: str) -> int:
    return conn.execute(sa.select(sa.func.count()).select_from(ports).where(
        ports.c.device_id == uuid)).scalar_one()


async def _boot_held(cloud: Cloud, demo: httpx.AsyncClient) -> tuple[HeldNetwork, str]:
    """A server whose network allocation is held, once it is in SPAWNING."""
    network = _hold_network(cloud)
    server = await create_server(demo, server_body(await upload_image(demo)))
    await asyncio.wait_for(network.entered.wait(), 20)
    await _wait_task_state(cloud, server["id"], "spawning")
    return network, server["id"]


async def test_spawning_is_saved_while_the_network_allocation_runs(
        cloud: Cloud, demo: httpx.AsyncClient) -> None:
    network, uuid = await _boot_held(cloud, demo)
    assert not network.release.is_set()
    assert await _db(cloud).read(_ports_of, uuid) == 0  # nothing allocated yet
    network.release.set()
    server = await wait_for_status(demo, uuid, {"ACTIVE", "ERROR"})
    assert server["status"] == "ACTIVE"
    assert server["addresses"]  # spawned with the allocation's network info
    assert await _db(cloud).read(_ports_of, uuid) == 1


async def test_an_allocation_failing_after_spawning_ends_in_error_with_its_claim_released(
        cloud: Cloud, demo: httpx.AsyncClient) -> None:
    network, uuid = await _boot_held(cloud, demo)
    network.fail = nexc.NoMoreNetworks()
    network.release.set()
    server = await wait_for_status(demo, uuid, {"ACTIVE", "ERROR"})
    assert server["status"] == "ERROR"
    assert "No more available networks" in server["fault"]["message"]
    assert await _db(cloud).read(held, uuid) is None
    assert await _db(cloud).read(_ports_of, uuid) == 0


async def test_a_delete_while_the_allocation_is_held_leaves_no_port_or_claim(
        cloud: Cloud, demo: httpx.AsyncClient) -> None:
    network, uuid = await _boot_held(cloud, demo)
    resp = await demo.delete(f"/compute/v2.1/servers/{uuid}")
    assert resp.status_code == 204
    network.release.set()  # should the build still be waiting for it
    await wait_for_status(demo, uuid, {"DELETED"})
    assert await _db(cloud).read(held, uuid) is None
    assert await _db(cloud).read(_ports_of, uuid) == 0
