"""Attached volumes follow a server that moves (resize, revert, cold and
live migration, a failed live migration), with the real block storage on
both backends (``file``, and ``nbd`` with real qemu-storage-daemons) and the
fake driver's two hosts: after each move the guest has its volume plugged
with the connection info block storage gave the host it runs on, the volume
has one attachment, on that host, and it is ``in-use``."""
from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any, AsyncIterator

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.virt.exception import MigrationError
from cirrus.virt.fake import FaultRule
from cirrus.volume.backends import volumes_path
from cirrus.volume.backends.nbd import NbdDriver
from tests.functional.servers import active_server, fake_drivers, wait_for_status
from tests.functional.test_moves import act, host_of, wait_for_migration
from tests.functional.volumes import create_volume, show

SERVERS = "/compute/v2.1/servers"
HAS_QSD = shutil.which("qemu-storage-daemon") is not None
BACKENDS = [pytest.param({"volume_backend": "file"}, id="file"),
            pytest.param({"volume_backend": "nbd"}, id="nbd", marks=pytest.mark.skipif(
                not HAS_QSD, reason="qemu-storage-daemon is not installed"))]


@pytest.fixture(params=BACKENDS)
def settings_overrides(request: pytest.FixtureRequest) -> dict[str, Any]:
    return dict(request.param)


@pytest.fixture
async def exports(cloud: Cloud) -> AsyncIterator[NbdDriver]:
    """The nbd backend's exports of this cloud (any left are stopped after the test)."""
    d = NbdDriver(volumes_path(cloud.settings), cloud.settings.volume_format,
                  cloud.settings.volume_nbd_address)
    yield d
    for volume_id in d.exported():
        d.remove_export(volume_id)


async def until(condition: Any, what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := await condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)
    return value


@pytest.fixture
async def attached(demo: httpx.AsyncClient) -> tuple[str, str]:
    """An active server with a volume attached at /dev/vdb: (server, volume)."""
    server = await active_server(demo)
    vol = await create_volume(demo)

    async def available() -> bool:
        return (await show(demo, "volumes", vol["id"]))["status"] == "available"
    await until(available, "the volume available")
    resp = await demo.post(f"{SERVERS}/{server}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": vol["id"]}})
    assert resp.status_code == 200, resp.text
    await settled(demo, vol["id"], "in-use")
    return server, vol["id"]


async def settled(client: httpx.AsyncClient, volume_id: str, status: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        shown = await show(client, "volumes", volume_id)
        return shown if shown["status"] == status else None
    result: dict[str, Any] = await until(done, f"the volume {status}")
    return result


def plugged(cloud: Cloud, host: str, server: str) -> dict[str, Any]:
    """The connection info of the volume the fake guest on ``host`` has at /dev/vdb."""
    return dict(fake_drivers(cloud)[host].instances[server].volumes["/dev/vdb"])


async def check_follows(cloud: Cloud, demo: httpx.AsyncClient, exports: NbdDriver,
                        server: str, volume_id: str, host: str) -> None:
    """The volume is the guest's on ``host``, through an attachment for ``host``."""
    shown = await settled(demo, volume_id, "in-use")
    (att,) = shown["attachments"]
    assert att["server_id"] == server and att["host_name"] == host
    info = plugged(cloud, host, server)
    if cloud.settings.volume_backend == "nbd":
        assert info["driver_volume_type"] == "nbd"
        assert exports.running(volume_id) is not None
        assert info["data"]["port"] == exports._port(volume_id)
    else:
        assert info["driver_volume_type"] == "local"
        assert Path(info["data"]["device_path"]) == exports.path(volume_id)


async def test_resize_confirm_takes_the_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                               admin: httpx.AsyncClient, exports: NbdDriver,
                                               attached: tuple[str, str]) -> None:
    server, volume_id = attached
    source = await host_of(admin, server)
    await check_follows(cloud, demo, exports, server, volume_id, source)
    assert (await act(demo, server, {"resize": {"flavorRef": "2"}})).status_code == 202
    await wait_for_status(demo, server, {"VERIFY_RESIZE"})
    dest = await host_of(admin, server)
    assert dest != source
    await check_follows(cloud, demo, exports, server, volume_id, dest)
    assert (await act(demo, server, {"confirmResize": None})).status_code == 204
    await wait_for_status(demo, server, {"ACTIVE"})
    await check_follows(cloud, demo, exports, server, volume_id, dest)


