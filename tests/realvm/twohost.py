"""A cloud on two namespace hosts (``scripts/hostns.sh``), shared by the
real-VM tests that need two hypervisors (``test_real_moves.py``,
``test_two_hosts.py``).

``cirrus up`` without computes runs the API, conductor and scheduler on a
local bus and SQLite; one ``cirrus compute`` process per host joins it, each
with a state directory of its own, its host's libvirtd and network namespace.
What else the hosts share (an ``instances_path`` for live migration, an
underlay address for VXLAN) is the caller's ``compute_env``.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.client.conftest import free_port, start_cloud, stop, wait_up
from tests.realvm.conftest import RealCloud, _why_not
from tests.realvm.hostns import HostSetupError, NamespaceHost

# What every process of the cloud must agree on although each has its own
# state dir: the metadata proxies (on the computes) sign what the API checks.
SHARED = {"CIRRUS_METADATA_PROXY_SHARED_SECRET": "two-host-test-secret"}

# Per host: the environment its compute adds to the common one.
ComputeEnv = Callable[[Path, NamespaceHost], dict[str, str]]


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

    def compute_dir(self, name: str) -> Path:
        """The state directory of compute host ``name``."""
        return self.state_dir.parent / name


def _compute_env(state: Path, host: NamespaceHost, bus: str, url: str) -> dict[str, str]:
    return {**os.environ,
            "CIRRUS_PUBLIC_URL": url,  # where the compute downloads images from
            "CIRRUS_DATABASE_URL": f"sqlite:///{state / 'cirrus.db'}",
            "CIRRUS_TRANSPORT_URL": bus,
            "CIRRUS_LIBVIRT_URI": host.libvirt_uri,
            "CIRRUS_LIBVIRT_VIRT_TYPE": "qemu",
            "CIRRUS_HOST_NETNS": host.name,
            "CIRRUS_VIF_PLUGGING_TIMEOUT": "60", "CIRRUS_SHUTDOWN_TIMEOUT": "30",
            "CIRRUS_REPORT_INTERVAL": "2", **SHARED}


def _start_compute(state: Path, name: str, host: NamespaceHost, bus: str, url: str,
                   extra: dict[str, str]) -> subprocess.Popen[str]:
    """``cirrus compute --host NAME`` with a state directory of its own (its
    DHCP files, logs); it downloads images from the cloud at ``url``."""
    own = state.parent / name
    own.mkdir(exist_ok=True)
    log = open(state.parent / f"{name}.out", "a")
    return subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "compute", "--host", name,
                             "--driver", "libvirt", "--state-dir", str(own)],
                            env={**_compute_env(state, host, bus, url), **extra}, stdout=log,
                            stderr=subprocess.STDOUT, text=True)


def _hosts_up(hosts: tuple[NamespaceHost, ...]) -> str | None:
    """Why the namespace hosts cannot run here, or None (they are up)."""
    reason = _why_not()
    if reason is not None:
        return reason
    try:
        for host in hosts:
            host.up()
    except HostSetupError as error:
        return f"the namespace hosts could not start: {error}"
    return None


def up_hypervisors(cloud: TwoHostCloud) -> set[str]:
    listed = cloud.openstack("hypervisor", "list", "-f", "json", "--long", check=False)
    if not isinstance(listed, list):
        return set()
    return {h["Hypervisor Hostname"] for h in listed if h.get("State") == "up"}


def _stop_all(proc: subprocess.Popen[str] | None,
              computes: dict[str, subprocess.Popen[str]]) -> None:
    for compute in computes.values():
        if compute.poll() is None:
            compute.send_signal(signal.SIGTERM)
    for compute in computes.values():
        try:
            compute.wait(timeout=30)
        except subprocess.TimeoutExpired:
            compute.kill()
    if proc is not None and proc.poll() is None:
        stop(proc)


@contextlib.contextmanager
def two_host_cloud(hosts: tuple[NamespaceHost, ...], names: tuple[str, ...], state: Path,
                   compute_env: ComputeEnv, cloud_env: dict[str, str] | None = None
                   ) -> Iterator[TwoHostCloud]:
    """The cloud with compute host ``names[i]`` on ``hosts[i]``, its state in
    ``state``; skips (fails on CI) when the hosts cannot run here. Every
    process, guest and namespace host is gone afterwards, whatever happened."""
    reason = _hosts_up(hosts)
    if reason is not None:
        for host in hosts:
            host.down()
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    bus = f"local://{state / 'bus.sock'}"
    port = free_port()
    added = {"CIRRUS_TRANSPORT_URL": bus, "CIRRUS_REPORT_INTERVAL": "2", **SHARED,
             **(cloud_env or {})}
    os.environ.update(added)
    proc: subprocess.Popen[str] | None = None
    computes: dict[str, subprocess.Popen[str]] = {}
    try:
        try:
            proc = start_cloud(state, port, "--driver", "libvirt", "--computes", "0",
                               "--api-workers", "1")
        finally:
            for key in added:
                os.environ.pop(key)
        wait_up(f"http://127.0.0.1:{port}", proc, timeout=120)
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml")}
        env.pop("OS_CLOUD", None)
        cloud = TwoHostCloud(f"http://127.0.0.1:{port}", state, proc, env)
        cloud.netns = hosts[0].name
        cloud.hosts = dict(zip(names, hosts))
        for name, host in cloud.hosts.items():
            computes[name] = _start_compute(state, name, host, bus, cloud.url,
                                            {**(cloud_env or {}), **compute_env(state, host)})
        cloud.computes = computes
        cloud.wait("both computes up", lambda: up_hypervisors(cloud) == set(cloud.hosts),
                   timeout=120)
        yield cloud
    finally:
        _stop_all(proc, computes)
        for host in hosts:
            host.down()
