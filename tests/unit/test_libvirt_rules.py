"""Rules of the libvirt driver and the tiny guest that need no hypervisor."""
from __future__ import annotations

import base64
import io
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cirrus.image.tiny import module_closure
from cirrus.image.tiny.cpio import CpioWriter
from cirrus.virt.libvirt.config import DiskSpec, GuestSpec, guest_xml
from cirrus.metadata.base import meta_data, network_data, user_data
from cirrus.virt.libvirt.driver import LIBVIRT_POWER_STATE, domain_name
from cirrus.compute.states import PowerState

VIF = {"id": "p1", "address": "fa:16:3e:00:00:01", "devname": "tapp1",
       "network": {"id": "n1", "bridge": "brqn1", "meta": {"mtu": 1450},
                   "subnets": [{"cidr": "10.0.0.0/24", "version": 4, "meta": {"enable_dhcp": True},
                                "dns": [{"address": "10.0.0.1"}],
                                "ips": [{"address": "10.0.0.5"}]}]}}


def _spec(**kw: object) -> GuestSpec:
    base = dict(name="instance-0000002a", uuid="u-1", display_name="a<b>&'\"c",
                flavor_name="m1", virt_type="qemu", memory_mb=128, vcpus=2,
                console_log="/x/console.log",
                disks=[DiskSpec("/x/disk", "vda"), DiskSpec("/x/disk.config", "vdb", "raw", True)],
                vifs=[VIF], kernel="/x/kernel", ramdisk="/x/ramdisk", cmdline="console=ttyS0 a&b")
    base.update(kw)
    return GuestSpec(**base)  # type: ignore[arg-type]


def test_guest_xml_escapes_every_value_and_wires_devices() -> None:
    dom = ET.fromstring(guest_xml(_spec()))
    assert dom.get("type") == "qemu"
    assert dom.findtext("name") == "instance-0000002a"
    assert dom.find("memory").text == "128" and dom.find("memory").get("unit") == "MiB"
    assert dom.findtext("vcpu") == "2"
    ns = "{https://cirrus.dev/xmlns/libvirt/instance/1.0}"
    assert dom.find(f"metadata/{ns}instance/{ns}name").text == "a<b>&'\"c"
    assert dom.findtext("os/kernel") == "/x/kernel"
    assert dom.findtext("os/initrd") == "/x/ramdisk"
    assert dom.findtext("os/cmdline") == "console=ttyS0 a&b"
    disks = dom.findall("devices/disk")
    assert [d.find("target").get("dev") for d in disks] == ["vda", "vdb"]
    assert disks[1].find("readonly") is not None
    iface = dom.find("devices/interface")
    assert iface.get("type") == "bridge"
    assert iface.find("mac").get("address") == VIF["address"]
    assert iface.find("source").get("bridge") == "brqn1"
    assert iface.find("target").get("dev") == "tapp1"
    assert iface.find("mtu").get("size") == "1450"
    serial = dom.find("devices/serial")
    assert serial.get("type") == "file" and serial.find("source").get("path") == "/x/console.log"


def test_guest_without_kernel_boots_from_disk() -> None:
    dom = ET.fromstring(guest_xml(_spec(kernel=None, ramdisk=None, cmdline=None)))
    assert dom.find("os/kernel") is None
    assert dom.find("os/boot").get("dev") == "hd"


def test_domain_names_and_power_states_follow_nova() -> None:
    assert domain_name({"id": 42}) == "instance-0000002a"
    assert LIBVIRT_POWER_STATE[5] == PowerState.SHUTDOWN  # shut off
    assert LIBVIRT_POWER_STATE[3] == PowerState.PAUSED


def test_config_drive_metadata_carries_keys_files_and_password() -> None:
    instance = {"uuid": "u-1", "display_name": "web", "hostname": "web", "key_name": "k",
                "key_data": "ssh-ed25519 AAAA x", "metadata": {"role": "db"},
                "user_data": base64.b64encode(b"#!/bin/sh\necho hi\n").decode()}
    files = [{"path": "/etc/motd", "content_path": "/content/0000"}]
    data = meta_data(instance, files, "s3cret")
    assert data["public_keys"] == {"k": "ssh-ed25519 AAAA x"}
    assert data["meta"] == {"role": "db"} and data["files"] == files
    assert data["admin_pass"] == "s3cret" and data["hostname"] == "web"
    assert user_data(instance) == b"#!/bin/sh\necho hi\n"
    assert meta_data({"uuid": "u"}, [], None).get("admin_pass") is None


def test_config_drive_network_data_lists_links_and_dhcp_networks() -> None:
    data = network_data([VIF])
    assert data["links"][0]["ethernet_mac_address"] == VIF["address"]
    assert data["networks"][0]["type"] == "ipv4_dhcp"
    assert data["networks"][0]["ip_address"] == "10.0.0.5"
    assert data["services"] == [{"type": "dns", "address": "10.0.0.1"}]


def test_module_closure_puts_dependencies_first(tmp_path: Path) -> None:
    (tmp_path / "modules.dep").write_text(
        "kernel/virtio_net.ko: kernel/net_failover.ko kernel/failover.ko\n"
        "kernel/net_failover.ko: kernel/failover.ko\n"
        "kernel/failover.ko:\n"
        "kernel/nls_iso8859-1.ko:\n")
    order = module_closure(tmp_path, ("virtio_net", "nls_iso8859-1", "not_there"))
    assert order == ["kernel/failover.ko", "kernel/net_failover.ko", "kernel/virtio_net.ko",
                     "kernel/nls_iso8859-1.ko"]


@pytest.mark.skipif(shutil.which("cpio") is None, reason="cpio is not installed")
def test_cpio_writer_output_is_read_by_cpio() -> None:
    buf = io.BytesIO()
    writer = CpioWriter(buf)
    writer.directory("etc")
    writer.file("etc/hello", b"hello\n", 0o644)
    writer.char_device("console", 5, 1)
    writer.trailer()
    listing = subprocess.run(["cpio", "-itv"], input=buf.getvalue(), capture_output=True)
    out = listing.stdout.decode()
    assert listing.returncode == 0, listing.stderr
    assert "etc/hello" in out and out.splitlines()[2].startswith("crw")


async def test_unreachable_libvirt_is_one_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("libvirt")
    from cirrus.config import Settings
    from cirrus.virt.exception import HypervisorUnavailable
    from cirrus.virt.libvirt.driver import LibvirtDriver

    settings = Settings(state_dir=tmp_path, compute_driver="libvirt",
                        libvirt_uri="qemu+unix:///system?socket=/nonexistent.sock")
    with pytest.raises(HypervisorUnavailable) as caught:
        await LibvirtDriver(settings, "host1").init_host("host1")
    assert "host1" in str(caught.value) and "/nonexistent.sock" in str(caught.value)
