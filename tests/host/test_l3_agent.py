"""The L3 agent on the real kernel: routers as namespaces with nftables NAT.

A fake world: a "host" namespace (``host_netns``) with two tenant bridges and
an external one; a guest namespace on each tenant bridge (its default route
the router's interface address); an "outside" namespace on the external
bridge that plays the upstream network (it is the gateway's next hop). The
agent gets :class:`RouterSpec` values as the L3 API would produce them.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from cirrus.config import Settings
from cirrus.network.backends import firewall
from cirrus.network.backends.firewall import PortFilter, Rule
from cirrus.network.l3.agent import L3Agent
from cirrus.network.l3.spec import (FloatingIP, Gateway, Route, RouterPort, RouterSpec,
                                    namespace_name)
from cirrus.network.linux import ip
from cirrus.network.model import devname
from tests.host.netns import Guest, Namespaces, eventually, ping_from, sh, why_not

pytestmark = pytest.mark.slow

FLOATING = "203.0.113.10"
GATEWAY_IP, OUTSIDE_IP = "203.0.113.2", "203.0.113.1"
A_IP, B_IP = "10.90.1.10", "10.90.2.10"
PORT = 8321

# Accepts connections, tells each client the address it sees it from, then echoes.
SERVER = """
import socket, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("0.0.0.0", int(sys.argv[1])))
srv.listen(16)
def serve(conn, peer):
    with conn:
        conn.sendall(("peer=" + peer[0] + "\\n").encode())
        while True:
            data = conn.recv(100)
            if not data:
                return
            conn.sendall(data)
while True:
    conn, peer = srv.accept()
    threading.Thread(target=serve, args=(conn, peer), daemon=True).start()
"""
# Connects, prints the server's "peer=" line, then one echoed line (or
# "timeout") per line read from stdin.
CLIENT = """
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)
f = s.makefile("rb")
print(f.readline().decode().strip(), flush=True)
for line in sys.stdin:
    s.sendall(line.encode())
    try:
        print(f.readline().decode().strip() or "closed", flush=True)
    except OSError:
        print("timeout", flush=True)
