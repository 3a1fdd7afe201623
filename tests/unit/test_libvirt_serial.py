"""The libvirt guest's serial console: a TCP port that still logs to a file."""
from __future__ import annotations

import socket

import pytest

from cirrus.virt.libvirt.config import DiskSpec, GuestSpec, guest_xml, serial_port_of
from cirrus.virt.libvirt.serial import free_port


def _spec(serial_port: int | None) -> GuestSpec:
    return GuestSpec(name="instance-1", uuid="u" * 36, display_name="vm", flavor_name="m1",
                     virt_type="qemu", memory_mb=64, vcpus=1, console_log="/tmp/c.log",
                     disks=[DiskSpec(path="/tmp/d", target="vda", fmt="qcow2")], vifs=[],
                     serial_port=serial_port)


def test_a_serial_port_is_a_tcp_listener_that_still_logs() -> None:
    xml = guest_xml(_spec(12345))
    assert serial_port_of(xml) == 12345
    assert "<log file=\"/tmp/c.log\" append=\"on\"" in xml
    assert 'mode="bind" host="127.0.0.1" service="12345"' in xml


def test_without_a_port_the_console_is_a_file() -> None:
    xml = guest_xml(_spec(None))
    assert serial_port_of(xml) is None and 'type="file"' in xml


def test_free_port_never_gives_a_taken_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match="no free serial console port"):
            free_port((port, port), tries=8)
    assert free_port((port, port)) == port  # free again once closed
