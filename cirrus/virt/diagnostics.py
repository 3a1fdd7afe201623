"""What a hypervisor reports about one running guest: Nova's standard
diagnostics (``nova/objects/diagnostics.py``), the body of
``GET /servers/{id}/diagnostics`` from microversion 2.48.

A driver fills what it can measure and leaves the rest None (the API shows
null); the counts (``num_cpus``, ``num_nics``, ``num_disks``) are those of the
detail lists, as in Nova.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cirrus.compute.states import PowerState

# Nova's power_state.STATE_MAP: the diagnostics' ``state`` names.
STATE_NAMES = {PowerState.NOSTATE: "pending", PowerState.RUNNING: "running",
               PowerState.PAUSED: "paused", PowerState.SHUTDOWN: "shutdown",
               PowerState.CRASHED: "crashed", PowerState.SUSPENDED: "suspended"}


@dataclass
class CpuDiagnostics:
    id: int | None = None
    time: int | None = None  # ns of CPU time used
    utilisation: int | None = None  # percent


@dataclass
class NicDiagnostics:
    mac_address: str | None = None
    rx_octets: int | None = None
    rx_errors: int | None = None
    rx_drop: int | None = None
    rx_packets: int | None = None
    rx_rate: int | None = None
    tx_octets: int | None = None
    tx_errors: int | None = None
    tx_drop: int | None = None
    tx_packets: int | None = None
    tx_rate: int | None = None


@dataclass
class DiskDiagnostics:
    read_bytes: int | None = None
    read_requests: int | None = None
    write_bytes: int | None = None
    write_requests: int | None = None
    errors_count: int | None = None


@dataclass
class MemoryDiagnostics:
    maximum: int | None = None  # MiB
    used: int | None = None  # MiB


@dataclass
class Diagnostics:
    """One guest's diagnostics; ``driver`` is one the API's schema names
    (libvirt, xenapi, vmwareapi, ironic, hyperv)."""

    state: str
    driver: str
    hypervisor: str | None = None
    hypervisor_os: str | None = None
    uptime: int | None = None  # seconds since the guest was launched
    config_drive: bool = False
    memory_details: MemoryDiagnostics = field(default_factory=MemoryDiagnostics)
    cpu_details: list[CpuDiagnostics] = field(default_factory=list)
    nic_details: list[NicDiagnostics] = field(default_factory=list)
    disk_details: list[DiskDiagnostics] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The 2.48 body (JSON-ready, so it crosses the bus as it is)."""
        return {**asdict(self), "num_cpus": len(self.cpu_details),
                "num_nics": len(self.nic_details), "num_disks": len(self.disk_details)}


def legacy(diags: Diagnostics, disk_names: list[str], nic_names: list[str]) -> dict[str, int]:
    """The flat counters Nova's libvirt driver answered before 2.48
    (``cpu0_time``, ``vda_read``, ``tap…_rx``, ``memory`` in KiB), named
    after the guest's devices."""
    out: dict[str, int | None] = {}
    for cpu in diags.cpu_details:
        out[f"cpu{cpu.id}_time"] = cpu.time
    for name, disk in zip(disk_names, diags.disk_details):
        out.update({f"{name}_read_req": disk.read_requests, f"{name}_read": disk.read_bytes,
                    f"{name}_write_req": disk.write_requests, f"{name}_write": disk.write_bytes,
                    f"{name}_errors": disk.errors_count})
    for name, nic in zip(nic_names, diags.nic_details):
        out.update({f"{name}_rx": nic.rx_octets, f"{name}_rx_packets": nic.rx_packets,
                    f"{name}_rx_errors": nic.rx_errors, f"{name}_rx_drop": nic.rx_drop,
                    f"{name}_tx": nic.tx_octets, f"{name}_tx_packets": nic.tx_packets,
                    f"{name}_tx_errors": nic.tx_errors, f"{name}_tx_drop": nic.tx_drop})
    if diags.memory_details.maximum is not None:
        out["memory"] = diags.memory_details.maximum * 1024
    return {k: v for k, v in out.items() if v is not None}
