"""``OS-DCF:diskConfig`` (Nova's DiskConfig extension): kept on create,
update, rebuild and resize, shown in every server view; the image's
``auto_disk_config`` property gives the default, and ``Disabled`` refuses
AUTO (400)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.servers import (create_server, server_body, upload_image,
                                      wait_for_status)
from tests.functional.test_moves import act

SERVERS = "/compute/v2.1/servers"
DCF = "OS-DCF:diskConfig"


async def shown(client: httpx.AsyncClient, server_id: str) -> str:
    return str((await client.get(f"{SERVERS}/{server_id}")).json()["server"][DCF])


async def booted(client: httpx.AsyncClient, image: str, **extra: Any) -> dict[str, Any]:
    server = await create_server(client, server_body(image, **extra))
    await wait_for_status(client, server["id"], {"ACTIVE"})
    return server


@pytest.mark.parametrize("asked, image_says, expected", [
    ("AUTO", None, "AUTO"), ("MANUAL", None, "MANUAL"), (None, None, "MANUAL"),
    (None, "True", "AUTO"), (None, "False", "MANUAL"), ("MANUAL", "True", "MANUAL"),
    (None, "Disabled", "MANUAL"), ("MANUAL", "Disabled", "MANUAL"),
])
async def test_create(demo: httpx.AsyncClient, asked: str | None, image_says: str | None,
                      expected: str) -> None:
    properties: dict[str, Any] = {"auto_disk_config": image_says} if image_says else {}
    image = await upload_image(demo, **properties)
    server = await booted(demo, image, **({DCF: asked} if asked else {}))
    assert server[DCF] == expected  # the create answer
    assert await shown(demo, server["id"]) == expected
    listed = (await demo.get(f"{SERVERS}/detail")).json()["servers"]
    assert {s["id"]: s[DCF] for s in listed}[server["id"]] == expected


async def test_auto_on_an_image_that_disables_it_is_400(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, auto_disk_config="Disabled")
    resp = await demo.post(SERVERS, json=server_body(image, **{DCF: "AUTO"}))
    assert resp.status_code == 400 and "automatic disk resize disabled" in resp.text
    server = await booted(demo, image)
    update = await demo.put(f"{SERVERS}/{server['id']}", json={"server": {DCF: "AUTO"}})
    assert update.status_code == 400
    resize = await act(demo, server["id"], {"resize": {"flavorRef": "2", DCF: "AUTO"}})
    assert resize.status_code == 400
    assert await shown(demo, server["id"]) == "MANUAL"


async def test_update_rebuild_and_resize_change_it(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    server = await booted(demo, image)
    updated = await demo.put(f"{SERVERS}/{server['id']}", json={"server": {DCF: "AUTO"}})
    assert updated.status_code == 200 and updated.json()["server"][DCF] == "AUTO"
    rebuilt = await act(demo, server["id"], {"rebuild": {"imageRef": image, DCF: "MANUAL"}})
    assert rebuilt.status_code == 202 and rebuilt.json()["server"][DCF] == "MANUAL"
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert await shown(demo, server["id"]) == "MANUAL"
    assert (await act(demo, server["id"], {"resize": {"flavorRef": "2", DCF: "AUTO"}})
            ).status_code == 202
    await wait_for_status(demo, server["id"], {"VERIFY_RESIZE"})
    assert await shown(demo, server["id"]) == "AUTO"


async def test_rebuild_onto_an_image_that_disables_it(demo: httpx.AsyncClient) -> None:
    server = await booted(demo, await upload_image(demo), **{DCF: "AUTO"})
    disabled = await upload_image(demo, auto_disk_config="Disabled")
    resp = await act(demo, server["id"], {"rebuild": {"imageRef": disabled, DCF: "AUTO"}})
    assert resp.status_code == 400


@pytest.mark.parametrize("where, body", [
    ("create", None), ("update", {"server": {DCF: "auto"}}),
    ("rebuild", {"rebuild": {DCF: 1}}), ("resize", {"resize": {"flavorRef": "2", DCF: ""}}),
])
async def test_bad_values_are_400(demo: httpx.AsyncClient, where: str,
                                  body: dict[str, Any] | None) -> None:
    image = await upload_image(demo)
    if where == "create":
        resp = await demo.post(SERVERS, json=server_body(image, **{DCF: "SOMETIMES"}))
    else:
        server = await booted(demo, image)
        if where == "update":
            resp = await demo.put(f"{SERVERS}/{server['id']}", json=body)
        else:
            assert body is not None
            if where == "rebuild":
                body["rebuild"]["imageRef"] = image
            resp = await act(demo, server["id"], body)
    assert resp.status_code == 400 and DCF in resp.text, resp.text
