"""The guest's domain XML, built as a tree so every value is escaped.

``_get_guest_xml`` in the seeds: name, uuid, memory, vcpus, kernel/initrd/
cmdline (direct kernel boot), disks, one bridge interface per VIF with the
tap name and MAC from network_info, and the serial console to a file that
``os-getConsoleOutput`` reads.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from cirrus.network.model import VIF

CIRRUS_NS = "https://cirrus.dev/xmlns/libvirt/instance/1.0"


@dataclass
class DiskSpec:
    """One disk: a file on the host, or (``protocol`` set) a network export
    — an NBD volume at ``host``:``port``, export ``path``."""

    path: str
    target: str  # vda, vdb…
    fmt: str = "qcow2"
    readonly: bool = False
    protocol: str | None = None  # nbd
    host: str | None = None
    port: int | None = None
    serial: str | None = None  # a volume's id, as the guest sees it (/dev/disk/by-id)
    bus: str = "virtio"


@dataclass
class GuestSpec:
    """Everything the XML needs, already decided by the driver."""

    name: str
    uuid: str
    display_name: str
    flavor_name: str
    virt_type: str
    memory_mb: int
    vcpus: int
    console_log: str
    disks: list[DiskSpec]
    vifs: list[VIF]
    kernel: str | None = None
    ramdisk: str | None = None
    cmdline: str | None = None
    extra: dict[str, str] = field(default_factory=dict)
    # A TCP port on 127.0.0.1 for the serial console (the proxy connects
    # there); the log file still gets everything the guest prints.
    serial_port: int | None = None


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    el = ET.SubElement(parent, tag, {k.rstrip("_"): v for k, v in attrs.items()})
    if text is not None:
        el.text = text
    return el


def _interface(devices: ET.Element, vif: VIF) -> None:
    iface = _sub(devices, "interface", type="bridge")
    _sub(iface, "mac", address=vif["address"])
    _sub(iface, "source", bridge=vif["network"]["bridge"])
    _sub(iface, "target", dev=vif["devname"])
    _sub(iface, "model", type="virtio")
    mtu = (vif["network"].get("meta") or {}).get("mtu")
    if mtu:
        _sub(iface, "mtu", size=str(mtu))


def guest_xml(spec: GuestSpec) -> str:
    """The domain XML for ``spec``."""
    ET.register_namespace("cirrus", CIRRUS_NS)
    dom = ET.Element("domain", type=spec.virt_type)
    _sub(dom, "name", spec.name)
    _sub(dom, "uuid", spec.uuid)
    meta = _sub(_sub(dom, "metadata"), f"{{{CIRRUS_NS}}}instance")
    _sub(meta, f"{{{CIRRUS_NS}}}name", spec.display_name)
    _sub(meta, f"{{{CIRRUS_NS}}}flavor", name=spec.flavor_name)
    _sub(dom, "memory", str(spec.memory_mb), unit="MiB")
    _sub(dom, "vcpu", str(spec.vcpus))

    sysinfo = _sub(_sub(dom, "sysinfo", type="smbios"), "system")
    for key, value in (("manufacturer", "cirrus"), ("product", "OpenStack Compute"),
                       ("serial", spec.uuid), ("uuid", spec.uuid), ("family", "Virtual Machine")):
        _sub(sysinfo, "entry", value, name=key)

    os_el = _sub(dom, "os")
    _sub(os_el, "type", "hvm", arch="x86_64", machine="pc")
    if spec.kernel:
        _sub(os_el, "kernel", spec.kernel)
        if spec.ramdisk:
            _sub(os_el, "initrd", spec.ramdisk)
        if spec.cmdline:
            _sub(os_el, "cmdline", spec.cmdline)
    else:
        _sub(os_el, "boot", dev="hd")
    _sub(os_el, "smbios", mode="sysinfo")
    features = _sub(dom, "features")
    _sub(features, "acpi")
    _sub(features, "apic")
    _sub(dom, "clock", offset="utc")
    _sub(dom, "on_poweroff", "destroy")
    _sub(dom, "on_reboot", "restart")
    _sub(dom, "on_crash", "destroy")

    devices = _sub(dom, "devices")
    # No USB controller: nothing uses it, and probing it slows every TCG boot.
    _sub(devices, "controller", type="usb", model="none")
    for disk in spec.disks:
        devices.append(disk_element(disk))
    for vif in spec.vifs:
        _interface(devices, vif)
    if spec.serial_port is None:
        serial = _sub(devices, "serial", type="file")
        _sub(serial, "source", path=spec.console_log, append="on")
    else:
        serial = _sub(devices, "serial", type="tcp")
        _sub(serial, "source", mode="bind", host="127.0.0.1", service=str(spec.serial_port))
        _sub(serial, "protocol", type="raw")
        _sub(serial, "log", file=spec.console_log, append="on")
    _sub(serial, "target", port="0")
    _sub(devices, "memballoon", model="none")
    _sub(devices, "rng", model="virtio").append(_backend_random())
    return ET.tostring(dom, encoding="unicode")


def disk_element(disk: DiskSpec) -> ET.Element:
    """The ``<disk>`` of ``disk`` (in the domain, or alone to hot-plug it)."""
    kind = "network" if disk.protocol else "file"
    d = ET.Element("disk", type=kind, device="disk")
    _sub(d, "driver", name="qemu", type=disk.fmt)
    if disk.protocol:
        source = _sub(d, "source", protocol=disk.protocol, name=disk.path)
        _sub(source, "host", name=disk.host or "localhost", port=str(disk.port or 10809))
    else:
        _sub(d, "source", file=disk.path)
    _sub(d, "target", dev=disk.target, bus=disk.bus)
    if disk.serial:
        _sub(d, "serial", disk.serial[:20])
    if disk.readonly:
        _sub(d, "readonly")
    return d


def disk_xml(disk: DiskSpec) -> str:
    """``disk``'s XML alone, as ``attachDeviceFlags`` takes it."""
    return ET.tostring(disk_element(disk), encoding="unicode")


def _backend_random() -> ET.Element:
    el = ET.Element("backend", model="random")
    el.text = "/dev/urandom"
    return el


def with_serial_port(xml: str, port: int) -> str:
    """A domain's XML with its serial console listening on ``port`` (the
    destination's XML of a live migration; Nova's ``_update_serial_xml``)."""
    ET.register_namespace("cirrus", CIRRUS_NS)
    dom = ET.fromstring(xml)
    for source in dom.findall("./devices/serial[@type='tcp']/source"):
        source.set("service", str(port))
    return ET.tostring(dom, encoding="unicode")


def serial_port_of(xml: str) -> int | None:
    """The TCP port of a domain's serial console, from its XML (None: no TCP serial)."""
    source = ET.fromstring(xml).find("./devices/serial[@type='tcp']/source")
    service = None if source is None else source.get("service")
    return int(service) if service and service.isdigit() else None


def with_disks(xml: str, disks: list[DiskSpec]) -> str:
    """A domain's XML with each disk at one of ``disks``' targets replaced by
    that disk (a live migration's volumes as the destination reaches them;
    Nova's ``_update_volume_xml``)."""
    ET.register_namespace("cirrus", CIRRUS_NS)
    dom = ET.fromstring(xml)
    by_target = {d.target: d for d in disks}
    devices = dom.find("./devices")
    for i, old in enumerate(list(devices) if devices is not None else []):
        target = old.find("target")
        if old.tag == "disk" and target is not None and target.get("dev") in by_target:
            assert devices is not None
            devices.remove(old)
            devices.insert(i, disk_element(by_target[target.get("dev", "")]))
    return ET.tostring(dom, encoding="unicode")
