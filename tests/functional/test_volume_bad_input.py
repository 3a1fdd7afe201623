"""Bad input to block storage and to compute's volume paths (issue 20): each
request gets a clear 4xx and changes nothing — the project's volumes (ids,
statuses, sizes, attachments), its volume quota usage and its servers read
the same afterwards. Real block storage (file backend), fake compute driver.

Each case is ``(method, path, body, headers)`` built from the world's ids:
``server`` (ACTIVE, with ``in_use`` attached), ``in_use``, ``available``,
``bfv`` (a server booted from the volume ``root``), ``image``."""
from __future__ import annotations

import asyncio
from typing import Any, Callable

import httpx
import pytest

from tests.functional.servers import active_server, create_server, server_body, upload_image
from tests.functional.servers import wait_for_status
from tests.functional.volumes import volume_url

SERVERS = "/compute/v2.1/servers"
NO_SUCH = "6b8f3a1e-0c1d-4e8b-9f1a-2b3c4d5e6f70"
Request = tuple[str, str, Any, dict[str, str]]
World = dict[str, str]


def vol_create(**volume: Any) -> Callable[[World], Request]:
    return lambda w: ("POST", f"{w['base']}/volumes", {"volume": volume}, {})


def attach(volume_key: str, server_key: str = "server", **extra: Any
           ) -> Callable[[World], Request]:
    return lambda w: ("POST", f"{SERVERS}/{w[server_key]}/os-volume_attachments",
                      {"volumeAttachment": {"volumeId": w.get(volume_key, volume_key),
                                            **extra}}, {})


def boot(*mappings: dict[str, Any], image: bool = False) -> Callable[[World], Request]:
    def build(w: World) -> Request:
        bdms = [{k: (w.get(v, v) if k == "uuid" else v) for k, v in m.items()} for m in mappings]
        body = server_body(w["image"] if image else None, name="bad",
                           block_device_mapping_v2=bdms)
        return ("POST", SERVERS, body, {})
    return build


IMAGE_ROOT = {"source_type": "image", "destination_type": "volume", "uuid": "image",
              "boot_index": 0, "volume_size": 1}
CASES: dict[str, tuple[Callable[[World], Request], tuple[int, ...]]] = {
    # POST /volumes
    "size 0": (vol_create(size=0), (400,)),
    "size -1": (vol_create(size=-1), (400,)),
    "size text": (vol_create(size="big"), (400,)),
    "size fraction": (vol_create(size=1.5), (400,)),
    "size fraction text": (vol_create(size="1.5"), (400,)),
    "size beyond quota": (vol_create(size=100000), (413,)),
    "unknown type": (vol_create(size=1, volume_type="no-such-type"), (404,)),
    "unknown snapshot": (vol_create(snapshot_id=NO_SUCH), (404,)),
    "unknown image": (vol_create(size=1, imageRef=NO_SUCH), (400, 404)),
    "unknown zone": (vol_create(size=1, availability_zone="nowhere"), (400,)),
    "extend smaller": (lambda w: ("POST", f"{w['base']}/volumes/{w['available']}/action",
                                  {"os-extend": {"new_size": 0}}, {}), (400,)),
    # Nova's os-volumes proxy
    "proxy size 0": (lambda w: ("POST", "/compute/v2.1/os-volumes",
                                {"volume": {"size": 0}}, {}), (400,)),
    "proxy beyond quota": (lambda w: ("POST", "/compute/v2.1/os-volumes",
                                      {"volume": {"size": 100000}}, {}), (403,)),
    # os-volume_attachments
    "attach an in-use volume": (attach("in_use", "other"), (400,)),
    "attach it twice": (attach("in_use"), (400,)),
    "attach an unknown volume": (attach(NO_SUCH), (404,)),
    "attach a bad volume id": (attach("not-a-uuid"), (400,)),
    "attach on a bad device": (attach("available", device="/dev/!"), (400,)),
    "detach a root volume": (lambda w: ("DELETE", f"{SERVERS}/{w['bfv']}/"
                                        f"os-volume_attachments/{w['root']}", None, {}), (400,)),
    "detach what is not attached": (lambda w: ("DELETE", f"{SERVERS}/{w['server']}/"
                                               f"os-volume_attachments/{w['available']}",
                                               None, {}), (404,)),
    # block_device_mapping_v2 at boot
    "boot_index text": (boot({**IMAGE_ROOT, "boot_index": "first"}), (400,)),
    "two roots": (boot(IMAGE_ROOT, IMAGE_ROOT), (400,)),
    "no root": (boot({**IMAGE_ROOT, "boot_index": 1}), (400,)),
    "volume_size 0": (boot({**IMAGE_ROOT, "volume_size": 0}), (400,)),
    "volume_size text": (boot({**IMAGE_ROOT, "volume_size": "big"}), (400,)),
    "unknown source volume": (boot({"source_type": "volume", "destination_type": "volume",
                                    "uuid": NO_SUCH, "boot_index": 0}), (400,)),
    "in-use source volume": (boot({"source_type": "volume", "destination_type": "volume",
                                   "uuid": "in_use", "boot_index": 0}), (400,)),
    "not bootable source volume": (boot({"source_type": "volume",
                                         "destination_type": "volume",
                                         "uuid": "available", "boot_index": 0}), (400,)),
    "unknown source image": (boot({**IMAGE_ROOT, "uuid": NO_SUCH}), (400,)),
    "unknown snapshot source": (boot({"source_type": "snapshot", "destination_type": "volume",
                                      "uuid": NO_SUCH, "boot_index": 0}), (400,)),
    "volume to local": (boot({"source_type": "volume", "destination_type": "local",
                              "uuid": "available", "boot_index": 0}), (400,)),
}


