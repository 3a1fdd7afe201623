"""Rules of libvirt moves that need no hypervisor: the migration URI and
flags, and the resize's directory kept aside for a revert."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.libvirt import migration

libvirt = pytest.importorskip("libvirt")


@pytest.mark.parametrize("uri, scheme, dest, expected", [
    ("", "tcp", "compute2", "qemu+tcp://compute2/system"),
    ("", "ssh", "compute2", "qemu+ssh://compute2/system"),
    ("qemu+unix:///system?socket=/run/%s/libvirt-sock", "tcp", "c2",
     "qemu+unix:///system?socket=/run/c2/libvirt-sock"),
    ("qemu+tcp://10.0.0.2/system", "tcp", "c2", "qemu+tcp://10.0.0.2/system"),
])
def test_migration_uri(uri: str, scheme: str, dest: str, expected: str) -> None:
    settings = SimpleNamespace(live_migration_uri=uri, live_migration_scheme=scheme)
    assert migration.migration_uri(settings, dest) == expected


@pytest.mark.parametrize("block, copies_disks, tunnelled", [
    (False, False, False), (True, True, False), (False, False, True)])
def test_migration_flags(block: bool, copies_disks: bool, tunnelled: bool) -> None:
    flags = migration.migration_flags(libvirt, block, tunnelled)
    assert bool(flags & libvirt.VIR_MIGRATE_TUNNELLED) is tunnelled
    for always in (libvirt.VIR_MIGRATE_LIVE, libvirt.VIR_MIGRATE_PEER2PEER,
                   libvirt.VIR_MIGRATE_PERSIST_DEST, libvirt.VIR_MIGRATE_UNDEFINE_SOURCE):
        assert flags & always
    assert bool(flags & libvirt.VIR_MIGRATE_NON_SHARED_INC) is copies_disks


class StubDriver:
    """Just what the resize's directory handling touches."""

    def __init__(self, root: Path) -> None:
        self.instances_path = root
        self.settings = SimpleNamespace(shutdown_timeout=0)
        self.powered_off: list[str] = []

    def _instance_dir(self, instance: dict[str, Any]) -> Path:
        return self.instances_path / instance["uuid"]

    async def power_off(self, instance: dict[str, Any], timeout: float = 0,
                        retry_interval: float = 0) -> None:
        self.powered_off.append(instance["uuid"])


async def test_resize_keeps_the_directory_aside(tmp_path: Path) -> None:
    driver: Any = StubDriver(tmp_path)
    instance = {"uuid": "u1"}
    (tmp_path / "u1").mkdir()
    (tmp_path / "u1" / "layout.json").write_text(json.dumps({"disks": []}))
    (tmp_path / "u1" / "disk").write_bytes(b"root")
    info = await migration.migrate_disk_and_power_off(driver, instance, "compute2")
    assert info == {"layout": {"disks": []}, "dest": "compute2"}
    assert driver.powered_off == ["u1"]
    assert (tmp_path / "u1_resize" / "disk").read_bytes() == b"root"
    assert (tmp_path / "u1" / "disk").read_bytes() == b"root"


async def test_a_resize_without_disks_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(vexc.MigrationError):
        await migration.migrate_disk_and_power_off(StubDriver(tmp_path), {"uuid": "u1"}, "c2")


async def test_a_revert_without_what_was_kept_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(vexc.MigrationError):
        await migration.finish_revert_migration(StubDriver(tmp_path), {"uuid": "u1"}, [],
                                                True)
