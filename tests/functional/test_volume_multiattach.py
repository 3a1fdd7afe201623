"""A volume type with Cinder's ``multiattach="<is> True"`` extra spec makes
multiattach volumes: one attaches to two servers through compute; retype
follows the type's spec, and refuses to change it while the volume is in use."""
from __future__ import annotations

import asyncio

import httpx

from tests.functional.servers import active_server
from tests.functional.volumes import action, create_volume, show, volume_url

SERVERS = "/compute/v2.1/servers"


async def _status(client: httpx.AsyncClient, volume_id: str, wanted: str) -> dict[str, object]:
    for _ in range(1000):
        shown = await show(client, "volumes", volume_id)
        if shown["status"] == wanted:
            return shown
        await asyncio.sleep(0.02)
    raise AssertionError(f"volume {volume_id} never became {wanted}")


async def test_a_multiattach_type_makes_volumes_two_servers_share(
        admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    base = await volume_url(admin)
    for name, specs in (("shared", {"multiattach": "<is> True"}), ("plain", {})):
        resp = await admin.post(f"{base}/types", json={"volume_type": {
            "name": name, "extra_specs": specs}})
        assert resp.status_code == 200, resp.text
    volume = await create_volume(demo, volume_type="shared")
    assert volume["multiattach"] is True
    assert (await create_volume(demo, volume_type="plain"))["multiattach"] is False
    await _status(demo, volume["id"], "available")

    servers = [await active_server(demo, name=f"vm{i}") for i in range(2)]
    for server in servers:
        resp = await demo.post(f"{SERVERS}/{server}/os-volume_attachments",
                               json={"volumeAttachment": {"volumeId": volume["id"]}})
        assert resp.status_code == 200, resp.text
        await _status(demo, volume["id"], "in-use")
    for _ in range(1000):
        shown = await show(demo, "volumes", volume["id"])
        if len(shown["attachments"]) == 2:
            break
        await asyncio.sleep(0.02)
    assert sorted(a["server_id"] for a in shown["attachments"]) == sorted(servers)

    retype = await action(demo, volume["id"], "os-retype", {"new_type": "plain"})
    assert retype.status_code == 400, retype.text
    assert (await show(demo, "volumes", volume["id"]))["multiattach"] is True
    for server in servers:
        resp = await demo.delete(f"{SERVERS}/{server}/os-volume_attachments/{volume['id']}")
        assert resp.status_code == 202, resp.text
    await _status(demo, volume["id"], "available")
    retype = await action(demo, volume["id"], "os-retype", {"new_type": "plain"})
    assert retype.status_code == 202, retype.text
    assert (await show(demo, "volumes", volume["id"]))["multiattach"] is False