async def _wait_volume(client: httpx.AsyncClient, base: str, volume_id: str, status: str) -> None:
    for _ in range(1000):
        if (await client.get(f"{base}/volumes/{volume_id}")).json()["volume"]["status"] == status:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"volume {volume_id} never became {status}")


async def _world(demo: httpx.AsyncClient, with_bfv: bool) -> World:
    base = await volume_url(demo)
    w: World = {"base": base, "server": await active_server(demo),
                "other": await active_server(demo, name="other"),
                "image": await upload_image(demo)}
    for key in ("in_use", "available"):
        resp = await demo.post(f"{base}/volumes", json={"volume": {"size": 1, "name": key}})
        assert resp.status_code == 202, resp.text
        w[key] = resp.json()["volume"]["id"]
        await _wait_volume(demo, base, w[key], "available")
    resp = await demo.post(f"{SERVERS}/{w['server']}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": w["in_use"]}})
    assert resp.status_code == 200, resp.text
    await _wait_volume(demo, base, w["in_use"], "in-use")
    if with_bfv:
        server = await create_server(demo, server_body(None, name="bfv", block_device_mapping_v2=[
            {**IMAGE_ROOT, "uuid": w["image"], "delete_on_termination": False}]))
        w["bfv"] = str(server["id"])
        shown = await wait_for_status(demo, w["bfv"], {"ACTIVE"})
        w["root"] = shown["os-extended-volumes:volumes_attached"][0]["id"]
    return w


async def _state(demo: httpx.AsyncClient, base: str) -> dict[str, Any]:
    """What must not change: volumes, their attachments, usage, servers."""
    volumes = (await demo.get(f"{base}/volumes/detail")).json()["volumes"]
    servers = (await demo.get(f"{SERVERS}/detail")).json()["servers"]
    limits = (await demo.get(f"{base}/limits")).json()["limits"]["absolute"]
    return {"volumes": sorted((v["id"], v["status"], v["size"],
                               tuple(a["server_id"] for a in v["attachments"]))
                              for v in volumes),
            "usage": {k: v for k, v in limits.items() if k.startswith("total")},
            "servers": sorted((s["id"], s["status"],
                               tuple(a["id"] for a in s["os-extended-volumes:volumes_attached"]))
                              for s in servers)}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_bad_input_is_a_4xx_and_changes_nothing(demo: httpx.AsyncClient,
                                                      name: str) -> None:
    build, codes = CASES[name]
    world = await _world(demo, with_bfv="root" in name)
    before = await _state(demo, world["base"])
    method, path, body, headers = build(world)
    resp = await demo.request(method, path, json=body, headers=headers)
    assert resp.status_code in codes, (name, resp.status_code, resp.text)
    message = next(iter(resp.json().values()))["message"]
    assert message and len(message) < 1000, resp.text  # says why, briefly
    assert await _state(demo, world["base"]) == before


async def test_a_boot_volume_beyond_quota_fails_the_build_and_leaves_no_volume(
        demo: httpx.AsyncClient) -> None:
    """As Nova: the API does not ask block storage for quota; the host's
    volume create is refused, the server goes to ERROR with a fault saying
    why, and no volume or usage is left."""
    world = await _world(demo, with_bfv=False)
    before = (await _state(demo, world["base"]))
    _method, _path, body, _headers = boot({**IMAGE_ROOT, "volume_size": 100000})(world)
    server = await create_server(demo, body)
    shown = await wait_for_status(demo, server["id"], {"ERROR"})
    assert "quota" in shown["fault"]["message"].lower(), shown["fault"]
    after = await _state(demo, world["base"])
    assert (after["volumes"], after["usage"]) == (before["volumes"], before["usage"])
