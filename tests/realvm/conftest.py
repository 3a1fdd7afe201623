"""A ``cirrus up --driver libvirt`` whose host networking lives in a network
namespace this suite creates; libvirtd is (re)started inside it so guest taps
never touch the machine's own interfaces.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.client.conftest import RunningCloud, free_port, start_cloud, stop, wait_up

ROOT = Path(__file__).resolve().parents[2]
NETNS = "cirrus-rv"
RUN_LOCK = "/run/cirrus-realvm.lock"  # one real-VM session at a time on a machine
TINY_CACHE = Path(os.environ.get("CIRRUS_TINY_CACHE", Path.home() / ".cache/cirrus/tiny"))
MARKER = "cirrus-tiny: boot complete"


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "real VMs need root (network namespaces, libvirtd)"
    for tool in ("ip", "qemu-system-x86_64", "virsh", "dnsmasq", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup-libvirt.sh installs it)"
    return None


@pytest.fixture(scope="session")
def realvm_lock() -> Iterator[None]:
    """This session's alone: one libvirtd serves the machine and domains are
    named by instance id (``instance-00000001``), so two runs at once would
    take each other's guests; a second run waits for the first (an exclusive
    lock for the session)."""
    with open(RUN_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def libvirt_host(realvm_lock: None) -> str:
    """libvirtd running inside the suite's namespace."""
    return _libvirt_host()


def _libvirt_host() -> str:
    reason = _why_not()
    if reason is None:
        done = subprocess.run([str(ROOT / "scripts/setup-libvirt.sh"), "--netns", NETNS],
                              capture_output=True, text=True, timeout=900)
        if "libvirt ready" not in done.stdout:
            reason = f"libvirt could not be started: {done.stderr.strip()[-300:]}"
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return NETNS


class RealCloud(RunningCloud):
    netns: str

    def ns(self, *argv: str, check: bool = False, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run a command in the host namespace."""
        return subprocess.run(["ip", "netns", "exec", self.netns, *argv], capture_output=True,
                              text=True, timeout=timeout, check=check)

    def console(self, server: str) -> str:
        return self.openstack("console", "log", "show", server).stdout

    def wait_console(self, server: str, pattern: str, count: int = 1,
                     timeout: float = 180) -> str:
        """The console once ``pattern`` (a regex) appeared ``count`` times."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.console(server)
            if len(re.findall(pattern, text)) >= count:
                return text
            time.sleep(1)
        raise AssertionError(f"{pattern!r} x{count} not on the console of {server}:\n{text}")

    def wait_status(self, server: str, status: str, timeout: float = 180) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        shown: dict[str, Any] = {}
        while time.monotonic() < deadline:
            shown = self.openstack("server", "show", server, "-f", "json")
            if shown["status"] == status:
                return shown
            if shown["status"] == "ERROR" and status != "ERROR":
                raise AssertionError(f"{server} went to ERROR: {shown.get('fault')}")
            time.sleep(1)
        raise AssertionError(f"{server} is {shown.get('status')}, not {status}")


def _clear_host_networking(netns: str) -> None:
    """What an earlier session's clouds left in the host namespace: bridges
    (a network's bridge outlives its cloud, as on a real host) and router
    namespaces. Two bridges holding one subnet's addresses would make every
    route to it ambiguous. The suite owns the machine while it runs."""
    links = subprocess.run(["ip", "netns", "exec", netns, "ip", "-o", "link", "show"],
                           capture_output=True, text=True).stdout
    for name in re.findall(r"^\d+: (brq[^:@]+)", links, re.M):
        subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "del", name],
                       capture_output=True)
    for line in subprocess.run(["ip", "netns", "list"], capture_output=True,
                               text=True).stdout.splitlines():
        if line.startswith("qrouter-"):
            subprocess.run(["ip", "netns", "del", line.split()[0]], capture_output=True)


@pytest.fixture(scope="session")
def real_cloud(libvirt_host: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealCloud]:
    state = tmp_path_factory.mktemp("realvm") / "state"
    state.mkdir()
    _clear_host_networking(libvirt_host)
    port = free_port()
    os.environ["CIRRUS_HOST_NETNS"] = libvirt_host
    os.environ["CIRRUS_VIF_PLUGGING_TIMEOUT"] = "60"
    os.environ["CIRRUS_SHUTDOWN_TIMEOUT"] = "30"
    # Guests get a config drive only when they ask (--config-drive True); the
    # others read the metadata service, as with Nova's defaults.
    os.environ["CIRRUS_FORCE_CONFIG_DRIVE"] = "false"
    try:
        proc = start_cloud(state, port, "--driver", "libvirt")
    finally:
        for key in ("CIRRUS_HOST_NETNS", "CIRRUS_VIF_PLUGGING_TIMEOUT", "CIRRUS_SHUTDOWN_TIMEOUT",
                    "CIRRUS_FORCE_CONFIG_DRIVE"):
            os.environ.pop(key)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_up(url, proc, timeout=120)
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(state / "clouds.yaml")}
        env.pop("OS_CLOUD", None)
        cloud = RealCloud(url, state, proc, env)
        cloud.netns = libvirt_host
        built = subprocess.run(["cirrus", "image", "build-tiny", "--os-cloud", "cirrus-admin",
                                "--output", str(TINY_CACHE)], env=env, capture_output=True,
                               text=True, timeout=600)
        assert built.returncode == 0, built.stderr
        cloud.openstack("flavor", "create", "--ram", "128", "--vcpus", "1", "--disk", "1",
                        "rv.tiny", cloud="cirrus-admin")
        cloud.openstack("network", "create", "rv-net")
        cloud.openstack("subnet", "create", "--network", "rv-net", "--subnet-range",
                        "10.77.0.0/24", "--dns-nameserver", "10.77.0.1", "rv-subnet")
        yield cloud
    finally:
        if proc.poll() is None:
            stop(proc)
        _remove_leftover_domains(str(state))


def _remove_leftover_domains(state_dir: str) -> None:
    """A failed test must not leave guests running for the next one."""
    listing = subprocess.run(["virsh", "-c", "qemu:///system", "list", "--all", "--name"],
                             capture_output=True, text=True)
    for name in listing.stdout.split():
        xml = subprocess.run(["virsh", "-c", "qemu:///system", "dumpxml", name],
                             capture_output=True, text=True).stdout
        if state_dir in xml:
            subprocess.run(["virsh", "-c", "qemu:///system", "destroy", name], capture_output=True)
            subprocess.run(["virsh", "-c", "qemu:///system", "undefine", name],
                           capture_output=True)
