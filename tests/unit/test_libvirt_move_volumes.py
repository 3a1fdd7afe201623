"""The libvirt driver's volumes in a move: the disk layout takes the
volumes' connection info for the new host, and a live migration's
destination XML carries the volumes as the destination reaches them."""
from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from cirrus.virt.libvirt import migration
from cirrus.virt.libvirt.config import DiskSpec, GuestSpec, guest_xml, with_disks
from cirrus.virt.libvirt.volume import layout_with_volumes, volume_disks

libvirt = pytest.importorskip("libvirt")
ROOT = DiskSpec(path="/i/u1/disk", target="vda", fmt="qcow2")
NBD = {"driver_volume_type": "nbd", "data": {"host": "198.51.100.1", "port": 40001,
                                             "name": "volume-v1", "access_mode": "rw"}}
LOCAL = {"driver_volume_type": "local", "data": {"device_path": "/v/v1", "format": "raw",
                                                 "access_mode": "rw"}}


def bdi(info: dict[str, Any] | None, device: str = "/dev/vdb") -> dict[str, Any]:
    bdms = [] if info is None else [{"destination_type": "volume", "volume_id": "v1",
                                     "device_name": device, "connection_info": info}]
    return {"block_device_mapping": bdms, "root_device_name": "/dev/vda"}


def _domain(disks: list[DiskSpec]) -> str:
    return guest_xml(GuestSpec(name="instance-00000001", uuid="u1", display_name="vm",
                               flavor_name="tiny", virt_type="qemu", memory_mb=128, vcpus=1,
                               console_log="/x/console.log", disks=disks, vifs=[]))


def _sources(xml: str) -> dict[str, dict[str, str]]:
    """target → the disk's source (and its host's attributes for a network disk)."""
    out = {}
    for disk in ET.fromstring(xml).findall("./devices/disk"):
        source = disk.find("source")
        host = source.find("host") if source is not None else None
        found = dict(source.attrib) if source is not None else {}
        if host is not None:
            found.update(host=host.get("name", ""), port=host.get("port", ""))
        out[disk.find("target").get("dev")] = found  # type: ignore[union-attr]
    return out


@pytest.mark.parametrize("info, expected", [
    (None, ["vda", "vdb"]),        # no block device info: the layout as it was
    (NBD, ["vda", "vdb"]),
    (LOCAL, ["vda", "vdb"]),
])
def test_the_layout_takes_the_volumes_for_this_host(info: dict[str, Any] | None,
                                                    expected: list[str]) -> None:
    old = dataclasses.asdict(DiskSpec(path="/elsewhere/v1", target="vdb", fmt="raw",
                                      serial="v1"))
    layout = {"disks": [dataclasses.asdict(ROOT), old], "kernel": "k"}
    got = layout_with_volumes(layout, None if info is None else bdi(info))
    assert [d["target"] for d in got["disks"]] == expected and got["kernel"] == "k"
    volume = got["disks"][1]
    if info is None:
        assert volume == old
    elif info is NBD:
        assert (volume["protocol"], volume["host"], volume["port"], volume["path"]) == \
            ("nbd", "198.51.100.1", 40001, "volume-v1")
    else:
        assert (volume["path"], volume["protocol"]) == ("/v/v1", None)


def test_a_detached_volume_leaves_the_layout() -> None:
    old = dataclasses.asdict(DiskSpec(path="/v/v1", target="vdb", fmt="raw", serial="v1"))
    got = layout_with_volumes({"disks": [dataclasses.asdict(ROOT), old]}, bdi(None))
    assert [d["target"] for d in got["disks"]] == ["vda"]


def test_with_disks_replaces_only_the_disks_at_those_targets() -> None:
    before = _domain([ROOT, DiskSpec(path="/v/v1", target="vdb", fmt="raw", serial="v1")])
    after = with_disks(before, volume_disks(bdi(NBD)))
    sources = _sources(after)
    assert sources["vda"] == {"file": "/i/u1/disk"}
    assert sources["vdb"] == {"protocol": "nbd", "name": "volume-v1",
                              "host": "198.51.100.1", "port": "40001"}
    targets = [d.find("target").get("dev")  # type: ignore[union-attr]
               for d in ET.fromstring(after).findall("./devices/disk")]
    assert targets == ["vda", "vdb"]  # in place, not appended
    assert _sources(with_disks(before, [])) == _sources(before)  # nothing to replace


def test_the_destination_xml_carries_the_volumes() -> None:
    xml = _domain([ROOT, DiskSpec(path="/old/v1", target="vdb", fmt="raw", serial="v1")])
    data = migration.LiveMigrateData(
        shared_storage=True,
        volume_disks=[dataclasses.asdict(v) for v in volume_disks(bdi(NBD))])
    params = migration.migration_params(libvirt, data, False, xml)
    dest = params[libvirt.VIR_MIGRATE_PARAM_DEST_XML]
    assert _sources(dest)["vdb"]["port"] == "40001"
    assert _sources(dest)["vda"] == {"file": "/i/u1/disk"}


def test_without_volumes_the_destination_xml_is_not_sent() -> None:
    xml = _domain([ROOT])
    params = migration.migration_params(libvirt, migration.LiveMigrateData(shared_storage=True),
                                        False, xml)
    assert libvirt.VIR_MIGRATE_PARAM_DEST_XML not in params


async def test_pre_live_migration_reports_the_volumes_as_this_host_reaches_them(
        tmp_path: Path) -> None:
    from tests.unit.test_libvirt_migration_rules import (LiveStubDriver,
                                                         _instance_dir_with_layout)

    driver: Any = LiveStubDriver(tmp_path, None)
    _instance_dir_with_layout(tmp_path, "u1")
    data = await migration.pre_live_migration(driver, {"uuid": "u1"}, [], False, bdi(NBD))
    (disk,) = data["volume_disks"]
    assert (disk["target"], disk["host"], disk["port"]) == ("vdb", "198.51.100.1", 40001)
    plain = await migration.pre_live_migration(driver, {"uuid": "u1"}, [], False, bdi(None))
    assert "volume_disks" not in plain
