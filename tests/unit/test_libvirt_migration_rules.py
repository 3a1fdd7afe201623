"""Rules of libvirt moves that need no hypervisor: the migration URI and
flags, and the resize's directory kept aside for a revert."""
from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.libvirt import migration, serial
from cirrus.virt.libvirt.config import GuestSpec, guest_xml, serial_port_of, with_serial_port

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


@pytest.mark.parametrize("block, shared, tunnelled, copies_disks, unsafe", [
    (False, False, False, False, False),
    (True, False, False, True, False),
    (False, False, True, False, False),
    # Shared local disks: libvirt is told the migration is safe.
    (False, True, False, False, True),
    (False, True, True, False, True),
    # A block migration copies the disks; nothing unsafe to allow.
    (True, True, False, True, False),
])
def test_migration_flags(block: bool, shared: bool, tunnelled: bool, copies_disks: bool,
                         unsafe: bool) -> None:
    flags = migration.migration_flags(libvirt, block, tunnelled, shared)
    assert bool(flags & libvirt.VIR_MIGRATE_TUNNELLED) is tunnelled
    for always in (libvirt.VIR_MIGRATE_LIVE, libvirt.VIR_MIGRATE_PEER2PEER,
                   libvirt.VIR_MIGRATE_PERSIST_DEST, libvirt.VIR_MIGRATE_UNDEFINE_SOURCE):
        assert flags & always
    assert bool(flags & libvirt.VIR_MIGRATE_NON_SHARED_INC) is copies_disks
    assert bool(flags & libvirt.VIR_MIGRATE_UNSAFE) is unsafe


@pytest.mark.parametrize("addr, tunnelled, expected", [
    ("198.51.100.12", False, "tcp://198.51.100.12"),
    ("2001:db8::12", False, "tcp://[2001:db8::12]"),
    (None, False, None),  # the destination's host name, as libvirt resolves it
    ("198.51.100.12", True, None),  # the stream rides libvirtd's connection
])
def test_migration_params(addr: str | None, tunnelled: bool, expected: str | None) -> None:
    params = migration.migration_params(
        libvirt, migration.LiveMigrateData(target_connect_addr=addr), tunnelled)
    assert params.get(libvirt.VIR_MIGRATE_PARAM_URI) == expected
    assert len(params) == (expected is not None)


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


# -- live migration against a recording domain ---------------------------------------
class RecordingDomain:
    def __init__(self, error: Exception | None = None, xml: str = "<domain/>") -> None:
        self.calls: list[tuple[str, dict[str, str], int]] = []
        self.error = error
        self.xml = xml

    def XMLDesc(self, flags: int) -> str:
        assert flags & libvirt.VIR_DOMAIN_XML_MIGRATABLE
        return self.xml

    def migrateToURI3(self, uri: str, params: dict[str, str], flags: int) -> None:
        self.calls.append((uri, params, flags))
        if self.error is not None:
            raise self.error


class RecordingHost:
    """What ``live_migration`` needs of ``Host``: one domain, calls run inline."""

    def __init__(self, domain: RecordingDomain | None) -> None:
        self.libvirt = libvirt
        self.domain = domain

    def find_domain(self, conn: Any, uuid: str) -> RecordingDomain | None:
        return self.domain

    async def call(self, fn: Any, *args: Any) -> Any:
        return fn(None, *args)


class LiveStubDriver(StubDriver):
    def __init__(self, root: Path, domain: RecordingDomain | None,
                 inbound_addr: str = "") -> None:
        super().__init__(root)
        self.hostname = "lm2"
        self.host = RecordingHost(domain)
        self.settings = SimpleNamespace(live_migration_uri="", live_migration_scheme="tcp",
                                        live_migration_tunnelled=False,
                                        live_migration_inbound_addr=inbound_addr,
                                        serial_console_enabled=False, host_netns="")
        self.plugged: list[str] = []

    async def plug_vifs(self, instance: dict[str, Any], network_info: Any) -> None:
        self.plugged.append(instance["uuid"])


