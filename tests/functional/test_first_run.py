"""A fresh cloud's defaults (cirrus/first_run.py): an image and the demo
project's network, so a first server needs nothing made first; each made once."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.config import Settings
from cirrus.first_run import BLANK_IMAGE, BLANK_SIZE, NETWORK, SUBNET, SUBNET_CIDR, TINY_IMAGE
from tests.conftest import Api, AppTransport, make_settings
from tests.databases import Databases
from tests.functional.servers import create_server, wait_for_status


@pytest.fixture
def settings(tmp_path: Path, database: Databases) -> Any:
    # No tiny guest unless a test builds one: the machine's cache is not the test's.
    s = make_settings(tmp_path, database, bootstrap_defaults=True,
                      tiny_guest_dir=str(tmp_path / "no-tiny"))
    yield s
    database.drop(s)


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[Api]:
    """A cloud on ``settings`` (a start, or a restart on the same database)."""
    cloud = Cloud(settings, http_transport=AppTransport(lambda: cloud.app))
    await cloud.start()
    try:
        yield Api(cloud)
    finally:
        await cloud.stop()


async def names(client: httpx.AsyncClient, path: str, key: str) -> list[str]:
    resp = await client.get(path)
    assert resp.status_code == 200, resp.text
    return sorted(item["name"] for item in resp.json()[key])


async def test_a_fresh_cloud_boots_a_server_with_no_arguments_but_flavor_and_image(
        settings: Settings) -> None:
    async with running(settings) as api, await api.as_user("demo") as demo:
        images = (await demo.get("/image/v2/images", params={"name": BLANK_IMAGE})).json()
        [image] = images["images"]
        assert (image["status"], image["visibility"], image["disk_format"], image["size"]) == (
            "active", "public", "raw", BLANK_SIZE)
        nets = (await demo.get("/network/v2.0/networks")).json()["networks"]
        assert [n["name"] for n in nets] == [NETWORK]
        subnets = (await demo.get("/network/v2.0/subnets")).json()["subnets"]
        assert [(s["name"], s["cidr"], s["network_id"]) for s in subnets] == [
            (SUBNET, SUBNET_CIDR, nets[0]["id"])]
        assert await names(demo, "/network/v2.0/security-groups",
                           "security_groups") == ["default"]
        # `openstack server create --flavor m1.tiny --image cirrus-blank vm1`: no network named.
        body = {"server": {"name": "vm1", "flavorRef": "1", "imageRef": image["id"]}}
        server = await create_server(demo, body)
        active = await wait_for_status(demo, server["id"], {"ACTIVE", "ERROR"})
        assert active["status"] == "ACTIVE", active.get("fault")
        assert list(active["addresses"]) == [NETWORK]
        assert active["addresses"][NETWORK][0]["addr"].startswith("10.10.0.")
        # What the openstack CLI sends (2.37+): `auto` takes the same network.
        body = {"server": {"name": "vm2", "flavorRef": "1", "imageRef": image["id"],
                           "networks": "auto"}}
        server = await create_server(demo, body, version="2.37")
        active = await wait_for_status(demo, server["id"], {"ACTIVE", "ERROR"})
        assert list(active["addresses"]) == [NETWORK], active.get("fault")
        assert await names(demo, "/network/v2.0/networks", "networks") == [NETWORK]


async def test_defaults_are_made_once_and_stay_deleted(settings: Settings) -> None:
    async with running(settings) as api, await api.as_user("demo") as demo:
        image_id = (await demo.get("/image/v2/images")).json()["images"][0]["id"]
        net_id = (await demo.get("/network/v2.0/networks")).json()["networks"][0]["id"]
    async with running(settings) as api, await api.as_user("demo") as demo, \
            await api.as_user("admin") as admin:
        # A restart keeps them as they are, and makes no second one.
        assert [i["id"] for i in (await demo.get("/image/v2/images")).json()["images"]] == [
            image_id]
        assert [n["id"] for n in (await demo.get("/network/v2.0/networks")).json()[
            "networks"]] == [net_id]
        assert (await admin.delete(f"/image/v2/images/{image_id}")).status_code == 204
        subnet = (await demo.get("/network/v2.0/subnets")).json()["subnets"][0]["id"]
        assert (await demo.delete(f"/network/v2.0/subnets/{subnet}")).status_code == 204
        assert (await demo.delete(f"/network/v2.0/networks/{net_id}")).status_code == 204
    async with running(settings) as api, await api.as_user("demo") as demo:
        # The user deleted them: they stay deleted.
        assert (await demo.get("/image/v2/images")).json()["images"] == []
        assert (await demo.get("/network/v2.0/networks")).json()["networks"] == []


async def test_the_tiny_guest_is_the_default_image_when_built(settings: Settings,
                                                               tmp_path: Path) -> None:
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    for name, data in (("vmlinuz", b"kernel"), ("initrd.gz", b"ramdisk"),
                       ("disk.qcow2", b"QFI\xfb disk")):
        (tiny / name).write_bytes(data)
    (tiny / "BUILT").write_text("6.1.0-test-amd64")
    settings.tiny_guest_dir = str(tiny)
    async with running(settings) as api, await api.as_user("demo") as demo:
        images = {i["name"]: i for i in (await demo.get("/image/v2/images")).json()["images"]}
        assert sorted(images) == [TINY_IMAGE, f"{TINY_IMAGE}-kernel", f"{TINY_IMAGE}-ramdisk"]
        disk = images[TINY_IMAGE]
        assert (disk["disk_format"], disk["size"]) == ("qcow2", 9)
        assert disk["kernel_id"] == images[f"{TINY_IMAGE}-kernel"]["id"]
        assert disk["ramdisk_id"] == images[f"{TINY_IMAGE}-ramdisk"]["id"]
        assert images[f"{TINY_IMAGE}-kernel"]["disk_format"] == "aki"
        assert disk["os_command_line"].startswith("console=ttyS0")


async def test_no_defaults_leaves_the_cloud_empty(settings: Settings) -> None:
    settings.bootstrap_defaults = False
    async with running(settings) as api, await api.as_user("demo") as demo:
        assert (await demo.get("/image/v2/images")).json()["images"] == []
        assert (await demo.get("/network/v2.0/networks")).json()["networks"] == []
