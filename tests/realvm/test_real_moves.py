"""Real guests moving between two compute hosts on this machine (issue #19):
a resize to a larger flavor that the guest feels, and a live migration the
guest's network does not notice.

The hosts are ``scripts/hostns.sh`` namespaces, each with its own libvirtd;
the cloud is ``cirrus up`` without computes (API, conductor, scheduler) and
one ``cirrus compute`` process per host on its local bus, all sharing one
``instances_path`` (what lets the disks stay put during a live migration).
The tenant network spans the hosts through a veth between their bridges,
and a pinger namespace on it pings the guest wherever it runs.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.realvm.conftest import MARKER, TINY_CACHE
from tests.realvm.hostns import (ContinuousPing, NamespaceHost, attach_pinger, link_bridges,
                                 remove_namespace)
from tests.realvm.twohost import TwoHostCloud, two_host_cloud

pytestmark = [pytest.mark.realvm, pytest.mark.slow]
HOSTS = (NamespaceHost("cirrus-lm1", "198.51.100.11/24"),
         NamespaceHost("cirrus-lm2", "198.51.100.12/24"))
PINGER = "cirrus-lmping"
SUBNET, POOL, PINGER_ADDR = "10.79.0.0/24", ("10.79.0.10", "10.79.0.200"), "10.79.0.250/24"
MEMORY = r"user-data: MemTotal: +(\d+) kB"
# The guest says how much memory it has, then ticks, so the console shows it alive.
USER_DATA = ("#!/bin/sh\ngrep MemTotal /proc/meminfo\n"
             "i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done\n")
LOST_PINGS_ALLOWED = 5  # the switch-over pauses the guest for a moment


def _compute_env(state: Path, host: NamespaceHost) -> dict[str, str]:
    """One ``instances_path`` for both (the disks stay put in a live
    migration), and where each host takes a migration in."""
    return {"CIRRUS_INSTANCES_PATH": str(state / "instances"),
            "CIRRUS_LIVE_MIGRATION_INBOUND_ADDR": host.ip}


@pytest.fixture(scope="module")
def two_hosts(realvm_lock: None, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[TwoHostCloud]:
    state = tmp_path_factory.mktemp("moves") / "state"
    state.mkdir()
    try:
        with two_host_cloud(HOSTS, ("lm1", "lm2"), state, _compute_env) as cloud:
            _prepare(cloud)
            yield cloud
    finally:
        remove_namespace(PINGER)


def _prepare(cloud: TwoHostCloud) -> None:
    """The tiny image, two flavors, a network spanning both hosts, an ICMP rule."""
    built = subprocess.run(["cirrus", "image", "build-tiny", "--os-cloud", "cirrus-admin",
                            "--output", str(TINY_CACHE)], env=cloud.env, capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    for name, ram in (("lm.tiny", "128"), ("lm.small", "256")):
        cloud.openstack("flavor", "create", "--ram", ram, "--vcpus", "1", "--disk", "1", name)
    net = cloud.openstack("network", "create", "lm-net", "-f", "json")
    cloud.openstack("subnet", "create", "--network", "lm-net", "--subnet-range", SUBNET,
                    "--allocation-pool", f"start={POOL[0]},end={POOL[1]}", "lm-subnet")
    cloud.openstack("security group", "create", "lm-icmp")
    cloud.openstack("security group", "rule", "create", "--ingress", "--protocol", "icmp",
                    "lm-icmp")
    bridge = "brq" + net["id"][:11]
    link_bridges(HOSTS[0], HOSTS[1], bridge)
    attach_pinger(HOSTS[0], bridge, PINGER, PINGER_ADDR)


def _boot(cloud: TwoHostCloud, name: str, host: str) -> dict[str, Any]:
    user_data = cloud.state_dir.parent / "lm-user-data.sh"
    user_data.write_text(USER_DATA)
    server = cloud.openstack("server", "create", "--flavor", "lm.tiny", "--image", "cirrus-tiny",
                             "--network", "lm-net", "--security-group", "lm-icmp",
                             "--availability-zone", f"nova:{host}", "--user-data",
                             str(user_data), "--wait", name, "-f", "json", timeout=300)
    assert server["status"] == "ACTIVE"
    cloud.wait_console(name, re.escape(MARKER))
    return server


def _booted_memory_kb(console: str) -> int | None:
    """What the guest's latest boot reported (None: not yet)."""
    found = re.findall(MEMORY, console.rsplit("cirrus-tiny: booting", 1)[-1])
    return int(found[-1]) if found else None


def _wait_memory(cloud: TwoHostCloud, server: str, at_least_kb: int) -> int:
    """Until the guest's latest boot reports at least ``at_least_kb``."""
    seen: list[int | None] = [None]

    def enough() -> bool:
        seen[0] = _booted_memory_kb(cloud.console(server))
        return seen[0] is not None and seen[0] >= at_least_kb
    cloud.wait(f"{server} reporting {at_least_kb} kB (last: {seen[0]})", enough, timeout=180)
    return int(seen[0] or 0)


def _domain_memory_kib(host: NamespaceHost, uuid: str) -> int:
    info = host.virsh("dominfo", uuid)
    return int(re.search(r"Max memory: +(\d+) KiB", info).group(1))  # type: ignore[union-attr]


def _port(cloud: TwoHostCloud, server_id: str) -> dict[str, Any]:
    ports = cloud.openstack("port", "list", "--server", server_id, "-f", "json", "--long")
    assert len(ports) == 1
    return dict(cloud.openstack("port", "show", ports[0]["ID"], "-f", "json"))


