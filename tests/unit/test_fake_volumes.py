"""The fake driver's volumes: real in-memory state per guest, faults as data."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.fake import FakeDriver, fail_for_instance

INFO = {"driver_volume_type": "local", "data": {"device_path": "/v/1", "format": "raw"}}
GUEST = {"uuid": "u-1", "display_name": "vm", "vcpus": 1, "memory_mb": 64}


async def _spawned(bdi: dict | None = None) -> FakeDriver:
    settings = SimpleNamespace(fake_host_vcpus=4, fake_host_memory_mb=4096,
                               fake_host_disk_gb=40)
    driver = FakeDriver(settings, "compute1")  # type: ignore[arg-type]
    await driver.spawn(None, GUEST, {"id": "img"}, [], None, None, [], bdi)
    return driver


async def test_a_guest_boots_with_the_volumes_of_its_block_device_info() -> None:
    driver = await _spawned({"block_device_mapping": [
        {"destination_type": "volume", "device_name": "/dev/vda", "connection_info": INFO},
        {"destination_type": "local", "device_name": "/dev/vdb"}]})
    assert driver.instances["u-1"].volumes == {"/dev/vda": INFO}


async def test_attach_and_detach_change_the_guest() -> None:
    driver = await _spawned()
    await driver.attach_volume(None, INFO, GUEST, "/dev/vdb")
    assert driver.instances["u-1"].volumes == {"/dev/vdb": INFO}
    with pytest.raises(vexc.VolumeAttachFailed, match="in use"):
        await driver.attach_volume(None, INFO, GUEST, "/dev/vdb")
    await driver.detach_volume(None, INFO, GUEST, "/dev/vdb")
    await driver.detach_volume(None, INFO, GUEST, "/dev/vdb")  # gone already: no error
    assert driver.instances["u-1"].volumes == {}
    assert driver.get_volume_connector(GUEST)["host"] == "compute1"


@pytest.mark.parametrize("op", ["attach_volume", "detach_volume"])
async def test_faults_are_data(op: str) -> None:
    driver = await _spawned()
    if op == "detach_volume":
        await driver.attach_volume(None, INFO, GUEST, "/dev/vdb")
    driver.faults[op].append(fail_for_instance("vm", times=1))
    with pytest.raises(vexc.InstanceSpawnError):
        await getattr(driver, op)(None, INFO, GUEST, "/dev/vdb")
    expected = {} if op == "attach_volume" else {"/dev/vdb": INFO}
    assert driver.instances["u-1"].volumes == expected  # unchanged by the failure
    await getattr(driver, op)(None, INFO, GUEST, "/dev/vdb")  # once only
