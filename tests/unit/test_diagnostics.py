"""Diagnostics: the standard body (counts from the lists), the flat counters
of before 2.48, and the libvirt driver's reading of a domain (a fake domain:
the counters libvirt gives, an error where it has none)."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from cirrus.compute.states import PowerState
from cirrus.virt.diagnostics import (CpuDiagnostics, Diagnostics, DiskDiagnostics,
                                     MemoryDiagnostics, NicDiagnostics, legacy)
from cirrus.virt.libvirt import diagnostics as libvirt_diagnostics

DOMAIN_XML = """<domain><devices>
  <disk type='file'><target dev='vda' bus='virtio'/></disk>
  <disk type='file'><target dev='vdb' bus='virtio'/></disk>
  <interface type='bridge'><mac address='fa:16:3e:00:00:01'/><target dev='tap1'/></interface>
  <interface type='bridge'><mac address='fa:16:3e:00:00:02'/></interface>
</devices></domain>"""


class LibvirtError(Exception):
    pass


class FakeDomain:
    """The calls diagnostics make, with a device that has no counters."""

    def __init__(self, broken: set[str] = frozenset(), vcpus_fail: bool = False) -> None:
        self.broken = broken
        self.vcpus_fail = vcpus_fail

    def XMLDesc(self, flags: int) -> str:  # noqa: N802 (libvirt's name)
        return DOMAIN_XML

    def info(self) -> list[int]:
        return [1, 2097152, 1048576, 2, 123]

    def vcpus(self) -> tuple[list[tuple[int, int, int, int]], list[Any]]:
        if self.vcpus_fail:
            raise LibvirtError("not supported")
        return [(0, 1, 1000, 0), (1, 1, 2000, 1)], []

    def blockStats(self, dev: str) -> tuple[int, ...]:  # noqa: N802
        if dev in self.broken:
            raise LibvirtError(dev)
        return (1, 512, 2, 1024, 0)

    def interfaceStats(self, dev: str) -> tuple[int, ...]:  # noqa: N802
        if dev in self.broken:
            raise LibvirtError(dev)
        return (10, 1, 0, 0, 20, 2, 0, 0)


def _read(dom: FakeDomain, **instance: Any) -> libvirt_diagnostics.GuestDiagnostics:
    return libvirt_diagnostics.read(dom, LibvirtError, PowerState.RUNNING, instance, "kvm")


def test_to_dict_counts_the_lists() -> None:
    diags = Diagnostics(state="running", driver="libvirt",
                        cpu_details=[CpuDiagnostics(id=0), CpuDiagnostics(id=1)],
                        nic_details=[NicDiagnostics()], disk_details=[])
    body = diags.to_dict()
    assert (body["num_cpus"], body["num_nics"], body["num_disks"]) == (2, 1, 0)
    assert body["memory_details"] == {"maximum": None, "used": None}
    assert body["nic_details"][0]["mac_address"] is None


@pytest.mark.parametrize("diags, disks, nics, expected", [
    (Diagnostics("running", "libvirt"), [], [], {}),
    (Diagnostics("running", "libvirt", memory_details=MemoryDiagnostics(maximum=512)), [], [],
     {"memory": 524288}),
    (Diagnostics("running", "libvirt", cpu_details=[CpuDiagnostics(id=3, time=7)]), [], [],
     {"cpu3_time": 7}),
    (Diagnostics("running", "libvirt", disk_details=[DiskDiagnostics(1, 2, 3, 4, 5)]), ["sda"],
     [], {"sda_read": 1, "sda_read_req": 2, "sda_write": 3, "sda_write_req": 4,
          "sda_errors": 5}),
    (Diagnostics("running", "libvirt", nic_details=[NicDiagnostics(rx_octets=9)]), [], ["tap"],
     {"tap_rx": 9}),  # what was not measured is left out
])
def test_legacy_counters(diags: Diagnostics, disks: list[str], nics: list[str],
                         expected: dict[str, int]) -> None:
    assert legacy(diags, disks, nics) == expected


def test_libvirt_reads_every_device() -> None:
    launched = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=90)
    found = _read(FakeDomain(), launched_at=launched.replace(tzinfo=None), config_drive=True)
    diags = found.diagnostics
    assert (diags.state, diags.hypervisor, diags.config_drive) == ("running", "kvm", True)
    assert 90 <= (diags.uptime or 0) < 120
    assert diags.memory_details == MemoryDiagnostics(maximum=2048, used=1024)
    assert [(c.id, c.time) for c in diags.cpu_details] == [(0, 1000), (1, 2000)]
    assert found.disk_names == ["vda", "vdb"] and found.nic_names == ["tap1"]
    assert diags.disk_details[0] == DiskDiagnostics(read_bytes=512, read_requests=1,
                                                    write_bytes=1024, write_requests=2,
                                                    errors_count=0)
    # The NIC without a tap device is listed, without counters (Nova).
    assert [n.mac_address for n in diags.nic_details] == ["fa:16:3e:00:00:01",
                                                          "fa:16:3e:00:00:02"]
    assert diags.nic_details[0].rx_octets == 10 and diags.nic_details[1].rx_octets is None


def test_libvirt_leaves_out_what_it_cannot_read() -> None:
    found = _read(FakeDomain(broken={"vdb", "tap1"}, vcpus_fail=True))
    diags = found.diagnostics
    assert diags.cpu_details == [] and diags.uptime is None and diags.config_drive is False
    assert found.disk_names == ["vda"] and len(diags.disk_details) == 1
    assert found.nic_names == [] and [n.mac_address for n in diags.nic_details] == [
        "fa:16:3e:00:00:02"]
