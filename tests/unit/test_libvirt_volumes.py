"""libvirt volumes without a hypervisor: the ``<disk>`` of each transport,
a volume-backed guest's XML, hot-plug and unplug on a fake domain (live and
persistent), the bounded wait for a guest to let a disk go."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace
from typing import Any

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.libvirt import volume as volmod
from cirrus.virt.libvirt.config import DiskSpec, GuestSpec, disk_xml, guest_xml
from cirrus.virt.libvirt.driver import LibvirtDriver
from tests.unit.libvirt_fakes import fake_driver
from cirrus.virt.libvirt.volume import volume_disk, volume_disks

UUID = "11111111-2222-3333-4444-555555555555"
VOLUME = "99999999-8888-7777-6666-555555555555"
LOCAL = {"driver_volume_type": "local", "serial": VOLUME,
         "data": {"device_path": "/var/lib/cirrus/volumes/v.qcow2", "format": "qcow2"}}
NBD = {"driver_volume_type": "nbd", "serial": VOLUME,
       "data": {"host": "10.0.0.7", "port": 10810, "name": "volume-v", "access_mode": "ro"}}


class LibvirtError(Exception):
    def get_error_message(self) -> str:
        return str(self)


FAKE_LIBVIRT = SimpleNamespace(libvirtError=LibvirtError, VIR_DOMAIN_AFFECT_CONFIG=2,
                               VIR_DOMAIN_AFFECT_LIVE=1, VIR_DOMAIN_XML_INACTIVE=2)
DOMAIN = ("<domain><devices><disk type='file' device='disk'><source file='/x/disk'/>"
          "<target dev='vda' bus='virtio'/></disk></devices></domain>")


class FakeDomain:
    """A domain that records device calls; with ``lingers`` set, an unplugged
    disk stays (a guest that does not let it go)."""

    def __init__(self, active: bool = True, lingers: int = 0) -> None:
        self.active = active
        self.lingers = lingers
        self.live = ET.fromstring(DOMAIN)
        self.calls: list[tuple[str, str, int]] = []
        self.fail: str | None = None

    def isActive(self) -> bool:  # noqa: N802 - libvirt's names
        return self.active

    def XMLDesc(self, flags: int) -> str:  # noqa: N802
        return ET.tostring(self.live, encoding="unicode")

    def attachDeviceFlags(self, xml: str, flags: int) -> None:  # noqa: N802
        if self.fail:
            raise LibvirtError(self.fail)
        self.calls.append(("attach", xml, flags))
        self.live.find("devices").append(ET.fromstring(xml))  # type: ignore[union-attr]

    def detachDeviceFlags(self, xml: str, flags: int) -> None:  # noqa: N802
        self.calls.append(("detach", xml, flags))
        target = ET.fromstring(xml).find("target").get("dev")  # type: ignore[union-attr]
        if not self.lingers:
            self._remove(target)

    def _remove(self, target: str | None) -> None:
        devices = self.live.find("devices")
        for disk in devices.findall("disk"):  # type: ignore[union-attr]
            if disk.find("target").get("dev") == target:  # type: ignore[union-attr]
                devices.remove(disk)  # type: ignore[union-attr]


def _driver(dom: FakeDomain | None) -> LibvirtDriver:
    return fake_driver(FAKE_LIBVIRT, dom)


@pytest.mark.parametrize("info, kind, source, fmt", [
    (LOCAL, "file", {"file": "/var/lib/cirrus/volumes/v.qcow2"}, "qcow2"),
    ({**LOCAL, "data": {"device_path": "/dev/vg/v"}}, "file", {"file": "/dev/vg/v"}, "raw"),
    (NBD, "network", {"protocol": "nbd", "name": "volume-v"}, "raw"),
])
def test_each_transport_is_a_virtio_disk(info: dict[str, Any], kind: str,
                                         source: dict[str, str], fmt: str) -> None:
    disk = ET.fromstring(disk_xml(volume_disk(info, "/dev/vdb")))
    assert (disk.get("type"), disk.get("device")) == (kind, "disk")
    assert disk.find("driver").get("type") == fmt  # type: ignore[union-attr]
    assert disk.find("source").attrib == source  # type: ignore[union-attr]
    assert disk.find("target").attrib == {"dev": "vdb", "bus": "virtio"}  # type: ignore[union-attr]
    assert disk.findtext("serial") == VOLUME[:20]


def test_an_nbd_volume_names_its_server_and_is_read_only_when_exported_so() -> None:
    disk = ET.fromstring(disk_xml(volume_disk(NBD, "/dev/vdc")))
    host = disk.find("source/host")
    assert host is not None and host.attrib == {"name": "10.0.0.7", "port": "10810"}
    assert disk.find("readonly") is not None


def test_an_unknown_transport_is_refused() -> None:
    with pytest.raises(vexc.VolumeAttachFailed, match="iscsi"):
        volume_disk({"driver_volume_type": "iscsi", "data": {}}, "/dev/vdb")


def test_a_volume_backed_guest_boots_from_its_volume() -> None:
    bdi = {"block_device_mapping": [
        {"destination_type": "volume", "device_name": "/dev/vda", "volume_id": VOLUME,
         "connection_info": LOCAL},
        {"destination_type": "local", "device_name": "/dev/vdz"},  # not a volume
        {"destination_type": "volume", "device_name": "/dev/vdb", "connection_info": None}]}
    disks = volume_disks(bdi)
    assert [(d.target, d.path) for d in disks] == [("vda", LOCAL["data"]["device_path"])]
    dom = ET.fromstring(guest_xml(GuestSpec(
        name="instance-1", uuid=UUID, display_name="bfv", flavor_name="m1", virt_type="qemu",
        memory_mb=64, vcpus=1, console_log="/x/console.log", disks=disks, vifs=[])))
    [disk] = dom.findall("devices/disk")
    source = disk.find("source")
    assert source is not None and source.get("file") == LOCAL["data"]["device_path"]
    assert dom.find("os/boot").get("dev") == "hd"  # type: ignore[union-attr]


def test_the_config_drive_takes_a_device_no_volume_has() -> None:
    driver = _driver(None)
    volumes = [DiskSpec("/v1", "vdb"), DiskSpec("/v2", "vdc")]
    assert driver._get_disk_info({"config_drive": True}, volumes)["disk.config"] == "vdz"
    assert driver._get_disk_info({"config_drive": True})["disk.config"] == "vdz"
    every = [DiskSpec(f"/v{c}", f"vd{c}") for c in "bcdefghijklmnopqrstuvwxyz" if c != "q"]
    assert driver._get_disk_info({"config_drive": True}, every)["disk.config"] == "vdq"


@pytest.mark.parametrize("active, flags", [(True, 3), (False, 2)], ids=["running", "shut-off"])
async def test_attach_is_live_and_persistent_on_a_running_guest(active: bool,
                                                                flags: int) -> None:
    dom = FakeDomain(active=active)
    await _driver(dom).attach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")
    [(op, xml, used)] = dom.calls
    assert (op, used) == ("attach", flags)
    assert ET.fromstring(xml).find("target").get("dev") == "vdb"  # type: ignore[union-attr]


async def test_a_refused_attach_is_volume_attach_failed() -> None:
    dom = FakeDomain()
    dom.fail = "unable to open disk path"
    with pytest.raises(vexc.VolumeAttachFailed, match="unable to open"):
        await _driver(dom).attach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")


async def test_detach_unplugs_and_returns_once_the_disk_is_gone() -> None:
    dom = FakeDomain()
    driver = _driver(dom)
    await driver.attach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")
    await driver.detach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")
    assert [c[0] for c in dom.calls] == ["attach", "detach"]
    assert not volmod.has_target(dom.XMLDesc(0), "vdb")
    assert volmod.has_target(dom.XMLDesc(0), "vda")  # the root untouched


async def test_detaching_what_is_not_there_is_not_an_error() -> None:
    dom = FakeDomain()
    await _driver(dom).detach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdq")
    assert dom.calls == []
    await _driver(None).detach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")  # no guest


async def test_a_guest_that_keeps_the_disk_fails_the_detach_after_the_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(volmod, "DETACH_TIMEOUT", 0.05)
    monkeypatch.setattr(volmod, "DETACH_POLL", 0.01)
    dom = FakeDomain()
    driver = _driver(dom)
    await driver.attach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")
    dom.lingers = 1  # the guest never lets it go
    with pytest.raises(vexc.DeviceDetachFailed, match="still has it"):
        await driver.detach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")


def test_the_connector_names_the_host_and_its_reachable_address() -> None:
    driver = _driver(None)
    assert driver.get_volume_connector({"uuid": UUID})["host"] == "compute1"
    driver.settings.live_migration_inbound_addr = "10.0.0.2"  # type: ignore[attr-defined]
    assert driver.get_volume_connector({"uuid": UUID})["ip"] == "10.0.0.2"


NEW = {"driver_volume_type": "local", "serial": "77777777-0000-0000-0000-000000000000",
       "data": {"device_path": "/var/lib/cirrus/volumes/new", "format": "raw"}}
SWAP_LIBVIRT = SimpleNamespace(**vars(FAKE_LIBVIRT), VIR_DOMAIN_BLOCK_COPY_REUSE_EXT=2,
                               VIR_DOMAIN_BLOCK_COPY_TRANSIENT_JOB=4,
                               VIR_DOMAIN_BLOCK_JOB_ABORT_PIVOT=2)


class CopyingDomain(FakeDomain):
    """A domain whose block copy reaches sync after ``polls`` looks (never
    with ``polls`` None); a pivot puts the copy's source in the live disk."""

    def __init__(self, polls: int | None = 2, active: bool = True) -> None:
        super().__init__(active=active)
        self.polls = polls
        self.copy: str | None = None

    def blockCopy(self, disk: str, xml: str, params: Any, flags: int) -> None:  # noqa: N802
        self.calls.append(("copy", xml, flags))
        self.copy = xml

    def blockJobInfo(self, disk: str, flags: int) -> dict[str, int]:  # noqa: N802
        if self.polls is None or self.polls > 0:
            self.polls = None if self.polls is None else self.polls - 1
            return {"cur": 1, "end": 10}
        return {"cur": 10, "end": 10}

    def blockJobAbort(self, disk: str, flags: int) -> None:  # noqa: N802
        self.calls.append(("abort", disk, flags))
        if flags == 2 and self.copy is not None:
            self._remove(disk)
            self.live.find("devices").append(ET.fromstring(self.copy))  # type: ignore