def _instance_dir_with_layout(root: Path, uuid: str) -> Path:
    (root / uuid).mkdir()
    (root / uuid / "layout.json").write_text("{}")
    return root / uuid


@pytest.mark.parametrize("inbound, expected", [("198.51.100.12", "198.51.100.12"), ("", None)])
async def test_pre_live_migration_reports_shared_disks_and_where_to_connect(
        tmp_path: Path, inbound: str, expected: str | None) -> None:
    driver: Any = LiveStubDriver(tmp_path, None, inbound)
    _instance_dir_with_layout(tmp_path, "u1")
    data = await migration.pre_live_migration(driver, {"uuid": "u1"}, [], False)
    assert data == {"shared_storage": True, "target_connect_addr": expected}
    assert driver.plugged == ["u1"]  # the destination's bridges made first


async def test_pre_live_migration_without_the_disks_needs_a_block_migration(
        tmp_path: Path) -> None:
    driver: Any = LiveStubDriver(tmp_path, None)
    with pytest.raises(vexc.MigrationError, match="block migration"):
        await migration.pre_live_migration(driver, {"uuid": "u1"}, [], False)
    data = await migration.pre_live_migration(driver, {"uuid": "u1"}, [], True)
    assert data["shared_storage"] is False


@pytest.mark.parametrize("data, uri, params, unsafe", [
    ({"shared_storage": True, "target_connect_addr": "198.51.100.12"},
     "qemu+tcp://198.51.100.12/system",
     {libvirt.VIR_MIGRATE_PARAM_URI: "tcp://198.51.100.12"}, True),
    ({"shared_storage": True, "target_connect_addr": None}, "qemu+tcp://lm2/system", {}, True),
])
async def test_live_migration_goes_to_the_inbound_address(
        tmp_path: Path, data: dict[str, Any], uri: str, params: dict[str, str],
        unsafe: bool) -> None:
    domain = RecordingDomain()
    driver: Any = LiveStubDriver(tmp_path, domain)
    inst_dir = _instance_dir_with_layout(tmp_path, "u1")
    await migration.live_migration(driver, {"uuid": "u1"}, "lm2", False,
                                   migration.LiveMigrateData(**data))
    ((called_uri, called_params, flags),) = domain.calls
    assert (called_uri, called_params) == (uri, params)
    assert bool(flags & libvirt.VIR_MIGRATE_UNSAFE) is unsafe
    assert inst_dir.exists()  # shared: the destination's guest uses these very files


async def test_a_block_migration_leaves_no_disks_behind(tmp_path: Path) -> None:
    domain = RecordingDomain()
    driver: Any = LiveStubDriver(tmp_path, domain)
    inst_dir = _instance_dir_with_layout(tmp_path, "u1")
    await migration.live_migration(driver, {"uuid": "u1"}, "lm2", True,
                                   {"shared_storage": False})
    assert domain.calls[0][2] & libvirt.VIR_MIGRATE_NON_SHARED_INC
    assert not inst_dir.exists()


@pytest.mark.parametrize("code, raised", [
    (libvirt.VIR_ERR_OPERATION_ABORTED, vexc.LiveMigrationAborted),
    (libvirt.VIR_ERR_MIGRATE_UNSAFE, vexc.MigrationError),
])
async def test_a_failed_migration_keeps_the_disks_and_says_why(
        tmp_path: Path, code: int, raised: type[Exception]) -> None:
    error = libvirt.libvirtError("refused")
    error.err = (code, 0, "refused", 0, "", None, None, 0, 0)
    driver: Any = LiveStubDriver(tmp_path, RecordingDomain(error))
    inst_dir = _instance_dir_with_layout(tmp_path, "u1")
    with pytest.raises(raised):
        await migration.live_migration(driver, {"uuid": "u1"}, "lm2", True,
                                       {"shared_storage": False})
    assert inst_dir.exists()