def _migrations(cloud: TwoHostCloud, server: str) -> list[dict[str, Any]]:
    return list(cloud.openstack("--os-compute-api-version", "2.80", "server", "migration",
                                "list", "--server", server, "-f", "json"))


def _poke_serial_console(cloud: TwoHostCloud, server: str) -> None:
    """The serial console opens through the proxy and stays open."""
    import asyncio

    from websockets.asyncio.client import connect

    url = cloud.openstack("console", "url", "show", "--serial", server, "-f", "json")["url"]

    async def poke() -> None:
        async with connect(url, subprotocols=["binary"]) as ws:  # type: ignore[list-item]
            await ws.send(b"\r")
            await ws.ping()
    asyncio.run(poke())


def test_resize_gives_the_guest_the_new_flavors_memory_and_revert_takes_it_back(
        two_hosts: TwoHostCloud) -> None:
    cloud = two_hosts
    uuid = _boot(cloud, "lm-resize", "lm1")["id"]
    before = _wait_memory(cloud, "lm-resize", 1)
    assert before < 128 * 1024

    cloud.openstack("server", "resize", "--flavor", "lm.small", "--wait", "lm-resize",
                    timeout=600)
    cloud.wait_status("lm-resize", "VERIFY_RESIZE", timeout=300)
    assert cloud.host_of("lm-resize") == "lm2"
    # 256 MiB against 128 MiB: the guest booted again with the new flavor.
    _wait_memory(cloud, "lm-resize", before + 100 * 1024)
    assert _domain_memory_kib(cloud.hosts["lm2"], uuid) == 256 * 1024

    cloud.openstack("server", "resize", "--revert", "lm-resize")
    shown = cloud.wait_status("lm-resize", "ACTIVE", timeout=300)
    assert shown["OS-EXT-SRV-ATTR:host"] == "lm1" and "lm.tiny" in str(shown["flavor"])
    assert _domain_memory_kib(cloud.hosts["lm1"], uuid) == 128 * 1024
    assert uuid not in cloud.hosts["lm2"].domains()
    cloud.wait_console("lm-resize", re.escape(MARKER), count=2)  # booted again, here

    cloud.openstack("server", "resize", "--flavor", "lm.small", "--wait", "lm-resize",
                    timeout=600)
    cloud.wait_status("lm-resize", "VERIFY_RESIZE", timeout=300)
    cloud.openstack("server", "resize", "--confirm", "lm-resize")
    shown = cloud.wait_status("lm-resize", "ACTIVE", timeout=120)
    assert shown["OS-EXT-SRV-ATTR:host"] == "lm2" and "lm.small" in str(shown["flavor"])
    _wait_memory(cloud, "lm-resize", before + 100 * 1024)
    assert uuid not in cloud.hosts["lm1"].domains()
    assert not (cloud.state_dir / "instances" / f"{uuid}_resize").exists()
    cloud.openstack("server", "delete", "--wait", "lm-resize", timeout=180)


def test_live_migration_keeps_the_guest_answering_ping(two_hosts: TwoHostCloud) -> None:
    cloud = two_hosts
    server = _boot(cloud, "lm-live", "lm1")
    uuid, port = server["id"], _port(cloud, server["id"])
    ip, tap = port["fixed_ips"][0]["ip_address"], ("tap" + port["id"])[:14]
    source, dest = cloud.hosts["lm1"], cloud.hosts["lm2"]
    assert source.has_link(tap)
    pinger = NamespaceHost(PINGER, PINGER_ADDR)
    cloud.wait("the guest answers ping", lambda: pinger.ns(
        "ping", "-c", "1", "-W", "1", ip).returncode == 0, timeout=60)
    ticks = len(re.findall(r"user-data: tick", cloud.console("lm-live")))

    with ContinuousPing(pinger, ip) as ping:
        cloud.openstack("server", "migrate", "--live-migration", "--wait", "lm-live",
                        timeout=600)
        shown = cloud.wait_status("lm-live", "ACTIVE", timeout=120)
        # Keep pinging a little on the destination, as a user would notice.
        answered = ping.replies
        cloud.wait("pings answered on the destination", lambda: ping.replies >= answered + 10)
    print(f"live migration: {ping.sent} pings sent, {ping.lost} lost")
    assert ping.sent >= 10, ping.output
    assert ping.lost <= LOST_PINGS_ALLOWED, ping.output[-2000:]

    assert shown["OS-EXT-SRV-ATTR:host"] == "lm2"
    assert uuid in dest.domains() and uuid not in source.domains()
    assert dest.has_link(tap) and not source.has_link(tap)
    migrations = _migrations(cloud, "lm-live")
    assert [(m["Type"], m["Status"], m["Source Compute"], m["Dest Compute"])
            for m in migrations] == [("live-migration", "completed", "lm1", "lm2")]
    # The guest kept running (no second boot) and its console log kept going.
    console = cloud.console("lm-live")
    assert console.count(MARKER) == 1
    cloud.wait("ticks after the move", lambda: len(re.findall(
        r"user-data: tick", cloud.console("lm-live"))) > ticks + 5)
    _poke_serial_console(cloud, "lm-live")  # on the port the destination chose
    # The source forgets the port: no firewall rules name its tap any more.
    cloud.wait("the source's rules for the port gone", lambda: tap not in source.ns(
        "nft", "list", "ruleset").stdout)
    assert tap in dest.ns("nft", "list", "ruleset").stdout
    cloud.openstack("server", "delete", "--wait", "lm-live", timeout=180)
    assert uuid not in dest.domains()
