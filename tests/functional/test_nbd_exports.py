"""The nbd backend through the block storage API, and the volume service's
export supervisor on the cloud's database: an attachment exports the volume
(Cinder's NBD connection info), its delete stops the export, a killed daemon
comes back where its hosts look for it, one that cannot is an error the
owner sees, and a daemon nobody wants is stopped."""
from __future__ import annotations

import os
import shutil
import signal
import uuid
from typing import Any, AsyncIterator

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.volume.backends import volumes_path
from cirrus.volume.backends.nbd import NbdDriver, export_name
from cirrus.volume.exports import ExportSupervisor
from cirrus.volume.manager import make_services
from tests.functional.test_move_volumes import settled, until
from tests.functional.volumes import create_volume, volume_url
from tests.unit.test_nbd_backend import qemu_io, url, wait_gone

pytestmark = pytest.mark.skipif(shutil.which("qemu-storage-daemon") is None,
                                reason="qemu-storage-daemon is not installed")
V344 = {"OpenStack-API-Version": "volume 3.44"}
CONNECTOR = {"host": "compute-9", "ip": "127.0.0.1"}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    # The cloud's own supervisor checks only when it starts: each test runs
    # the checks it asserts on, and nothing restarts a daemon behind it.
    return {"volume_backend": "nbd", "volume_export_check_interval": 3600.0}


@pytest.fixture
async def exports(cloud: Cloud) -> AsyncIterator[NbdDriver]:
    d = NbdDriver(volumes_path(cloud.settings), "raw", cloud.settings.volume_nbd_address)
    yield d
    for volume_id in d.exported():
        d.remove_export(volume_id)


@pytest.fixture
def supervisor(cloud: Cloud, exports: NbdDriver) -> ExportSupervisor:
    assert cloud.db is not None
    return ExportSupervisor(cloud.db, exports)


async def exported_attachment(demo: httpx.AsyncClient) -> tuple[str, dict[str, Any]]:
    """A volume attached (3.44) with a connector: (volume id, attachment)."""
    base = await volume_url(demo)
    vol = await create_volume(demo)
    await settled(demo, vol["id"], "available")
    resp = await demo.post(f"{base}/attachments", headers=V344, json={"attachment": {
        "volume_uuid": vol["id"], "instance_uuid": str(uuid.uuid4()), "connector": CONNECTOR}})
    assert resp.status_code == 200, resp.text
    att = resp.json()["attachment"]
    done = await demo.post(f"{base}/attachments/{att['id']}/action", headers=V344,
                           json={"os-complete": None})
    assert done.status_code == 204
    return vol["id"], att


async def test_an_attachment_is_an_nbd_export_until_deleted(
        demo: httpx.AsyncClient, exports: NbdDriver) -> None:
    volume_id, att = await exported_attachment(demo)
    info = att["connection_info"]
    assert info["driver_volume_type"] == "nbd"
    assert info["data"]["name"] == export_name(volume_id)
    assert info["data"]["host"] == "127.0.0.1" and info["data"]["access_mode"] == "rw"
    assert info["data"]["volume_id"] == volume_id  # the guest's disk serial
    assert "wrote 4096/4096" in qemu_io(url(info), "write -P 0x42 0 4k")
    base = await volume_url(demo)
    assert (await demo.delete(f"{base}/attachments/{att['id']}", headers=V344)).status_code == 200
    await settled(demo, volume_id, "available")
    assert exports.running(volume_id) is None and exports.exported() == []


async def test_the_legacy_actions_export_and_unexport(demo: httpx.AsyncClient,
                                                      exports: NbdDriver) -> None:
    from tests.functional.volumes import action

    vol = await create_volume(demo)
    await settled(demo, vol["id"], "available")
    init = await action(demo, vol["id"], "os-initialize_connection", {"connector": CONNECTOR})
    assert init.status_code == 200 and init.json()["connection_info"]["driver_volume_type"] == "nbd"
    assert exports.running(vol["id"]) is not None
    term = await action(demo, vol["id"], "os-terminate_connection", {"connector": CONNECTOR})
    assert term.status_code == 202
    assert exports.running(vol["id"]) is None  # nothing attached: the export goes


async def test_a_killed_export_is_restarted_on_its_port(
        demo: httpx.AsyncClient, exports: NbdDriver, supervisor: ExportSupervisor) -> None:
    volume_id, att = await exported_attachment(demo)
    qemu_io(url(att["connection_info"]), "write -P 0x24 0 4k")
    pid = exports.running(volume_id)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    result = await supervisor.check()
    assert result.restarted == [volume_id] and not result.failed
    assert "read 4096/4096" in qemu_io(url(att["connection_info"]), "read -P 0x24 0 4k")


async def test_an_export_that_cannot_come_back_is_an_error_its_owner_sees(
        demo: httpx.AsyncClient, exports: NbdDriver, supervisor: ExportSupervisor) -> None:
    volume_id, att = await exported_attachment(demo)
    pid = exports.running(volume_id)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    exports.path(volume_id).rename(exports.path(volume_id).with_suffix(".moved"))
    result = await supervisor.check()
    assert list(result.failed) == [volume_id]
    base = await volume_url(demo)
    shown = (await demo.get(f"{base}/attachments/{att['id']}", headers=V344)).json()
    assert shown["attachment"]["status"] == "error_attaching"
    messages = (await demo.get(f"{base}/messages", headers={
        "OpenStack-API-Version": "volume 3.3"})).json()["messages"]
    assert any(m["resource_uuid"] == volume_id and "NBD export" in m["user_message"]
               for m in messages)


async def test_an_export_no_attachment_wants_is_stopped(
        demo: httpx.AsyncClient, exports: NbdDriver, supervisor: ExportSupervisor) -> None:
    vol = await create_volume(demo)
    await settled(demo, vol["id"], "available")
    exports.ensure_export(vol["id"])  # as a detach cut short would leave it
    assert (await supervisor.check()).removed == []  # too young to be an orphan
    for path in exports.exports_dir.iterdir():
        os.utime(path, (0, 0))
    assert (await supervisor.check()).removed == [vol["id"]]
    assert exports.running(vol["id"]) is None


async def test_the_volume_service_checks_its_exports_when_it_starts(
        cloud: Cloud, demo: httpx.AsyncClient, exports: NbdDriver) -> None:
    """A restarted volume service brings back what the database wants."""
    volume_id, att = await exported_attachment(demo)
    pid = exports.running(volume_id)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_gone(pid)
    assert cloud.db is not None and cloud.transport is not None
    services = make_services(cloud.settings, cloud.db, cloud.transport)
    volume = next(s for s in services if s.binary == "cinder-volume")
    assert "nbd_exports" in [t.name for t in volume.periodic_tasks]
    await volume.start()
    try:
        async def back() -> bool:
            return exports.running(volume_id) is not None
        await until(back, "the export restarted")
    finally:
        await volume.stop()
    qemu_io(url(att["connection_info"]), "read 0 4k")