"""


def mac(n: int) -> str:
    return f"fa:16:3e:00:01:{n:02x}"


@dataclass
class World:
    settings: Settings
    spaces: Namespaces
    host: str
    guest_a: Guest
    guest_b: Guest
    outside: str
    workdir: Path
    router_ids: list[str] = field(default_factory=list)
    agents: list[L3Agent] = field(default_factory=list)

    def agent(self) -> L3Agent:
        self.agents.append(L3Agent(self.settings))
        return self.agents[-1]

    def spec(self, *floating: tuple[str, str], admin_state_up: bool = True,
             enable_snat: bool = True) -> RouterSpec:
        """A router with an interface on each tenant bridge and a gateway."""
        if not self.router_ids:
            self.router_ids.append(str(uuid.uuid4()))
        ids = [f"{n}{self.router_ids[0][1:]}" for n in "abc"]  # fixed per world
        return RouterSpec(
            router_id=self.router_ids[0],
            interfaces=(RouterPort(ids[0], "net-a", mac(1), ("10.90.1.1/24",), "brqa", 1450),
                        RouterPort(ids[1], "net-b", mac(2), ("10.90.2.1/24",), "brqb", 1450)),
            gateway=Gateway(RouterPort(ids[2], "net-ext", mac(3), (f"{GATEWAY_IP}/24",), "brqext"),
                            (OUTSIDE_IP,), enable_snat),
            floating_ips=tuple(FloatingIP(f, x) for f, x in floating),
            admin_state_up=admin_state_up)

    @property
    def namespace(self) -> str:
        return namespace_name(self.router_ids[0])

    async def router(self, *argv: str) -> str:
        return (await sh("ip", "netns", "exec", self.namespace, *argv)).stdout

    async def in_host(self, *argv: str) -> str:
        return (await sh("ip", "netns", "exec", self.host, *argv)).stdout

    async def serve(self, ns: str) -> None:
        """Start the server in ``ns`` and wait until it listens (so a failed
        connection later means the network, not a server still starting)."""
        await asyncio.create_subprocess_exec("ip", "netns", "exec", ns, sys.executable, "-c",
                                             SERVER, str(PORT), stdout=asyncio.subprocess.DEVNULL,
                                             stderr=asyncio.subprocess.DEVNULL)
        assert await self.reaches(ns, "127.0.0.1", "127.0.0.1")

    async def peer_seen(self, ns: str, target: str) -> str | None:
        """The address the server at ``target`` sees a connection from ``ns`` come from."""
        done = await sh("ip", "netns", "exec", ns, sys.executable, "-c", CLIENT, target, str(PORT),
                        check=False)
        line = done.stdout.strip().splitlines()[:1]
        return line[0].removeprefix("peer=") if done.returncode == 0 and line else None

    async def reaches(self, ns: str, target: str, expect_peer: str) -> bool:
        async def seen() -> bool:
            return await self.peer_seen(ns, target) == expect_peer
        return await eventually(seen)


async def _plug(spaces: Namespaces, host: str, role: str, bridge: str, address: str,
                gateway: str | None, n: int) -> Guest:
    guest = Guest(spaces.create(role), host, f"tap{role}", mac(0x80 + n))
    await guest.plug(bridge)
    await guest.configure(address, 24)
    if gateway:
        await sh("ip", "-n", guest.ns, "route", "add", "default", "via", gateway)
    return guest


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    spaces = Namespaces()
    routers: list[str] = []
    try:
        host = spaces.create("host")
        for bridge in ("brqa", "brqb", "brqext"):
            await sh("ip", "-n", host, "link", "add", bridge, "type", "bridge",
                     "stp_state", "0", "forward_delay", "0")
            await sh("ip", "-n", host, "link", "set", bridge, "up")
        guest_a = await _plug(spaces, host, "ga", "brqa", A_IP, "10.90.1.1", 1)
        guest_b = await _plug(spaces, host, "gb", "brqb", B_IP, "10.90.2.1", 2)
        outside = await _plug(spaces, host, "out", "brqext", OUTSIDE_IP, None, 3)
        settings = Settings(state_dir=tmp_path / "state", host_netns=host)
        w = World(settings, spaces, host, guest_a, guest_b, outside.ns, tmp_path, routers)
        yield w
    finally:
        # Router namespaces are named globally: never leave one behind.
        for router_id in routers:
            subprocess.run(["ip", "netns", "del", namespace_name(router_id)], capture_output=True)
        spaces.cleanup()


def floating_a() -> tuple[str, str]:
    return (FLOATING, A_IP)


async def test_routing_snat_floating_ip_and_removal(world: World) -> None:
    agent = world.agent()
    await agent.sync([world.spec()])
    links = json.loads(await world.router("ip", "-j", "link", "show"))
    by_name = {link["ifname"]: link for link in links}
    spec = world.spec()
    qr = by_name[f"qr-{spec.interfaces[0].port_id[:11]}"]
    assert qr["address"] == mac(1) and qr["mtu"] == 1450
    peer = devname(spec.interfaces[0].port_id)
    assert json.loads(await world.in_host("ip", "-j", "link", "show", peer))[0]["master"] == "brqa"
    # Forwarding is on in the router only.
    assert (await world.router("cat", "/proc/sys/net/ipv4/ip_forward")).strip() == "1"
    assert (await world.in_host("cat", "/proc/sys/net/ipv4/ip_forward")).strip() == "0"

    # East-west through the router, with the guests' own addresses.
    async def a_reaches_b() -> bool:
        return await world.guest_a.ping(B_IP)
    assert await eventually(a_reaches_b)
    await world.serve(world.guest_b.ns)
    assert await world.reaches(world.guest_a.ns, B_IP, A_IP)

    # North-south: the outside sees the gateway's address (SNAT).
    await world.serve(world.outside)
    assert await world.reaches(world.guest_a.ns, OUTSIDE_IP, GATEWAY_IP)
    assert not await ping_from(world.outside, FLOATING)

    # A floating IP: reachable from the outside (ping, TCP with the outside's
    # own address), A leaves as its floating address, B through the hairpin.
    await agent.sync([world.spec(floating_a())])
    await world.serve(world.guest_a.ns)
    assert await eventually(lambda: ping_from(world.outside, FLOATING))
    assert await world.reaches(world.outside, FLOATING, OUTSIDE_IP)
    assert await world.reaches(world.guest_a.ns, OUTSIDE_IP, FLOATING)
    assert await world.reaches(world.guest_b.ns, OUTSIDE_IP, GATEWAY_IP)
    assert await world.reaches(world.guest_b.ns, FLOATING, "10.90.1.1")
    assert FLOATING in world.agents[0].routers[spec.router_id].garp

    # Disassociation cuts access at once, connections already open included.
    client = await asyncio.create_subprocess_exec(
        "ip", "netns", "exec", world.outside, sys.executable, "-c", CLIENT, FLOATING, str(PORT),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert client.stdin is not None and client.stdout is not None
    try:
        assert (await client.stdout.readline()).decode().strip() == f"peer={OUTSIDE_IP}"
        client.stdin.write(b"one\n")
        assert (await client.stdout.readline()).decode().strip() == "one"
        await agent.sync([world.spec()])
        assert not await ping_from(world.outside, FLOATING)
        client.stdin.write(b"two\n")
        assert (await client.stdout.readline()).decode().strip() == "timeout"
    finally:
        client.kill()
        await client.wait()
    assert await world.peer_seen(world.outside, FLOATING) is None
    assert FLOATING not in await world.router("ip", "-o", "addr", "show")

    # Removing the router deletes its namespace and its ports on the bridges.
    await agent.sync([])
    assert world.namespace not in (await sh("ip", "netns", "list")).stdout
    assert peer not in await world.in_host("ip", "-o", "link", "show")
    assert not list((Path(world.settings.state_dir) / "l3").glob("*.nft"))


class Monitor:
    """``ip monitor`` (links, addresses, routes) or ``nft monitor`` in a
    namespace: every state change it reports, up to a marker change."""

    def __init__(self, ns: str, *argv: str) -> None:
        self.ns, self.argv = ns, argv
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            "ip", "netns", "exec", self.ns, *self.argv, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL)

    async def until(self, marker: str, timeout: float = 10.0) -> list[str]:
        """The lines reported before the first one containing ``marker``."""
        assert self.proc is not None and self.proc.stdout is not None
        seen: list[str] = []
        while True:
            line = (await asyncio.wait_for(self.proc.stdout.readline(), timeout)).decode()
            if marker in line:
                return seen
            # Earlier markers' trailing lines (the local route, address
            # lifetimes) are not the agent's doing.
            if not any(m in line for m in ("127.0.9.", "valid_lft", "mark", "# new generation")):
                seen.append(line.strip())

    def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()


async def _mark(ns: str, n: int) -> tuple[str, str]:
    """A change each monitor reports: an address on ``lo``, an nft table."""
    address = f"127.0.9.{n}"
    await sh("ip", "-n", ns, "addr", "add", f"{address}/32", "dev", "lo")
    await sh("ip", "netns", "exec", ns, "nft", "add", "table", "ip", f"mark{n}")
    return address, f"mark{n}"


async def test_same_specs_change_nothing_even_after_a_restart(world: World) -> None:
    spec = world.spec(floating_a())
    await world.agent().sync([spec])

    # IPv6 duplicate address detection of the new links' link-local
    # addresses ends with address events of its own: let it finish first.
    async def settled() -> bool:
        return not any([await world.router("ip", "-6", "addr", "show", "tentative"),
                        await world.in_host("ip", "-6", "addr", "show", "tentative")])
    assert await eventually(settled)
    monitors = [Monitor(world.namespace, "ip", "monitor", "link", "address", "route"),
                Monitor(world.namespace, "nft", "monitor"),
                Monitor(world.host, "ip", "monitor", "link", "address", "route")]
    try:
        for m in monitors:
            await m.start()
        # Every monitor is listening once it reports the first marker.
        for ns in (world.namespace, world.host):
            await _mark(ns, 1)
        for m in monitors:
            await m.until(_marker(m, 1))
        await world.agents[0].sync([spec])
        restarted = world.agent()  # nothing cached: it reads what is there
        await restarted.sync([spec])
        for ns in (world.namespace, world.host):
            await _mark(ns, 2)
        for m in monitors:
            assert await m.until(_marker(m, 2)) == [], m.argv
        assert restarted.routers[spec.router_id].garp == []
    finally:
        for m in monitors:
            m.stop()
    assert await eventually(lambda: ping_from(world.outside, FLOATING))

    # A namespace named like a router but not this host's is left alone; the
    # restarted agent's own router goes when it is no longer listed.
    foreign = str(uuid.uuid4())
    world.router_ids.append(foreign)
    await sh("ip", "netns", "add", namespace_name(foreign))
    await world.agent().sync([])
    listed = (await sh("ip", "netns", "list")).stdout
    assert namespace_name(foreign) in listed and world.namespace not in listed


def _marker(monitor: Monitor, n: int) -> str:
    return f"mark{n}" if monitor.argv[0] == "nft" else f"127.0.9.{n}"


async def test_security_groups_apply_through_the_floating_ip_and_admin_down(world: World) -> None:
    # A's group admits ICMP only (the linuxbridge backend's firewall, as it
    # renders it for a port bound to this host).
    for key in ("bridge-nf-call-iptables", "bridge-nf-call-ip6tables"):
        await sh("ip", "netns", "exec", world.host, "tee", f"/proc/sys/net/bridge/{key}",
                 input="1\n")
    rules = (Rule("egress"), Rule("egress", ethertype="IPv6"), Rule("ingress", protocol="icmp"))
    port = PortFilter(id=str(uuid.uuid4()), devname=world.guest_a.tap, bridge="brqa",
                      mac=world.guest_a.mac, ips=(A_IP,), rules=rules)
    await firewall.apply(world.settings, firewall.render([port]))
    await world.serve(world.guest_a.ns)
    agent = world.agent()
    await agent.sync([world.spec(floating_a())])

    async def outside_pings() -> bool:
        return await ping_from(world.outside, FLOATING)
    assert await eventually(outside_pings)
    assert await world.peer_seen(world.outside, FLOATING) is None
    # The group's TCP rule opens the floating IP; the guest sees the outside's address.
    opened = replace(port, rules=(*rules, Rule("ingress", protocol="tcp", port_range_min=PORT,
                                               port_range_max=PORT)))
    await firewall.apply(world.settings, firewall.render([opened]))
    assert await world.reaches(world.outside, FLOATING, OUTSIDE_IP)

    # Administratively down: the router's devices are down, nothing passes.
    await agent.sync([world.spec(floating_a(), admin_state_up=False)])
    states = json.loads(await world.router("ip", "-j", "link", "show"))
    assert all("UP" not in link["flags"] for link in states if link["ifname"] != "lo")
    assert not await ping_from(world.outside, FLOATING)
    await agent.sync([world.spec(floating_a())])
    assert await eventually(outside_pings)

    # Without SNAT, a guest with no floating IP cannot get out; one with it can.
    await world.serve(world.outside)
    assert await world.reaches(world.guest_b.ns, OUTSIDE_IP, GATEWAY_IP)
    await agent.sync([world.spec(floating_a(), enable_snat=False)])
    assert await world.peer_seen(world.guest_b.ns, OUTSIDE_IP) is None
    assert await world.reaches(world.guest_a.ns, OUTSIDE_IP, FLOATING)


async def test_a_failed_sync_is_redone_and_a_lost_namespace_rebuilt(world: World) -> None:
    agent = world.agent()
    spec = world.spec()
    elsewhere = replace(spec.interfaces[1], bridge="brqlate")
    late = replace(spec, interfaces=(spec.interfaces[0], elsewhere))
    # The bridge is not there yet (its network has no port on this host): the
    # sync fails, the rest of the router is built, the next sync finishes it.
    with pytest.raises(ip.CommandError):
        await agent.sync([late])
    assert await eventually(lambda: world.guest_a.ping("10.90.1.1"))
    await sh("ip", "-n", world.host, "link", "add", "brqlate", "type", "bridge")
    await sh("ip", "-n", world.host, "link", "set", "brqlate", "up")
    await agent.sync([late])
    peer = devname(elsewhere.port_id)
    assert json.loads(await world.in_host("ip", "-j", "link", "show", peer))[0]["master"] == "brqlate"

    # The host end fell off its bridge (the bridge was re-made): the periodic
    # re-read puts it back.
    await sh("ip", "-n", world.host, "link", "set", peer, "nomaster")
    agent.RESYNC_INTERVAL = 0.0
    await agent.sync([late])
    assert json.loads(await world.in_host("ip", "-j", "link", "show", peer))[0]["master"] == "brqlate"

    # Static routes come and go with the spec.
    routed = replace(late, routes=(Route("10.99.0.0/24", B_IP),))
    await agent.sync([routed])
    assert f"10.99.0.0/24 via {B_IP}" in await world.router("ip", "route", "show")
    await agent.sync([late])
    assert "10.99.0.0/24" not in await world.router("ip", "route", "show")

    # Someone deleted the namespace: the next sync (same specs) makes it again.
    await sh("ip", "netns", "del", world.namespace)
    await agent.sync([spec])
    assert await eventually(lambda: world.guest_b.ping("10.90.2.1"))
    assert "cirrus-nat" in await world.router("nft", "list", "tables")