def _swap_driver(dom: FakeDomain, monkeypatch: pytest.MonkeyPatch) -> LibvirtDriver:
    monkeypatch.setattr(volmod, "SWAP_POLL", 0.0)
    driver = _driver(dom)
    driver._host.libvirt = SWAP_LIBVIRT  # type: ignore[union-attr]
    return driver


def _source(dom: FakeDomain, target: str) -> str | None:
    for disk in dom.live.findall("./devices/disk"):
        if disk.find("target").get("dev") == target:  # type: ignore[union-attr]
            return disk.find("source").get("file")  # type: ignore[union-attr]
    return None


async def test_swap_copies_then_pivots_and_persists_the_new_volume(
        monkeypatch: pytest.MonkeyPatch) -> None:
    dom = CopyingDomain(polls=2)
    driver = _swap_driver(dom, monkeypatch)
    await driver.attach_volume(None, LOCAL, {"uuid": UUID}, "/dev/vdb")
    await driver.swap_volume(None, LOCAL, NEW, {"uuid": UUID}, "/dev/vdb")
    assert [(op, flags) for op, _, flags in dom.calls] == [
        ("attach", 3), ("copy", 2 | 4), ("abort", 2), ("detach", 2), ("attach", 2)]
    assert _source(dom, "vdb") == "/var/lib/cirrus/volumes/new"
    assert _source(dom, "vda") == "/x/disk"  # the root untouched