async def test_live_migration_of_a_guest_that_is_gone(tmp_path: Path) -> None:
    driver: Any = LiveStubDriver(tmp_path, None)
    with pytest.raises(vexc.InstanceNotFound):
        await migration.live_migration(driver, {"uuid": "u1"}, "lm2", False,
                                       {"shared_storage": True})


# -- the serial console's port on the destination --------------------------------------
def _guest(serial_port: int | None) -> str:
    return guest_xml(GuestSpec(name="instance-00000001", uuid="u1", display_name="vm",
                               flavor_name="tiny", virt_type="qemu", memory_mb=128, vcpus=1,
                               console_log="/x/console.log", disks=[], vifs=[],
                               serial_port=serial_port))


@pytest.mark.parametrize("ss_output, ports", [
    ("LISTEN 0 1000 198.51.100.11:16509 0.0.0.0:*\nLISTEN 0 1 127.0.0.1:12345 0.0.0.0:*\n",
     {16509, 12345}),
    ("LISTEN 0 4096 [::]:22 [::]:*\n", {22}),
    ("", set()),
    ("garbage\n", set()),
])
def test_listening_ports(ss_output: str, ports: set[int]) -> None:
    assert serial.listening_ports(ss_output) == ports


def test_pick_port_avoids_what_is_taken() -> None:
    taken = set(range(10000, 10010)) - {10004}
    assert serial.pick_port(taken, (10000, 10009), random.Random(1), tries=1000) == 10004
    with pytest.raises(OSError, match="10000-10001"):
        serial.pick_port({10000, 10001}, (10000, 10001), random.Random(1))


def test_the_destination_xml_moves_only_the_serial_port() -> None:
    moved = with_serial_port(_guest(12345), 15000)
    assert serial_port_of(moved) == 15000
    assert moved.replace("15000", "12345") == _guest(12345)
    assert serial_port_of(with_serial_port(_guest(None), 15000)) is None  # a file console


@pytest.mark.parametrize("xml, ports, moved", [
    (_guest(12345), [15000], 15000),
    (_guest(12345), None, None),  # the destination chose none: the XML stays
    (_guest(None), [15000], None),  # no TCP serial console to move
])
def test_migration_params_give_the_destination_its_serial_port(
        xml: str, ports: list[int] | None, moved: int | None) -> None:
    data = migration.LiveMigrateData(shared_storage=True)
    if ports is not None:
        data["serial_listen_ports"] = ports
    params = migration.migration_params(libvirt, data, False, xml)
    dest_xml = params.get(libvirt.VIR_MIGRATE_PARAM_DEST_XML)
    assert (None if dest_xml is None else serial_port_of(dest_xml)) == moved


async def test_live_migration_sends_the_destinations_xml(tmp_path: Path) -> None:
    domain = RecordingDomain(xml=_guest(12345))
    driver: Any = LiveStubDriver(tmp_path, domain)
    _instance_dir_with_layout(tmp_path, "u1")
    await migration.live_migration(driver, {"uuid": "u1"}, "lm2", False, migration.LiveMigrateData(
        shared_storage=True, serial_listen_ports=[15001]))
    params = domain.calls[0][1]
    assert serial_port_of(params[libvirt.VIR_MIGRATE_PARAM_DEST_XML]) == 15001


async def test_pre_live_migration_picks_a_serial_port_free_on_the_destination(
        tmp_path: Path) -> None:
    driver: Any = LiveStubDriver(tmp_path, None)
    driver.settings.serial_console_enabled = True
    _instance_dir_with_layout(tmp_path, "u1")
    data = await migration.pre_live_migration(driver, {"uuid": "u1"}, [], False)
    (port,) = data["serial_listen_ports"]
    assert serial.PORT_RANGE[0] <= port <= serial.PORT_RANGE[1]
    listening = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=True)
    assert port not in serial.listening_ports(listening.stdout)
