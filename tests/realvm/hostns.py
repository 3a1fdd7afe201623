"""Compute "hosts" on one machine for tests (``scripts/hostns.sh``): each a
network namespace on a veth underlay with a libvirtd of its own, and the
helpers that make a tenant network span them (a veth between the hosts'
bridges, standing in for the wire an overlay would use) and ping into it.
"""
from __future__ import annotations

import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "hostns.sh"


class HostSetupError(RuntimeError):
    """The script could not make the host (the message says why)."""


def _run(*argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise HostSetupError(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")
    return done


@dataclass
class NamespaceHost:
    """One host: ``name`` is its network namespace, ``addr`` (with prefix)
    its underlay address."""

    name: str
    addr: str

    @property
    def ip(self) -> str:
        return self.addr.split("/")[0]

    @property
    def libvirt_uri(self) -> str:
        return f"qemu+tcp://{self.ip}/system"

    def up(self) -> "NamespaceHost":
        """Namespace, underlay and daemons (idempotent); HostSetupError if not."""
        _run(str(SCRIPT), "up", self.name, self.addr, timeout=120)
        return self

    def down(self) -> None:
        """Guests, daemons, namespace and state gone (idempotent)."""
        _run(str(SCRIPT), "down", self.name, check=False, timeout=180)

    def ns(self, *argv: str, check: bool = False,
           timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run a command in the host's network namespace."""
        return _run("ip", "netns", "exec", self.name, *argv, check=check, timeout=timeout)

    def virsh(self, *argv: str) -> str:
        return _run("virsh", "-c", self.libvirt_uri, *argv, check=False).stdout

    def domains(self) -> list[str]:
        """UUIDs of every domain this host's libvirtd has (running or not)."""
        return self.virsh("list", "--all", "--uuid").split()

    def has_link(self, dev: str) -> bool:
        return self.ns("ip", "link", "show", dev).returncode == 0


def ensure_bridge(host: NamespaceHost, bridge: str) -> None:
    """The bridge cirrus would make for the network (it adopts an existing one)."""
    if not host.has_link(bridge):
        host.ns("ip", "link", "add", bridge, "type", "bridge", check=True)
    host.ns("ip", "link", "set", bridge, "up", check=True)


def link_bridges(a: NamespaceHost, b: NamespaceHost, bridge: str) -> None:
    """One L2 segment: ``bridge`` on ``a`` and on ``b`` joined by a veth pair,
    as a provider network's wire (or an overlay) would join them."""
    end = f"lk{bridge[3:]}"[:15]
    ensure_bridge(a, bridge)
    ensure_bridge(b, bridge)
    if not a.has_link(end):
        a.ns("ip", "link", "add", end, "type", "veth", "peer", "name", end, "netns", b.name,
             check=True)
    for host in (a, b):
        host.ns("ip", "link", "set", end, "master", bridge, "up", check=True)


def attach_pinger(host: NamespaceHost, bridge: str, name: str, addr: str) -> NamespaceHost:
    """A namespace ``name`` on ``bridge`` of ``host`` with address ``addr``:
    somewhere to ping guests from that is no host's own bridge address."""
    pinger = NamespaceHost(name, addr)
    if _run("ip", "netns", "list").stdout.split().count(name) == 0:
        _run("ip", "netns", "add", name)
    if not pinger.has_link("eth0"):
        end = f"pg{bridge[3:]}"[:15]
        host.ns("ip", "link", "add", end, "type", "veth", "peer", "name", "eth0", "netns", name,
                check=True)
        host.ns("ip", "link", "set", end, "master", bridge, "up", check=True)
        pinger.ns("ip", "addr", "add", addr, "dev", "eth0", check=True)
    for dev in ("lo", "eth0"):
        pinger.ns("ip", "link", "set", dev, "up", check=True)
    return pinger


def remove_namespace(name: str) -> None:
    """A namespace the tests made with no daemons of its own (a pinger)."""
    _run("ip", "netns", "del", name, check=False)


@dataclass
class ContinuousPing:
    """``ping`` from ``host`` to ``target`` every ``interval`` seconds until
    stopped; the counts parsed from its summary."""

    host: NamespaceHost
    target: str
    interval: float = 0.2
    sent: int = 0
    received: int = 0
    output: str = ""
    _proc: subprocess.Popen[str] | None = field(default=None, repr=False)
    _reader: threading.Thread | None = field(default=None, repr=False)

    def __enter__(self) -> "ContinuousPing":
        self._proc = subprocess.Popen(
            ["ip", "netns", "exec", self.host.name, "ping", "-n", "-i", str(self.interval),
             "-W", "1", self.target], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self.output += line

    @property
    def replies(self) -> int:
        """Echo replies so far."""
        return self.output.count(" bytes from ")

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None and self._reader is not None
        self._proc.send_signal(2)  # SIGINT: ping prints its summary
        self._proc.wait(timeout=10)
        self._reader.join(timeout=10)
        found = re.search(r"(\d+) packets transmitted, (\d+) received", self.output)
        if found:
            self.sent, self.received = int(found.group(1)), int(found.group(2))

    @property
    def lost(self) -> int:
        return self.sent - self.received
