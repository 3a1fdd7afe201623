"""Compute and the real block storage together (issue 20): no fake between
them — the attach, boot-from-volume and delete paths through the cloud's own
volume service on the file backend."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.functional.servers import (active_server, create_server, server_body, upload_image,
                                      wait_for_status)
from tests.functional.volumes import create_volume, volume_url

SERVERS = "/compute/v2.1/servers"


async def _volume_status(client: httpx.AsyncClient, volume_id: str, statuses: set[str],
                         timeout: float = 30.0) -> dict[str, Any]:
    """The volume once its status is one of ``statuses`` (404: "deleted")."""
    base = await volume_url(client)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        resp = await client.get(f"{base}/volumes/{volume_id}")
        volume: dict[str, Any] = resp.json().get("volume", {"status": "deleted"}) \
            if resp.status_code in (200, 404) else {"status": f"HTTP {resp.status_code}"}
        if volume["status"] in statuses:
            return volume
        assert loop.time() < deadline, f"volume {volume_id} stayed {volume['status']}"
        await asyncio.sleep(0.05)


async def test_attach_and_detach_a_real_volume(demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    volume = await create_volume(demo)
    await _volume_status(demo, volume["id"], {"available"})
    resp = await demo.post(f"{SERVERS}/{server}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": volume["id"]}})
    assert resp.status_code == 200, resp.text
    shown = await _volume_status(demo, volume["id"], {"in-use"})
    assert [a["server_id"] for a in shown["attachments"]] == [server]
    listed = (await demo.get(f"{SERVERS}/{server}/os-volume_attachments")).json()
    assert [a["volumeId"] for a in listed["volumeAttachments"]] == [volume["id"]]
    # An in-use volume cannot be attached again, nor deleted.
    again = await demo.post(f"{SERVERS}/{server}/os-volume_attachments",
                            json={"volumeAttachment": {"volumeId": volume["id"]}})
    assert again.status_code in (400, 409), again.text
    base = await volume_url(demo)
    assert (await demo.delete(f"{base}/volumes/{volume['id']}")).status_code == 400

    resp = await demo.delete(f"{SERVERS}/{server}/os-volume_attachments/{volume['id']}")
    assert resp.status_code == 202, resp.text
    shown = await _volume_status(demo, volume["id"], {"available"})
    assert shown["attachments"] == []


async def _boot_from_image_volume(client: httpx.AsyncClient, delete_on_termination: bool) -> str:
    image = await upload_image(client)
    body = server_body(None, name="bfv", block_device_mapping_v2=[{
        "source_type": "image", "destination_type": "volume", "uuid": image,
        "boot_index": 0, "volume_size": 1, "delete_on_termination": delete_on_termination}])
    server = await create_server(client, body)
    await wait_for_status(client, server["id"], {"ACTIVE"})
    return str(server["id"])


async def test_boot_from_volume_then_delete_keeps_or_removes_the_volume(
        demo: httpx.AsyncClient) -> None:
    for delete_on_termination, after in ((True, {"deleted"}), (False, {"available"})):
        server = await _boot_from_image_volume(demo, delete_on_termination)
        shown = (await demo.get(f"{SERVERS}/{server}")).json()["server"]
        assert shown["image"] == ""  # volume-backed
        attached = shown["os-extended-volumes:volumes_attached"]
        assert len(attached) == 1
        volume = await _volume_status(demo, attached[0]["id"], {"in-use"})
        assert volume["bootable"] in (True, "true")
        assert (await demo.delete(f"{SERVERS}/{server}")).status_code == 204
        await wait_for_status(demo, server, {"DELETED"})
        await _volume_status(demo, attached[0]["id"], after)
