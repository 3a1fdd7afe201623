"""A volume type's encryption specs (``/types/{id}/encryption``, admins
only): create, show, one spec, update, delete; refused while a volume of the
type exists; a volume of an encrypted type shows ``encrypted`` and the
compute API will not attach it (no driver plugs one): 400, nothing changed."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from tests.functional.servers import active_server
from tests.functional.volumes import action, create_volume, show, volume_url

SPECS = {"provider": "luks", "cipher": "aes-xts-plain64", "key_size": 256,
         "control_location": "front-end"}


async def _type(admin: httpx.AsyncClient, name: str) -> tuple[str, str]:
    base = await volume_url(admin)
    resp = await admin.post(f"{base}/types", json={"volume_type": {"name": name}})
    assert resp.status_code == 200, resp.text
    return base, resp.json()["volume_type"]["id"]


async def _available(client: httpx.AsyncClient, volume_id: str) -> None:
    for _ in range(500):
        if (await show(client, "volumes", volume_id))["status"] == "available":
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"volume {volume_id} never became available")


async def _encrypt(admin: httpx.AsyncClient, base: str, type_id: str,
                   specs: dict[str, Any] = SPECS) -> httpx.Response:
    return await admin.post(f"{base}/types/{type_id}/encryption", json={"encryption": specs})


async def test_create_show_update_delete(admin: httpx.AsyncClient,
                                         demo: httpx.AsyncClient) -> None:
    base, type_id = await _type(admin, "secret")
    url = f"{base}/types/{type_id}/encryption"
    assert (await admin.get(url)).json() == {}
    resp = await _encrypt(admin, base, type_id)
    assert resp.status_code == 200, resp.text
    made = resp.json()["encryption"]
    assert {k: made[k] for k in SPECS} == SPECS and made["volume_type_id"] == type_id
    shown = (await admin.get(url)).json()
    assert {k: shown[k] for k in SPECS} == SPECS
    assert shown["encryption_id"] == made["encryption_id"]
    assert (await _encrypt(admin, base, type_id)).status_code == 400  # exists already

    changed = {"provider": "other", "key_size": "128", "control_location": "back-end"}
    resp = await admin.put(f"{url}/{made['encryption_id']}", json={"encryption": changed})
    assert resp.status_code == 200, resp.text
    shown = (await admin.get(url)).json()
    assert (shown["provider"], shown["key_size"], shown["control_location"], shown["cipher"]) \
        == ("other", 128, "back-end", "aes-xts-plain64")
    assert (await admin.get(f"{url}/cipher")).json() == {"cipher": "aes-xts-plain64"}
    assert (await admin.get(f"{url}/nothing")).status_code == 404

    for method in ("GET", "POST", "DELETE"):  # admins only
        resp = await demo.request(method, url, json={"encryption": SPECS})
        assert resp.status_code == 403, (method, resp.text)
    assert (await admin.delete(f"{url}/{made['encryption_id']}")).status_code == 202
    assert (await admin.get(url)).json() == {}
    assert (await admin.delete(f"{url}/{made['encryption_id']}")).status_code == 404


@pytest.mark.parametrize("specs, field", [
    ({"control_location": "front-end"}, "encryption/provider"),
    ({"provider": "luks"}, "encryption/control_location"),
    ({**SPECS, "control_location": "middle"}, "encryption/control_location"),
    ({**SPECS, "key_size": -1}, "encryption/key_size"),
    ({**SPECS, "key_size": "big"}, "encryption/key_size"),
    ({**SPECS, "key_size": True}, "encryption/key_size"),
    ({**SPECS, "provider": 5}, "encryption/provider"),
    ({**SPECS, "colour": "red"}, "encryption"),
])
async def test_bad_specs_are_400(admin: httpx.AsyncClient, specs: dict[str, Any],
                                 field: str) -> None:
    base, type_id = await _type(admin, "bad")
    resp = await _encrypt(admin, base, type_id, specs)
    assert resp.status_code == 400, resp.text
    assert field in resp.text
    assert (await admin.get(f"{base}/types/{type_id}/encryption")).json() == {}


async def test_unknown_type_is_404(admin: httpx.AsyncClient) -> None:
    base = await volume_url(admin)
    assert (await admin.get(f"{base}/types/no-such-type/encryption")).status_code == 404
    assert (await _encrypt(admin, base, "no-such-type")).status_code == 404


async def test_an_encrypted_volume_is_shown_so_and_not_attached(
        admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    base, type_id = await _type(admin, "luks")
    assert (await _encrypt(admin, base, type_id)).status_code == 200
    volume = await create_volume(demo, volume_type="luks")
    assert volume["encrypted"] is True
    plain = await create_volume(demo)
    assert plain["encrypted"] is False
    # The type is in use now: its specs stay as they are.
    url = f"{base}/types/{type_id}/encryption"
    assert (await admin.delete(f"{url}/x")).status_code == 400
    assert (await admin.put(f"{url}/x", json={"encryption": {"key_size": 1}})).status_code == 400
    # Data is not re-encrypted: no retype across encryption.
    retype = await action(demo, plain["id"], "os-retype", {"new_type": "luks"})
    assert retype.status_code == 400, retype.text

    server = await active_server(demo)
    await _available(demo, volume["id"])
    resp = await demo.post(f"/compute/v2.1/servers/{server}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": volume["id"]}})
    assert resp.status_code == 400, resp.text
    assert "encrypted" in resp.json()["badRequest"]["message"]
    assert (await show(demo, "volumes", volume["id"]))["status"] == "available"
    listed = await demo.get(f"/compute/v2.1/servers/{server}/os-volume_attachments")
    assert listed.json()["volumeAttachments"] == []
