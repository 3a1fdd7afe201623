"""Helpers for tests that boot servers through the HTTP API."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from cirrus.bootstrap import Cloud
from cirrus.virt.fake import FakeDriver


async def upload_image(client: httpx.AsyncClient, name: str = "cirros", data: bytes = b"x" * 1024,
                       **extra: Any) -> str:
    """Create and upload an image; its id."""
    resp = await client.post("/image/v2/images", json={
        "name": name, "disk_format": "raw", "container_format": "bare", **extra})
    assert resp.status_code == 201, resp.text
    image_id = resp.json()["id"]
    resp = await client.put(f"/image/v2/images/{image_id}/file", content=data,
                            headers={"Content-Type": "application/octet-stream"})
    assert resp.status_code == 204, resp.text
    return image_id


def server_body(image_id: str | None, name: str = "vm", flavor: str = "1", **extra: Any) -> dict:
    server: dict[str, Any] = {"name": name, "flavorRef": flavor, "networks": "auto", **extra}
    if image_id is not None:
        server["imageRef"] = image_id
    return {"server": server}


async def create_server(client: httpx.AsyncClient, body: dict, version: str = "2.1") -> dict:
    resp = await client.post("/compute/v2.1/servers", json=body,
                             headers={"OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == 202, resp.text
    return resp.json()["server"]


async def wait_for_status(client: httpx.AsyncClient, server_id: str, statuses: set[str],
                          timeout: float = 20.0) -> dict:
    """Poll GET /servers/{id} until its status is in ``statuses``."""
    deadline = time.monotonic() + timeout
    while True:
        resp = await client.get(f"/compute/v2.1/servers/{server_id}")
        if resp.status_code == 404 and "DELETED" in statuses:
            return {"status": "DELETED"}
        assert resp.status_code == 200, resp.text
        server = resp.json()["server"]
        if server["status"] in statuses:
            return server
        assert time.monotonic() < deadline, f"{server_id} stuck in {server['status']} ({server['OS-EXT-STS:task_state']})"
        await asyncio.sleep(0.02)


def fake_drivers(cloud: Cloud) -> dict[str, FakeDriver]:
    """The fake driver of each simulated compute host, by host name."""
    return {s.host: s.endpoint.driver for s in cloud.services if s.binary == "cirrus-compute"}


async def db_count(cloud: Cloud, table: Any, *where: Any) -> int:
    import sqlalchemy as sa

    def count(conn: sa.Connection) -> int:
        return conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one()
    assert cloud.db is not None
    return await cloud.db.read(count)


async def build_events(admin: httpx.AsyncClient, server_id: str) -> list[dict[str, Any]]:
    """The build events (``compute__do_build_and_run_instance``, one per host
    tried) of the server's last action."""
    resp = await admin.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions")
    request_id = resp.json()["instanceActions"][-1]["request_id"]
    resp = await admin.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions/{request_id}",
                           headers={"OpenStack-API-Version": "compute 2.84"})
    return [e for e in resp.json()["instanceAction"]["events"]
            if e["event"] == "compute__do_build_and_run_instance"]


async def ports_of(admin: httpx.AsyncClient, server_id: str) -> list[dict[str, Any]]:
    """The ports whose device is the server."""
    resp = await admin.get("/network/v2.0/ports", params={"device_id": server_id})
    assert resp.status_code == 200, resp.text
    return list(resp.json()["ports"])


async def active_server(client: httpx.AsyncClient, name: str = "vm", **extra: Any) -> str:
    """A new server of a new image, once it is ACTIVE: its id."""
    image = await upload_image(client)
    server = await create_server(client, server_body(image, name=name, **extra))
    await wait_for_status(client, server["id"], {"ACTIVE"})
    return str(server["id"])
