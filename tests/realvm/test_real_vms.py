"""Real guests through the ``openstack`` CLI: boot, DHCP, ping, power, delete,
security groups between guests, and a spawn failure that leaks nothing."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.realvm.conftest import MARKER, RealCloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]
IP_LINE = r"cirrus-tiny: eth0 ip=([0-9.]+)/"


def _sg(cloud: RealCloud, name: str, *rules: list[str]) -> None:
    cloud.openstack("security group", "create", name)
    for rule in rules:
        cloud.openstack("security group", "rule", "create", *rule, name)


def _boot(cloud: RealCloud, name: str, sg: str, *extra: str) -> dict:
    return cloud.openstack("server", "create", "--flavor", "rv.tiny", "--image", "cirrus-tiny",
                           "--network", "rv-net", "--security-group", sg, "--wait",
                           *extra, name, "-f", "json", timeout=300)


def _port(cloud: RealCloud, server_id: str) -> dict:
    ports = cloud.openstack("port", "list", "--server", server_id, "-f", "json", "--long")
    assert len(ports) == 1
    return cloud.openstack("port", "show", ports[0]["ID"], "-f", "json")


def _domains() -> str:
    return subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--uuid"],
                          capture_output=True, text=True).stdout


def test_guest_boots_gets_its_address_and_answers_ping(real_cloud: RealCloud) -> None:
    _sg(real_cloud, "rv-icmp", ["--ingress", "--protocol", "icmp"])
    server = _boot(real_cloud, "rv-ping", "rv-icmp", "--config-drive", "True")
    assert server["status"] == "ACTIVE"
    console = real_cloud.wait_console("rv-ping", re.escape(MARKER))
    port = _port(real_cloud, server["id"])
    fixed = port["fixed_ips"][0]["ip_address"]
    assert re.search(IP_LINE, console).group(1) == fixed
    assert port["status"] == "ACTIVE"
    assert "hostname rv-ping" in console  # read from the config drive
    assert "config drive /dev/" in console and "metadata service:" not in console
    ping = real_cloud.ns("ping", "-c", "3", "-W", "2", fixed)
    assert ping.returncode == 0, ping.stdout + ping.stderr


def test_stop_start_reboot_delete_leave_nothing_behind(real_cloud: RealCloud) -> None:
    server = _boot(real_cloud, "rv-life", "default")
    uuid = server["id"]
    real_cloud.wait_console("rv-life", re.escape(MARKER))
    port = _port(real_cloud, uuid)
    tap = ("tap" + port["id"])[:14]
    assert real_cloud.ns("ip", "link", "show", tap).returncode == 0

    real_cloud.openstack("server", "stop", "rv-life")
    real_cloud.wait_status("rv-life", "SHUTOFF", timeout=90)
    assert "power button: powering off" in real_cloud.console("rv-life")  # ACPI, not a kill

    real_cloud.openstack("server", "start", "rv-life")  # seed 003: a hard reboot
    real_cloud.wait_status("rv-life", "ACTIVE")
    real_cloud.wait_console("rv-life", re.escape(MARKER), count=2)

    real_cloud.openstack("server", "reboot", "rv-life")
    real_cloud.wait_status("rv-life", "ACTIVE")
    real_cloud.wait_console("rv-life", re.escape(MARKER), count=3)
    real_cloud.openstack("server", "reboot", "--hard", "rv-life")
    real_cloud.wait_status("rv-life", "ACTIVE")
    console = real_cloud.wait_console("rv-life", re.escape(MARKER), count=4)
    assert re.findall(IP_LINE, console)[-1] == port["fixed_ips"][0]["ip_address"]

    real_cloud.openstack("server", "delete", "--wait", "rv-life", timeout=180)
    assert uuid not in _domains()
    assert not (real_cloud.state_dir / "instances" / uuid).exists()
    assert real_cloud.ns("ip", "link", "show", tap).returncode != 0
    # dnsmasq serves exactly the allocated addresses: the port's host entry is gone.
    hosts = list((real_cloud.state_dir / "dhcp").glob("*/hosts"))
    assert all(port["mac_address"] not in h.read_text() for h in hosts)
    assert real_cloud.openstack("port", "list", "--device-id", uuid, "-f", "json") == []


def test_guests_reach_each_other_only_when_a_rule_allows(real_cloud: RealCloud) -> None:
    _sg(real_cloud, "rv-closed")  # egress only: no ingress at all
    target = _boot(real_cloud, "rv-target", "rv-closed")
    target_ip = _port(real_cloud, target["id"])["fixed_ips"][0]["ip_address"]
    # The target must be up with its address before anything pings it.
    console = real_cloud.wait_console("rv-target", re.escape(MARKER))
    assert re.search(IP_LINE, console).group(1) == target_ip, console
    script = ("#!/bin/sh\nwhile true; do\n"
              f"  if ping -c 1 -W 3 {target_ip} >/dev/null 2>&1; then echo PING-OK; "
              "else echo PING-FAIL; fi\n  sleep 1\ndone\n")
    user_data = Path(real_cloud.state_dir.parent / "pinger.sh")
    user_data.write_text(script)
    _boot(real_cloud, "rv-pinger", "rv-closed", "--user-data", str(user_data))
    real_cloud.wait_console("rv-pinger", "user-data: PING-FAIL", count=3)
    assert "user-data: PING-OK" not in real_cloud.console("rv-pinger")

    real_cloud.openstack("security group", "rule", "create", "--ingress", "--protocol", "icmp",
                         "--remote-group", "rv-closed", "rv-closed")
    try:
        real_cloud.wait_console("rv-pinger", "user-data: PING-OK", timeout=90)
    except AssertionError as error:  # say what the host's firewall looked like
        rules = real_cloud.ns("nft", "list", "ruleset").stdout
        neigh = real_cloud.ns("ip", "neigh").stdout + real_cloud.ns("bridge", "fdb").stdout
        raise AssertionError(f"{error}\n--- target console:\n{real_cloud.console('rv-target')}"
                             f"\n--- nft ruleset in {real_cloud.netns}:\n{rules}"
                             f"\n--- neighbours and fdb:\n{neigh}") from None
    for name in ("rv-pinger", "rv-target"):
        real_cloud.openstack("server", "delete", "--wait", name, timeout=180)


def test_broken_image_ends_in_error_and_leaks_nothing(real_cloud: RealCloud) -> None:
    junk = real_cloud.state_dir.parent / "junk.qcow2"
    junk.write_bytes(b"this is not a disk image\n" * 100)
    real_cloud.openstack("image", "create", "--disk-format", "qcow2", "--file", str(junk),
                         "rv-broken")
    created = real_cloud.openstack("server", "create", "--flavor", "rv.tiny", "--image",
                                   "rv-broken", "--network", "rv-net", "rv-bad", "-f", "json")
    shown = real_cloud.wait_status("rv-bad", "ERROR")
    assert "unacceptable" in str(shown.get("fault")).lower()
    assert created["id"] not in _domains()
    assert not (real_cloud.state_dir / "instances" / created["id"]).exists()
    assert real_cloud.openstack("port", "list", "--device-id", created["id"], "-f", "json") == []
    real_cloud.openstack("server", "delete", "--wait", "rv-bad")


def test_the_serial_console_of_a_real_guest_opens_and_the_log_keeps_going(
        real_cloud: RealCloud) -> None:
    """The guest's serial port is a TCP socket QEMU listens on (with the log
    file beside it): the CLI's URL opens through the proxy, and what the guest
    prints still reaches the console log."""
    import asyncio

    from websockets.asyncio.client import connect

    _boot(real_cloud, "rv-serial", "default")
    real_cloud.wait_console("rv-serial", re.escape(MARKER))
    url = real_cloud.openstack("console", "url", "show", "--serial", "rv-serial",
                               "-f", "json")["url"]

    async def poke() -> None:
        async with connect(url, subprotocols=["binary"]) as ws:  # type: ignore[list-item]
            await ws.send(b"\r")
            await asyncio.sleep(0.5)  # the guest reads nothing; the socket must stay open
            await ws.ping()
    asyncio.run(poke())
    assert MARKER in real_cloud.console("rv-serial")

def _domstate(uuid: str) -> str:
    return subprocess.run(["virsh", "-c", "qemu:///system", "domstate", uuid],
                          capture_output=True, text=True).stdout.strip()


def test_pause_suspend_rescue_and_back(real_cloud: RealCloud) -> None:
    """Issue #19 on libvirt: suspend/resume keeps the running guest (no new
    boot); rescue boots the rescue image, unrescue the original again."""
    uuid = _boot(real_cloud, "rv-states", "default")["id"]
    real_cloud.wait_console("rv-states", re.escape(MARKER))

    real_cloud.openstack("server", "pause", "rv-states")
    real_cloud.wait_status("rv-states", "PAUSED", timeout=60)
    assert _domstate(uuid) == "paused"
    real_cloud.openstack("server", "unpause", "rv-states")
    real_cloud.wait_status("rv-states", "ACTIVE", timeout=60)
    assert _domstate(uuid) == "running"

    real_cloud.openstack("server", "suspend", "rv-states")
    real_cloud.wait_status("rv-states", "SUSPENDED", timeout=120)
    assert _domstate(uuid) == "shut off"  # its memory in the managed save
    real_cloud.openstack("server", "resume", "rv-states")
    real_cloud.wait_status("rv-states", "ACTIVE", timeout=120)
    assert real_cloud.console("rv-states").count(MARKER) == 1  # resumed, not rebooted

    real_cloud.openstack("server", "rescue", "rv-states")
    real_cloud.wait_status("rv-states", "RESCUE", timeout=180)
    real_cloud.wait_console("rv-states", re.escape(MARKER), count=2)
    inst_dir = real_cloud.state_dir / "instances" / uuid
    assert (inst_dir / "disk.rescue").exists() and (inst_dir / "unrescue.xml").exists()
    real_cloud.openstack("server", "unrescue", "rv-states")
    real_cloud.wait_status("rv-states", "ACTIVE", timeout=180)
    real_cloud.wait_console("rv-states", re.escape(MARKER), count=3)
    assert not (inst_dir / "disk.rescue").exists()

    real_cloud.openstack("server", "delete", "--wait", "rv-states", timeout=180)
    assert uuid not in _domains()
