"""Network namespaces that stand in for a compute host and its guests.

The "host" namespace is where the backend runs (``host_netns``); each "guest"
is a namespace whose ``eth0`` is one end of a veth pair, the other end named
like the port's tap and enslaved to the network's bridge in the host
namespace — what libvirt does when it starts a domain.
"""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Awaitable, Callable

# ping: without it every "cannot reach" check would pass for the wrong reason.
TOOLS = ("ip", "nft", "dnsmasq", "busybox", "unshare", "ping")


def why_not() -> str | None:
    """Why these tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "host networking tests need root (network namespaces, bridges, nftables)"
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup-hostnet.sh installs it)"
    if not Path("/proc/sys/net/bridge").exists():
        subprocess.run(["modprobe", "br_netfilter"], capture_output=True)
        if not Path("/proc/sys/net/bridge").exists():
            return "br_netfilter is not available"
    name = f"cz-probe-{uuid.uuid4().hex[:6]}"
    done = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if done.returncode != 0:
        return f"ip netns add failed: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


async def sh(*argv: str, check: bool = True, timeout: float = 30,
             input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command without blocking the event loop (the backend's tasks
    keep running while a test waits for a ping)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(input.encode() if input else None),
                                          timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    done = subprocess.CompletedProcess(argv, proc.returncode or 0, out.decode(), err.decode())
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr}")
    return done


class Namespaces:
    """Creates namespaces with unique names and removes them (and whatever
    still runs in them) on :meth:`cleanup`."""

    def __init__(self) -> None:
        self.prefix = f"czt{uuid.uuid4().hex[:6]}"
        self.names: list[str] = []

    def create(self, role: str) -> str:
        name = f"{self.prefix}-{role}"
        subprocess.run(["ip", "netns", "add", name], check=True)
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        self.names.append(name)
        return name

    def cleanup(self) -> None:
        for name in reversed(self.names):
            pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self.names.clear()


class Guest:
    """A guest namespace plugged into ``host`` like a libvirt domain's tap."""

    def __init__(self, ns: str, host: str, tap: str, mac: str) -> None:
        self.ns, self.host, self.tap, self.mac = ns, host, tap, mac
        self.lease: dict[str, str] = {}

    async def plug(self, bridge: str) -> None:
        await sh("ip", "link", "add", "name", self.tap, "netns", self.host, "type", "veth",
                 "peer", "name", "eth0", "netns", self.ns)
        await sh("ip", "-n", self.ns, "link", "set", "eth0", "address", self.mac, "up")
        await sh("ip", "-n", self.host, "link", "set", self.tap, "master", bridge, "up")

    async def unplug(self) -> None:
        await sh("ip", "-n", self.host, "link", "del", self.tap, check=False)

    async def dhcp(self, workdir: Path) -> dict[str, str]:
        """Run busybox udhcpc; the lease's variables (ip, subnet, router, mtu, dns)."""
        out = workdir / f"{self.tap}.lease"
        script = workdir / f"{self.tap}.sh"
        script.write_text("#!/bin/sh\n[ \"$1\" = bound ] && "
                          f"echo \"ip=$ip subnet=$subnet router=$router mtu=$mtu dns=$dns\" > {out}\n"
                          "exit 0\n")
        script.chmod(0o755)
        await sh("ip", "netns", "exec", self.ns, "busybox", "udhcpc", "-i", "eth0", "-n", "-q",
                 "-t", "5", "-T", "1", "-s", str(script), timeout=30)
        self.lease = dict(re.findall(r"(\w+)=(\S*)", out.read_text()))
        return self.lease

    async def configure(self, address: str, prefix: int) -> None:
        await sh("ip", "-n", self.ns, "addr", "add", f"{address}/{prefix}", "dev", "eth0")

    async def ping(self, target: str, source: str | None = None) -> bool:
        argv = ["ip", "netns", "exec", self.ns, "ping", "-c", "1", "-W", "1"]
        if source:
            argv += ["-I", source]
        return (await sh(*argv, target, check=False)).returncode == 0


async def ping_from(ns: str, target: str) -> bool:
    return (await sh("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", target,
                     check=False)).returncode == 0


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> bool:
    """Retry ``check()`` until it is true or ``timeout`` passes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        if await check():
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.2)
