"""A cloud whose compute API and computes reach the fake block storage of
``tests/fakes_volume.py``: import ``cloud_options``, ``settings_overrides``
and ``volumes`` into a test module to use it (they replace conftest's)."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable

import httpx
import pytest

from cirrus.bootstrap import Cloud
from tests.fakes_volume import FakeVolumes
from tests.functional.servers import fake_drivers

SERVERS = "/compute/v2.1/servers"


@pytest.fixture
def volumes() -> FakeVolumes:
    return FakeVolumes()


@pytest.fixture
def cloud_options(volumes: FakeVolumes) -> dict[str, Any]:
    return {"volume_api": volumes}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """Boot volumes checked every 10 ms, not every 3 s."""
    return {"block_device_allocate_retries_interval": 0.01}


def guest_volumes(cloud: Cloud, server_id: str) -> dict[str, dict[str, Any]]:
    """The fake guest's plugged volumes (mountpoint → connection info)."""
    for driver in fake_drivers(cloud).values():
        if server_id in driver.instances:
            return driver.instances[server_id].volumes
    raise AssertionError(f"no guest {server_id}")


async def project_of(client: httpx.AsyncClient) -> str:
    """The project of the client's token."""
    resp = await client.get("/identity/v3/auth/tokens",
                            headers={"X-Subject-Token": client.headers["X-Auth-Token"]})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["token"]["project"]["id"])


async def attachments(client: httpx.AsyncClient, server_id: str,
                      version: str = "2.1") -> list[dict[str, Any]]:
    resp = await client.get(f"{SERVERS}/{server_id}/os-volume_attachments",
                            headers={"OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == 200, resp.text
    return list(resp.json()["volumeAttachments"])


async def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Until ``condition()`` holds (AssertionError naming ``what`` after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def wait_for(condition: Callable[[], Awaitable[bool]], what: str,
                   timeout: float = 20.0) -> None:
    """Until the coroutine ``condition()`` returns True."""
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
