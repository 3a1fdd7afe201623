"""Helpers for tests of server actions: post one, read the latest instance
action, wait until the server's task is done."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

SERVERS = "/compute/v2.1/servers"


async def act(client: httpx.AsyncClient, server_id: str, body: dict[str, Any],
              version: str = "2.1") -> httpx.Response:
    """POST ``body`` to the server's action URL at ``version``."""
    return await client.post(f"{SERVERS}/{server_id}/action", json=body,
                             headers={"OpenStack-API-Version": f"compute {version}"})


async def last_action(client: httpx.AsyncClient, server_id: str) -> dict[str, Any]:
    """The server's latest instance action, with its events."""
    listed = (await client.get(f"{SERVERS}/{server_id}/os-instance-actions")).json()
    request_id = listed["instanceActions"][0]["request_id"]
    resp = await client.get(f"{SERVERS}/{server_id}/os-instance-actions/{request_id}",
                            headers={"OpenStack-API-Version": "compute 2.84"})
    assert resp.status_code == 200, resp.text
    return resp.json()["instanceAction"]


async def show(client: httpx.AsyncClient, server_id: str, version: str = "2.1") -> dict[str, Any]:
    resp = await client.get(f"{SERVERS}/{server_id}",
                            headers={"OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == 200, resp.text
    return resp.json()["server"]


async def wait_idle(client: httpx.AsyncClient, server_id: str,
                    timeout: float = 20.0) -> dict[str, Any]:
    """The server once no task is running on it."""
    deadline = time.monotonic() + timeout
    while True:
        server = await show(client, server_id)
        if server["OS-EXT-STS:task_state"] is None:
            return server
        assert time.monotonic() < deadline, f"{server_id} stuck in {server['OS-EXT-STS:task_state']}"
        await asyncio.sleep(0.02)
