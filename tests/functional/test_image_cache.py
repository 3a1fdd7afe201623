"""Images across hosts, through the HTTP API: a compute host downloads a boot's
image from the image service's API (with its service credentials) into its
own cache, never reading the service's store; a corrupt download fails the
build with a fault saying so, a failed one goes to another host. The fake
driver downloads only when a test gives it a cache (``FakeDriver.image_cache``)."""
from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute import exception as cexc
from cirrus.virt.driver import Capabilities
from cirrus.virt.imagecache import ImageCache
from cirrus.compute.image_service import ImageMeta, ImageService
from tests.functional.servers import (create_server, fake_drivers, server_body, upload_image,
                                      wait_for_status)

SERVERS = "/compute/v2.1/servers"
DATA = bytes(range(256)) * 40


def give_caches(cloud: Cloud, root: Path) -> dict[str, Path]:
    """Each host's own cache directory (nothing shared with the image store)."""
    dirs = {}
    for host, driver in fake_drivers(cloud).items():
        dirs[host] = root / host / "_base"
        driver.image_cache = ImageCache(dirs[host], driver.virtapi.image_service)
    return dirs


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file()) if directory.exists() else []


async def host_of(admin: httpx.AsyncClient, server_id: str) -> str:
    server = (await admin.get(f"{SERVERS}/{server_id}")).json()["server"]
    return str(server["OS-EXT-SRV-ATTR:host"])


async def boot(client: httpx.AsyncClient, image: str, **extra: Any) -> dict[str, Any]:
    created = await create_server(client, server_body(image, **extra))
    return await wait_for_status(client, created["id"], {"ACTIVE", "ERROR"})


async def test_a_boot_downloads_its_image_into_the_hosts_own_cache(
        cloud: Cloud, admin: httpx.AsyncClient, tmp_path: Path) -> None:
    dirs = give_caches(cloud, tmp_path / "hosts")
    image = await upload_image(admin, data=DATA)
    server = await boot(admin, image, availability_zone="nova:compute1")
    assert server["status"] == "ACTIVE", server.get("fault")
    base = dirs["compute1"] / image
    assert base.read_bytes() == DATA
    assert files(dirs["compute2"]) == []
    store = cloud.settings.state_dir / "images"
    assert not base.resolve().is_relative_to(store.resolve())

    # A second boot there uses the cached base: it is not fetched again.
    base.write_bytes(b"kept")
    server = await boot(admin, image, name="again", availability_zone="nova:compute1")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert base.read_bytes() == b"kept"

    # Removed (as the cache manager does), the next boot fetches it again.
    base.unlink()
    server = await boot(admin, image, name="third", availability_zone="nova:compute1")
    assert server["status"] == "ACTIVE", server.get("fault")
    assert base.read_bytes() == DATA


async def test_a_corrupt_download_fails_the_build_with_a_fault_saying_so(
        cloud: Cloud, admin: httpx.AsyncClient, tmp_path: Path) -> None:
    dirs = give_caches(cloud, tmp_path / "hosts")
    image = await upload_image(admin, data=DATA)
    stored = cloud.settings.state_dir / "images" / image
    stored.write_bytes(b"!" + DATA[1:])  # rotted on the image service's disk
    server = await boot(admin, image)
    assert server["status"] == "ERROR"
    message = server["fault"]["message"]
    assert f"Image {image} is corrupt" in message and "sha512" in message
    assert f"expected {hashlib.sha512(DATA).hexdigest()[:12]}" in message
    for directory in dirs.values():
        assert files(directory) == []  # no base, no partial download


class Unreachable:
    """An image service whose downloads break off (a host cut off from it)."""

    def __init__(self, real: ImageService) -> None:
        self.real = real

    async def show(self, image_id: str) -> ImageMeta:
        return await self.real.show(image_id)

    @contextlib.asynccontextmanager
    async def download(self, image_id: str) -> AsyncIterator[AsyncIterator[bytes]]:
        raise cexc.GlanceConnectionFailed(server="glance", reason="connection refused")
        yield  # pragma: no cover

    async def upload(self, image_id: str, chunks: AsyncIterator[bytes], disk_format: str,
                     container_format: str) -> None:
        raise AssertionError("not used")


async def test_a_host_that_cannot_download_reschedules_the_build(
        cloud: Cloud, admin: httpx.AsyncClient, tmp_path: Path) -> None:
    dirs = give_caches(cloud, tmp_path / "hosts")
    cut_off = fake_drivers(cloud)["compute1"]
    assert cut_off.image_cache is not None
    cut_off.image_cache.images = Unreachable(cut_off.virtapi.image_service)
    image = await upload_image(admin, data=DATA)
    server = await boot(admin, image)
    # Whichever host the scheduler tried first, the build ends on compute2.
    assert server["status"] == "ACTIVE", server.get("fault")
    assert await host_of(admin, server["id"]) == "compute2"
    assert files(dirs["compute1"]) == [] and files(dirs["compute2"]) == [image]


async def test_a_boot_of_a_deleted_image_fails_as_not_found(
        cloud: Cloud, admin: httpx.AsyncClient, tmp_path: Path) -> None:
    """The record the build read is gone when the host asks the service."""
    give_caches(cloud, tmp_path / "hosts")
    image = await upload_image(admin, data=DATA)
    for driver in fake_drivers(cloud).values():
        real = driver.virtapi.image_service

        class Deleted(Unreachable):
            async def show(self, image_id: str) -> ImageMeta:
                await admin.delete(f"/image/v2/images/{image_id}")
                return await self.real.show(image_id)
        driver.virtapi._image_service = Deleted(real)
    server = await boot(admin, image)
    assert server["status"] == "ERROR"
    assert "Can not find requested image" in server["fault"]["message"]


# -- the periodic pass ------------------------------------------------------------------
def compute_endpoint(cloud: Cloud, host: str) -> Any:
    return next(s.endpoint for s in cloud.services if s.host == host
                and s.binary == "cirrus-compute")


@pytest.mark.parametrize("has_imagecache, interval, expected", [
    (False, 2400.0, []),
    (True, 2400.0, [2400.0]),
    (True, 0.0, [60.0]),      # Nova: 0 runs at the default 60 s
    (True, -1.0, []),         # -1: never
])
async def test_the_cache_pass_runs_for_drivers_with_a_cache(
        cloud: Cloud, has_imagecache: bool, interval: float, expected: list[float]) -> None:
    endpoint = compute_endpoint(cloud, "compute1")
    endpoint.driver.capabilities = Capabilities(has_imagecache=has_imagecache)
    cloud.settings.image_cache_manager_interval = interval
    tasks = [t for t in endpoint.periodic_tasks() if t.name == "_run_image_cache_manager_pass"]
    assert [t.interval for t in tasks] == expected


async def test_the_pass_hands_the_driver_this_hosts_instances(
        cloud: Cloud, admin: httpx.AsyncClient) -> None:
    image = await upload_image(admin, data=DATA)
    server = await boot(admin, image, availability_zone="nova:compute1")
    await boot(admin, image, name="there", availability_zone="nova:compute2")
    endpoint = compute_endpoint(cloud, "compute1")
    seen: list[list[dict[str, Any]]] = []

    async def manage_image_cache(context: Any, all_instances: list[dict[str, Any]]) -> None:
        seen.append(all_instances)
    endpoint.driver.manage_image_cache = manage_image_cache
    await endpoint.periodics.run_image_cache_manager_pass()
    assert seen == [[{"uuid": server["id"], "image_ref": image}]]