@pytest.mark.parametrize("dom, match", [
    (CopyingDomain(active=False), "running guest only"),
    (CopyingDomain(polls=None), "took over"),
], ids=["shut-off", "never-in-sync"])
async def test_a_swap_that_cannot_finish_leaves_the_old_volume(
        dom: CopyingDomain, match: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(volmod, "SWAP_TIMEOUT", 0.05)
    driver = _swap_driver(dom, monkeypatch)
    dom.live.find("devices").append(ET.fromstring(disk_xml(volume_disk(LOCAL, "/dev/vdb"))))  # type: ignore
    with pytest.raises(vexc.VolumeAttachFailed, match=match):
        await driver.swap_volume(None, LOCAL, NEW, {"uuid": UUID}, "/dev/vdb")
    assert _source(dom, "vdb") == "/var/lib/cirrus/volumes/v.qcow2"
    assert ("abort", "vdb", 2) not in dom.calls  # never pivoted


async def test_a_refused_copy_is_volume_attach_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    dom = CopyingDomain()

    def refuse(*args: Any) -> None:
        raise LibvirtError("block copy still active: disk 'vdb' already in active block job")
    dom.blockCopy = refuse  # type: ignore[method-assign,assignment]
    with pytest.raises(vexc.VolumeAttachFailed, match="already in active block job"):
        await _swap_driver(dom, monkeypatch).swap_volume(None, LOCAL, NEW, {"uuid": UUID},
                                                         "/dev/vdb")
