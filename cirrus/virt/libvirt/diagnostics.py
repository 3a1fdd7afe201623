"""A libvirt guest's diagnostics, read from its domain as Nova's libvirt
driver reads them: ``info`` (state, memory), ``vcpus`` (CPU time per vCPU),
``blockStats`` per disk and ``interfaceStats`` per tap device named in the
domain's XML. A counter the hypervisor cannot give (libvirtError) is left
out, as in Nova. Memory is in MiB (the API reference's unit; Nova divides
libvirt's KiB by 2**20 there, which rounds a small guest to 0)."""
from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from cirrus.compute.states import PowerState
from cirrus.virt.diagnostics import (STATE_NAMES, CpuDiagnostics, Diagnostics, DiskDiagnostics,
                                     MemoryDiagnostics, NicDiagnostics)


@dataclass
class GuestDiagnostics:
    """The diagnostics and the device names the counters were read from."""

    diagnostics: Diagnostics
    disk_names: list[str]
    nic_names: list[str]


def _uptime(launched_at: Any) -> int | None:
    if not isinstance(launched_at, dt.datetime):
        return None
    if launched_at.tzinfo is None:
        launched_at = launched_at.replace(tzinfo=dt.timezone.utc)
    return max(0, int((dt.datetime.now(dt.timezone.utc) - launched_at).total_seconds()))


def _cpus(dom: Any, error: type[Exception]) -> list[CpuDiagnostics]:
    try:
        infos = dom.vcpus()[0]
    except error:
        return []
    return [CpuDiagnostics(id=int(n), time=int(cpu_time)) for n, _state, cpu_time, _cpu in infos]


def _disks(dom: Any, xml: ET.Element, error: type[Exception]
           ) -> tuple[list[DiskDiagnostics], list[str]]:
    stats, names = [], []
    for target in xml.findall("./devices/disk/target"):
        dev = target.get("dev")
        try:
            rd_req, rd_bytes, wr_req, wr_bytes, errs = dom.blockStats(dev)
        except error:
            continue
        stats.append(DiskDiagnostics(read_bytes=rd_bytes, read_requests=rd_req,
                                     write_bytes=wr_bytes, write_requests=wr_req,
                                     errors_count=errs))
        names.append(str(dev))
    return stats, names


def _nics(dom: Any, xml: ET.Element, error: type[Exception]
          ) -> tuple[list[NicDiagnostics], list[str]]:
    stats, names = [], []
    for interface in xml.findall("./devices/interface"):
        mac = interface.find("mac")
        address = mac.get("address") if mac is not None else None
        target = interface.find("target")
        dev = target.get("dev") if target is not None else None
        if not dev:  # no tap device, no counters (Nova lists the NIC all the same)
            stats.append(NicDiagnostics(mac_address=address))
            continue
        try:
            rx, rx_pkts, rx_errs, rx_drop, tx, tx_pkts, tx_errs, tx_drop = dom.interfaceStats(dev)
        except error:
            continue
        stats.append(NicDiagnostics(mac_address=address, rx_octets=rx, rx_errors=rx_errs,
                                    rx_drop=rx_drop, rx_packets=rx_pkts, tx_octets=tx,
                                    tx_errors=tx_errs, tx_drop=tx_drop, tx_packets=tx_pkts))
        names.append(str(dev))
    return stats, names


def read(dom: Any, error: type[Exception], state: PowerState, instance: dict[str, Any],
         virt_type: str) -> GuestDiagnostics:
    """Diagnostics of the domain ``dom`` (blocking: call it in a worker thread)."""
    xml = ET.fromstring(dom.XMLDesc(0))
    _state, max_mem_kib, mem_kib, _ncpu, _cpu_time = dom.info()
    disks, disk_names = _disks(dom, xml, error)
    nics, nic_names = _nics(dom, xml, error)
    diags = Diagnostics(
        state=STATE_NAMES[state], driver="libvirt", hypervisor=virt_type, hypervisor_os="linux",
        uptime=_uptime(instance.get("launched_at")),
        config_drive=bool(instance.get("config_drive")),
        memory_details=MemoryDiagnostics(maximum=int(max_mem_kib) // 1024,
                                         used=int(mem_kib) // 1024),
        cpu_details=_cpus(dom, error), nic_details=nics, disk_details=disks)
    return GuestDiagnostics(diags, disk_names, nic_names)
