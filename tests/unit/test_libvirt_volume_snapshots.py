"""Assisted volume snapshots on libvirt without a hypervisor: the snapshot
XML (the volume's disk external into the overlay, every other disk not
taken), the quiesce fallback, the pull and commit of a delete with their
paths beside the active file, and the refusals."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace
from typing import Any

import pytest

from cirrus.virt import exception as vexc
from cirrus.virt.libvirt import volume_snapshot as vs
from cirrus.virt.libvirt.driver import LibvirtDriver
from tests.unit.libvirt_fakes import fake_driver

UUID = "11111111-2222-3333-4444-555555555555"
VOLUME = "99999999-8888-7777-6666-555555555555"


class LibvirtError(Exception):
    def get_error_message(self) -> str:
        return str(self)


FAKE_LIBVIRT = SimpleNamespace(
    libvirtError=LibvirtError, VIR_DOMAIN_SNAPSHOT_CREATE_DISK_ONLY=16,
    VIR_DOMAIN_SNAPSHOT_CREATE_NO_METADATA=4, VIR_DOMAIN_SNAPSHOT_CREATE_REUSE_EXT=32,
    VIR_DOMAIN_SNAPSHOT_CREATE_QUIESCE=64, VIR_DOMAIN_BLOCK_REBASE_RELATIVE=16,
    VIR_DOMAIN_BLOCK_COMMIT_RELATIVE=8)
DOMAIN = ("<domain><devices>"
          "<disk type='file' device='disk'><source file='/i/disk'/><target dev='vda'/></disk>"
          f"<disk type='file' device='disk'><source file='/v/volume-{VOLUME}'/>"
          f"<target dev='vdb'/><serial>{VOLUME[:20]}</serial></disk>"
          "<disk type='network' device='disk'><source protocol='nbd' name='x'/>"
          "<target dev='vdc'/><serial>nbd-volume-serial-xx</serial></disk>"
          "</devices></domain>")


class FakeDomain:
    def __init__(self, active: bool = True, quiesce: bool = True, job_polls: int = 1) -> None:
        self.active, self.quiesce, self.job_polls = active, quiesce, job_polls
        self.calls: list[tuple[Any, ...]] = []

    def isActive(self) -> bool:  # noqa: N802 - libvirt's names
        return self.active

    def XMLDesc(self, flags: int) -> str:  # noqa: N802
        return DOMAIN

    def snapshotCreateXML(self, xml: str, flags: int) -> None:  # noqa: N802
        self.calls.append(("snapshot", xml, flags))
        if flags & FAKE_LIBVIRT.VIR_DOMAIN_SNAPSHOT_CREATE_QUIESCE and not self.quiesce:
            raise LibvirtError("QEMU guest agent is not connected")

    def blockRebase(self, disk: str, base: str | None, bandwidth: int, flags: int) -> None:  # noqa: N802
        self.calls.append(("rebase", disk, base, flags))

    def blockCommit(self, disk: str, base: str | None, top: str | None, bandwidth: int,  # noqa: N802
                    flags: int) -> None:
        self.calls.append(("commit", disk, base, top, flags))

    def blockJobInfo(self, disk: str, flags: int) -> dict[str, int]:  # noqa: N802
        self.job_polls -= 1
        return {"cur": 1, "end": 2} if self.job_polls > 0 else {}


def _driver(dom: FakeDomain | None) -> LibvirtDriver:
    return fake_driver(FAKE_LIBVIRT, dom)


INSTANCE = {"uuid": UUID}
CREATE = {"snapshot_id": "s1", "type": "qcow2", "new_file": f"volume-{VOLUME}.s1"}


async def test_create_takes_the_volume_external_and_nothing_else() -> None:
    dom = FakeDomain()
    await _driver(dom).volume_snapshot_create(None, INSTANCE, VOLUME, CREATE)
    [(_, xml, flags)] = dom.calls
    disks = {d.get("name"): d for d in ET.fromstring(xml).findall("./disks/disk")}
    assert {n: d.get("snapshot") for n, d in disks.items()} == {
        "vda": "no", "vdb": "external", "vdc": "no"}
    assert disks["vdb"].find("source").get("file") == f"/v/volume-{VOLUME}.s1"  # type: ignore[union-attr]
    assert disks["vdb"].find("driver").get("type") == "qcow2"  # type: ignore[union-attr]
    assert flags == 16 | 4 | 32 | 64  # disk only, no metadata, the overlay reused, quiesced


async def test_create_without_a_guest_agent_is_not_quiesced() -> None:
    dom = FakeDomain(quiesce=False)
    await _driver(dom).volume_snapshot_create(None, INSTANCE, VOLUME, CREATE)
    assert [c[2] for c in dom.calls] == [16 | 4 | 32 | 64, 16 | 4 | 32]


@pytest.mark.parametrize("dom, volume, info, reason", [
    (FakeDomain(active=False), VOLUME, CREATE, "not running"),
    (None, VOLUME, CREATE, "not running"),
    (FakeDomain(), "00000000-0000-0000-0000-000000000000", CREATE, "not attached"),
    (FakeDomain(), "nbd-volume-serial-xx", CREATE, "not a file"),
    (FakeDomain(), VOLUME, {**CREATE, "type": "raw"}, "qcow2"),
])
async def test_create_refusals(dom: FakeDomain | None, volume: str, info: dict[str, Any],
                               reason: str) -> None:
    with pytest.raises(vexc.VolumeSnapshotFailed, match=reason):
        await _driver(dom).volume_snapshot_create(None, INSTANCE, volume, info)


async def test_a_refused_snapshot_is_a_volume_snapshot_failure() -> None:
    class Refusing(FakeDomain):
        def snapshotCreateXML(self, xml: str, flags: int) -> None:  # noqa: N802
            raise LibvirtError("overlay missing")
    with pytest.raises(vexc.VolumeSnapshotFailed, match="overlay missing"):
        await _driver(Refusing()).volume_snapshot_create(None, INSTANCE, VOLUME, CREATE)


async def test_delete_pulls_into_the_active_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vs, "MERGE_POLL", 0)
    dom = FakeDomain(job_polls=3)
    await _driver(dom).volume_snapshot_delete(None, INSTANCE, VOLUME, "s1", {
        "type": "qcow2", "volume_id": VOLUME, "file_to_merge": "base", "merge_target_file": None})
    assert dom.calls == [("rebase", "vdb", "/v/base", 16)]
    assert dom.job_polls == 0  # waited until the job was gone
    flat = FakeDomain()
    await _driver(flat).volume_snapshot_delete(None, INSTANCE, VOLUME, "s1", {
        "type": "qcow2", "file_to_merge": None, "merge_target_file": None})
    assert flat.calls == [("rebase", "vdb", None, 0)]


async def test_delete_commits_a_snapshot_into_its_base() -> None:
    dom = FakeDomain()
    await _driver(dom).volume_snapshot_delete(None, INSTANCE, VOLUME, "s1", {
        "type": "qcow2", "file_to_merge": "s1", "merge_target_file": "/other/base"})
    assert dom.calls == [("commit", "vdb", "/other/base", "/v/s1", 8)]


@pytest.mark.parametrize("info, reason", [
    ({"volume_id": VOLUME}, "unknown delete_info type"),
    ({"type": "qcow2", "file_to_merge": None, "merge_target_file": "b"}, "active file"),
    ({"type": "qcow2", "file_to_merge": f"volume-{VOLUME}", "merge_target_file": "b"},
     "active file"),
])
async def test_delete_refusals(info: dict[str, Any], reason: str) -> None:
    with pytest.raises(vexc.VolumeSnapshotFailed, match=reason):
        await _driver(FakeDomain()).volume_snapshot_delete(None, INSTANCE, VOLUME, "s1", info)


async def test_a_merge_that_never_ends_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vs, "MERGE_POLL", 0)
    monkeypatch.setattr(vs, "MERGE_TIMEOUT", 0)
    dom = FakeDomain(job_polls=10 ** 6)
    with pytest.raises(vexc.VolumeSnapshotFailed, match="took over"):
        await _driver(dom).volume_snapshot_delete(None, INSTANCE, VOLUME, "s1", {
            "type": "qcow2", "file_to_merge": None, "merge_target_file": None})
