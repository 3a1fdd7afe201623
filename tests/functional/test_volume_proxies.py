"""Nova's ``/os-volumes`` and ``/os-snapshots`` proxies (2.1–2.35) to the
cloud's own block storage: the shapes Tempest's compute schemas check, the
project boundary, the schema's 400s, over quota as 403, and 404 from 2.36."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.functional.servers import active_server
from tests.functional.volumes import volume_url
from tests.security.conftest import Tenants

VOLUMES, SNAPSHOTS = "/compute/v2.1/os-volumes", "/compute/v2.1/os-snapshots"
VOLUME_KEYS = {"id", "status", "size", "availabilityZone", "createdAt", "attachments",
               "displayName", "displayDescription", "volumeType", "snapshotId", "metadata"}


async def _create(client: httpx.AsyncClient, **extra: Any) -> dict[str, Any]:
    resp = await client.post(VOLUMES, json={"volume": {"size": 1, **extra}})
    assert resp.status_code == 200, resp.text
    assert resp.headers["Location"].endswith(f"/os-volumes/{resp.json()['volume']['id']}")
    return dict(resp.json()["volume"])


async def _wait_status(client: httpx.AsyncClient, url: str, key: str, status: str) -> Any:
    for _ in range(500):
        resp = await client.get(url)
        if resp.status_code == 200 and resp.json()[key]["status"] == status:
            return resp.json()[key]
        await asyncio.sleep(0.02)
    raise AssertionError(f"{url} never became {status}: {resp.text}")


async def test_volume_create_show_list_delete(demo: httpx.AsyncClient) -> None:
    made = await _create(demo, display_name="v1", display_description="d",
                         metadata={"k": "v"})
    assert set(made) == VOLUME_KEYS
    assert (made["displayName"], made["displayDescription"], made["metadata"]) == \
        ("v1", "d", {"k": "v"})
    assert made["attachments"] == [{}]
    shown = await _wait_status(demo, f"{VOLUMES}/{made['id']}", "volume", "available")
    assert set(shown) == VOLUME_KEYS and shown["size"] == 1
    for url in (VOLUMES, f"{VOLUMES}/detail"):
        listed = (await demo.get(url)).json()["volumes"]
        assert [v["id"] for v in listed] == [made["id"]]
    assert (await demo.get(f"{VOLUMES}?limit=1&offset=1")).json()["volumes"] == []
    assert (await demo.delete(f"{VOLUMES}/{made['id']}")).status_code == 202
    await _gone(demo, f"{VOLUMES}/{made['id']}")


async def _gone(client: httpx.AsyncClient, url: str) -> None:
    for _ in range(500):
        if (await client.get(url)).status_code == 404:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{url} was not deleted")


async def test_an_attached_volume_shows_its_server(demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    volume = await _create(demo)
    await _wait_status(demo, f"{VOLUMES}/{volume['id']}", "volume", "available")
    resp = await demo.post(f"/compute/v2.1/servers/{server}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": volume["id"]}})
    assert resp.status_code == 200, resp.text
    shown = await _wait_status(demo, f"{VOLUMES}/{volume['id']}", "volume", "in-use")
    assert shown["attachments"] == [{"id": volume["id"], "volumeId": volume["id"],
                                     "serverId": server, "device": "/dev/vdb"}]
    # In use: Nova passes Cinder's 400 on.
    assert (await demo.delete(f"{VOLUMES}/{volume['id']}")).status_code == 400


async def test_snapshot_create_show_list_delete(demo: httpx.AsyncClient) -> None:
    volume = await _create(demo)
    await _wait_status(demo, f"{VOLUMES}/{volume['id']}", "volume", "available")
    resp = await demo.post(SNAPSHOTS, json={"snapshot": {
        "volume_id": volume["id"], "display_name": "s1", "display_description": "d"}})
    assert resp.status_code == 200, resp.text
    snap = resp.json()["snapshot"]
    assert set(snap) == {"id", "volumeId", "status", "size", "createdAt", "displayName",
                         "displayDescription"}
    assert (snap["volumeId"], snap["size"], snap["displayName"]) == (volume["id"], 1, "s1")
    await _wait_status(demo, f"{SNAPSHOTS}/{snap['id']}", "snapshot", "available")
    for url in (SNAPSHOTS, f"{SNAPSHOTS}/detail"):
        assert [s["id"] for s in (await demo.get(url)).json()["snapshots"]] == [snap["id"]]
    assert (await demo.delete(f"{SNAPSHOTS}/{snap['id']}")).status_code == 202
    await _gone(demo, f"{SNAPSHOTS}/{snap['id']}")


async def test_another_projects_volume_is_not_found(tenants: Tenants) -> None:
    demo, alt_demo = tenants.clients["member"], tenants.clients["other"]
    volume = await _create(demo)
    for method in ("GET", "DELETE"):
        resp = await alt_demo.request(method, f"{VOLUMES}/{volume['id']}")
        assert resp.status_code == 404, resp.text
    assert (await alt_demo.get(VOLUMES)).json()["volumes"] == []
    resp = await alt_demo.post(SNAPSHOTS, json={"snapshot": {"volume_id": volume["id"]}})
    assert resp.status_code == 404, resp.text


@pytest.mark.parametrize("body, field", [
    ({"volume": {}}, "volume/size"),
    ({"volume": {"size": 0}}, "volume/size"),
    ({"volume": {"size": -1}}, "volume/size"),
    ({"volume": {"size": "1.5"}}, "volume/size"),
    ({"volume": {"size": 1.5}}, "volume/size"),
    ({"volume": {"size": 1, "name": "x"}}, "volume"),
    ({"volume": {"size": 1, "metadata": "x"}}, "volume/metadata"),
    ({"volume": {"size": 1, "display_name": 5}}, "volume/display_name"),
    ({"volume": 1}, "volume"),
    ({"vol": {"size": 1}}, "volume"),
])
async def test_bad_volume_bodies_are_400(demo: httpx.AsyncClient, body: Any,
                                         field: str) -> None:
    resp = await demo.post(VOLUMES, json=body)
    assert resp.status_code == 400, resp.text
    assert field in resp.json()["badRequest"]["message"]
    assert (await demo.get(VOLUMES)).json()["volumes"] == []


@pytest.mark.parametrize("body, code", [
    ({"snapshot": {}}, 400),
    ({"snapshot": {"volume_id": "x", "force": "maybe"}}, 400),
    ({"snapshot": {"volume_id": "x", "extra": 1}}, 400),
    ({"snapshot": {"volume_id": "no-such-volume"}}, 404),
])
async def test_bad_snapshot_bodies(demo: httpx.AsyncClient, body: Any, code: int) -> None:
    resp = await demo.post(SNAPSHOTS, json=body)
    assert resp.status_code == code, resp.text
    assert (await demo.get(SNAPSHOTS)).json()["snapshots"] == []


async def test_over_quota_is_403(demo: httpx.AsyncClient) -> None:
    resp = await demo.post(VOLUMES, json={"volume": {"size": 100000}})
    assert resp.status_code == 403, resp.text
    assert (await demo.get(VOLUMES)).json()["volumes"] == []
    base = await volume_url(demo)
    usage = (await demo.get(f"{base}/limits")).json()["limits"]["absolute"]
    assert usage["totalGigabytesUsed"] == 0 and usage["totalVolumesUsed"] == 0


async def test_gone_from_2_36(demo: httpx.AsyncClient) -> None:
    v236 = {"OpenStack-API-Version": "compute 2.36"}
    for url in (VOLUMES, f"{VOLUMES}/detail", SNAPSHOTS):
        assert (await demo.get(url, headers=v236)).status_code == 404
    resp = await demo.post(VOLUMES, json={"volume": {"size": 1}}, headers=v236)
    assert resp.status_code == 404
