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

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.client.conftest import free_port, start_cloud, stop, wait_up
from tests.realvm.conftest import MARKER, TINY_CACHE, RealCloud, _why_not
from tests.realvm.hostns import (ContinuousPing, HostSetupError, NamespaceHost, attach_pinger,
                                 link_bridges, remove_namespace)

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


class TwoHostCloud(RealCloud):
    hosts: dict[str, NamespaceHost]  # compute host name → its namespace host
    computes: dict[str, subprocess.Popen[str]]

    def wait(self, what: str, check: Callable[[], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not after {timeout}s")
            time.sleep(0.5)

    def openstack(self, *args: str, cloud: str = "cirrus-admin", check: bool = True,
                  timeout: float = 120) -> Any:
        """As an admin: placing servers on a host (``nova:HOST``) and moving
        them live are admin's, and admin owns everything here."""
        return super().openstack(*args, cloud=cloud, check=check, timeout=timeout)

    def host_of(self, server: str) -> str:
        return str(self.openstack("server", "show", server, "-f", "json")
                   ["OS-EXT-SRV-ATTR:host"])


def _compute_env(state: Path, host: NamespaceHost, bus: str, url: str) -> dict[str, str]:
    return {**os.environ,
            "CIRRUS_PUBLIC_URL": url,  # where the compute downloads images from
            "CIRRUS_DATABASE_URL": f"sqlite:///{state / 'cirrus.db'}",
            "CIRRUS_TRANSPORT_URL": bus,
            "CIRRUS_INSTANCES_PATH": str(state / "instances"),
            "CIRRUS_LIBVIRT_URI": host.libvirt_uri,
            "CIRRUS_LIBVIRT_VIRT_TYPE": "qemu",
            "CIRRUS_HOST_NETNS": host.name,
            "CIRRUS_LIVE_MIGRATION_INBOUND_ADDR": host.ip,
            "CIRRUS_VIF_PLUGGING_TIMEOUT": "60", "CIRRUS_SHUTDOWN_TIMEOUT": "30",
            "CIRRUS_REPORT_INTERVAL": "2"}


def _start_compute(state: Path, name: str, host: NamespaceHost, bus: str, url: str
                   ) -> subprocess.Popen[str]:
    """``cirrus compute --host NAME`` with a state directory of its own (its
    DHCP files, logs); it downloads images from the cloud at ``url``."""
    own = state.parent / name
    own.mkdir(exist_ok=True)
    log = open(state.parent / f"{name}.out", "a")
    return subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "compute", "--host", name,
                             "--driver", "libvirt", "--state-dir", str(own)],
                            env=_compute_env(state, host, bus, url), stdout=log,
                            stderr=subprocess.STDOUT, text=True)


def _hosts_up() -> str | None:
    """Why two namespace hosts cannot run here, or None (they are up)."""
    reason = _why_not()
    if reason is not None:
        return reason
    try:
        for host in HOSTS:
            host.up()
    except HostSetupError as error:
        return f"the namespace hosts could not start: {error}"
    return None


@pytest.fixture(scope="module")
def two_hosts(realvm_lock: None, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[TwoHostCloud]:
    reason = _hosts_up()
    if reason is not None:
        for host in HOSTS:
            host.down()
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    state = tmp_path_factory.mktemp("moves") / "state"
    state.mkdir()
    bus = f"local://{state / 'bus.sock'}"
    port = free_port()
    os.environ.update(CIRRUS_TRANSPORT_URL=bus, CIRRUS_REPORT_INTERVAL="2")
    try:
        proc = start_cloud(state, port, "--driver", "libvirt", "--computes", "0",
                           "--api-workers", "1")
    finally:
        for key in ("CIRRUS_TRANSPORT_URL", "CIRRUS_REPORT_INTERVAL"):
            os.environ.pop(key)
    computes: dict[str, subprocess.Popen[str]] = {}
    try:
        wait_up(f"http://127.0.0.1:{port}", proc, timeout=120)
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml")}
        env.pop("OS_CLOUD", None)
        cloud = TwoHostCloud(f"http://127.0.0.1:{port}", state, proc, env)
        cloud.netns = HOSTS[0].name
        cloud.hosts = {f"lm{i}": host for i, host in enumerate(HOSTS, 1)}
        for name, host in cloud.hosts.items():
            computes[name] = _start_compute(state, name, host, bus, cloud.url)
        cloud.computes = computes
        cloud.wait("both computes up", lambda: _up_hypervisors(cloud) == set(cloud.hosts),
                   timeout=120)
        _prepare(cloud)
        yield cloud
    finally:
        for compute in computes.values():
            if compute.poll() is None:
                compute.send_signal(signal.SIGTERM)
        for compute in computes.values():
            try:
                compute.wait(timeout=30)
            except subprocess.TimeoutExpired:
                compute.kill()
        if proc.poll() is None:
            stop(proc)
        remove_namespace(PINGER)
        for host in HOSTS:
            host.down()


def _up_hypervisors(cloud: TwoHostCloud) -> set[str]:
    listed = cloud.openstack("hypervisor", "list", "-f", "json", "--long", check=False)
    if not isinstance(listed, list):
        return set()
    return {h["Hypervisor Hostname"] for h in listed if h.get("State") == "up"}


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