async def test_resize_revert_brings_the_volume_back(cloud: Cloud, demo: httpx.AsyncClient,
                                                    admin: httpx.AsyncClient,
                                                    exports: NbdDriver,
                                                    attached: tuple[str, str]) -> None:
    server, volume_id = attached
    source = await host_of(admin, server)
    await act(demo, server, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, server, {"VERIFY_RESIZE"})
    assert (await act(demo, server, {"revertResize": None})).status_code == 202
    await wait_for_status(demo, server, {"ACTIVE"})
    assert await host_of(admin, server) == source
    await check_follows(cloud, demo, exports, server, volume_id, source)


async def test_cold_migration_takes_the_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                               admin: httpx.AsyncClient, exports: NbdDriver,
                                               attached: tuple[str, str]) -> None:
    server, volume_id = attached
    source = await host_of(admin, server)
    assert (await act(admin, server, {"migrate": None})).status_code == 202
    await wait_for_status(demo, server, {"VERIFY_RESIZE"})
    dest = await host_of(admin, server)
    assert dest != source
    await check_follows(cloud, demo, exports, server, volume_id, dest)


async def test_live_migration_takes_the_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                               admin: httpx.AsyncClient, exports: NbdDriver,
                                               attached: tuple[str, str]) -> None:
    server, volume_id = attached
    source = await host_of(admin, server)
    before = (await show(demo, "volumes", volume_id))["attachments"][0]["attachment_id"]
    resp = await act(admin, server, {"os-migrateLive": {"host": None,
                                                        "block_migration": "auto"}}, "2.25")
    assert resp.status_code == 202, resp.text
    m = await wait_for_migration(admin, {"completed", "error"})
    assert m["status"] == "completed"
    await wait_for_status(demo, server, {"ACTIVE"})
    dest = await host_of(admin, server)
    assert dest != source
    await check_follows(cloud, demo, exports, server, volume_id, dest)
    after = (await show(demo, "volumes", volume_id))["attachments"][0]["attachment_id"]
    assert after != before  # a new attachment, made for the destination


async def test_a_failed_live_migration_keeps_the_volume_where_it_was(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, exports: NbdDriver,
        attached: tuple[str, str]) -> None:
    server, volume_id = attached
    source = await host_of(admin, server)
    before = await show(demo, "volumes", volume_id)
    fake_drivers(cloud)[source].faults["live_migration"].append(
        FaultRule(error=lambda i: MigrationError(reason="link down")))
    await act(admin, server, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
              "2.25")
    await wait_for_migration(admin, {"error"})
    await wait_for_status(demo, server, {"ACTIVE"})
    await check_follows(cloud, demo, exports, server, volume_id, source)
    after = await show(demo, "volumes", volume_id)
    assert after["attachments"] == before["attachments"]  # the source's, as it was


async def test_a_failed_pre_live_migration_leaves_no_attachment(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, exports: NbdDriver,
        attached: tuple[str, str]) -> None:
    server, volume_id = attached
    source = await host_of(admin, server)
    before = await show(demo, "volumes", volume_id)
    for host, driver in fake_drivers(cloud).items():
        if host != source:
            driver.faults["pre_live_migration"].append(
                FaultRule(error=lambda i: MigrationError(reason="no room")))
    await act(admin, server, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
              "2.25")
    await wait_for_migration(admin, {"error"})
    await wait_for_status(demo, server, {"ACTIVE"})
    assert await host_of(admin, server) == source
    await check_follows(cloud, demo, exports, server, volume_id, source)
    assert (await show(demo, "volumes", volume_id))["attachments"] == before["attachments"]


async def test_deleting_the_server_frees_the_volume_and_its_export(
        cloud: Cloud, demo: httpx.AsyncClient, exports: NbdDriver,
        attached: tuple[str, str]) -> None:
    server, volume_id = attached
    assert (await demo.delete(f"{SERVERS}/{server}")).status_code == 204
    shown = await settled(demo, volume_id, "available")
    assert shown["attachments"] == []

    async def unexported() -> bool:  # just after the detach is saved
        return exports.running(volume_id) is None and exports.exported() == []
    await until(unexported, "the export stopped")
