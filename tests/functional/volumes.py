"""Helpers for the block storage tests: the caller's v3 URL, creating volumes."""
from __future__ import annotations

from typing import Any

import httpx


async def volume_url(client: httpx.AsyncClient) -> str:
    """``/volume/v3/<project>`` of the client's token, from its catalog."""
    catalog = (await client.get("/identity/v3/auth/catalog")).json()["catalog"]
    url = next(s for s in catalog if s["type"] == "block-storage")["endpoints"][0]["url"]
    return "/volume" + url.split("/volume", 1)[1]


async def create_volume(client: httpx.AsyncClient, size: int = 1, expect: int = 202,
                        **extra: Any) -> dict[str, Any]:
    base = await volume_url(client)
    resp = await client.post(f"{base}/volumes", json={"volume": {"size": size, **extra}})
    assert resp.status_code == expect, resp.text
    return resp.json().get("volume", resp.json())


async def show(client: httpx.AsyncClient, kind: str, item_id: str) -> dict[str, Any]:
    base = await volume_url(client)
    resp = await client.get(f"{base}/{kind}/{item_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()[kind[:-1]]


async def action(client: httpx.AsyncClient, volume_id: str, name: str, arg: Any = None,
                 headers: dict[str, str] | None = None) -> httpx.Response:
    base = await volume_url(client)
    return await client.post(f"{base}/volumes/{volume_id}/action", json={name: arg},
                             headers=headers)
