"""The linuxbridge backend on real bridges, dnsmasq and nftables.

A "host" network namespace plays the compute host (``host_netns``); "guest"
namespaces are plugged into it by veth pairs named like the ports' taps, as
libvirt would. Ports, groups and rules live in a real database and are bound
through the Binder, as compute binds them.
"""
from __future__ import annotations

import asyncio
import ipaddress
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.migrate import upgrade
from cirrus.db.engine import Database
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network.backends.linuxbridge import LinuxBridgeBackend
from cirrus.network.binding import Binder
from cirrus.network.host_view import bridge_name
from cirrus.network.model import devname
from tests.host.netns import Guest, Namespaces, eventually, ping_from, sh, why_not

HOST = "hostA"
PROJECT = "p-hostnet"
CTX = RequestContext(user_id="u", project_id=PROJECT, roles=["admin"])

pytestmark = pytest.mark.slow


class Env:
    """One host namespace, its database and backends, and helpers to make
    networks, groups and ports the way the network service does."""

    def __init__(self, settings: Any, db: Database, spaces: Namespaces, host_ns: str,
                 workdir: Path) -> None:
        self.settings, self.db, self.spaces = settings, db, spaces
        self.host_ns, self.workdir = host_ns, workdir
        self.ups: list[str] = []
        self.backends: list[LinuxBridgeBackend] = []
        self.binder: Binder | None = None

    async def start_backend(self) -> LinuxBridgeBackend:
        backend = LinuxBridgeBackend(self.settings, HOST)
        backend.SYNC_INTERVAL = 0.3  # rule changes show up quickly in tests
        self.binder = Binder(self.db, backend, None)

        async def record(port_id: str) -> None:
            self.ups.append(port_id)
            assert self.binder is not None
            await self.binder.port_up(port_id)
        backend.set_port_up_callback(record)
        await backend.start()
        self.backends.append(backend)
        return backend

    async def stop_backends(self) -> None:
        for backend in self.backends:
            await backend.stop()
        self.backends.clear()

    async def network(self, cidr: str, mtu: int = 1400) -> tuple[dict[str, Any], dict[str, Any]]:
        def create(conn: Any) -> tuple[dict[str, Any], dict[str, Any]]:
            net = net_db.create_network(conn, CTX, {"name": "n", "project_id": PROJECT, "mtu": mtu})
            sub = net_db.create_subnet(conn, CTX, {"network_id": net["id"], "cidr": cidr,
                                                   "dns_nameservers": ["192.0.2.53"]})
            return net, sub
        return await self.db.run(create)

    async def group(self, name: str) -> str:
        """A group with Neutron's egress-any rules and no ingress rule."""
        return (await self.db.run(sg_db.create_group, CTX, name, "", PROJECT))["id"]

    async def rule(self, group: str, **values: Any) -> None:
        await self.db.run(sg_db.create_rule, CTX, {"security_group_id": group, **values})

    async def port(self, net: dict[str, Any], groups: list[str],
                   port_security: bool = True) -> dict[str, Any]:
        def create(conn: Any) -> dict[str, Any]:
            row = port_db.create_port(conn, CTX, {
                "network_id": net["id"], "project_id": PROJECT, "security_groups": groups,
                "device_id": str(uuid.uuid4()), "device_owner": "compute:nova",
                "port_security_enabled": port_security, "binding_host_id": HOST},
                self.settings.base_mac)
            row["ip"] = port_db.fixed_ips_of(conn, [row["id"]])[row["id"]][0]["ip_address"]
            return row
        return await self.db.run(create)

    def guest(self, port: dict[str, Any]) -> Guest:
        return Guest(self.spaces.create(f"g{len(self.spaces.names)}"), self.host_ns,
                     devname(port["id"]), port["mac_address"])

    async def unbind(self, port: dict[str, Any]) -> None:
        before, _ = await self.db.run(port_db.update_port, CTX, port["id"], {"binding_host_id": ""})
        assert self.binder is not None
        await self.binder.unbound(before)

    async def status(self, port: dict[str, Any]) -> str:
        return (await self.db.read(port_db.get_port, CTX, port["id"]))["status"]

    async def host(self, *argv: str) -> str:
        return (await sh("ip", "netns", "exec", self.host_ns, *argv)).stdout

    async def wait_up(self, port_id: str, timeout: float = 5.0) -> bool:
        async def up() -> bool:
            return port_id in self.ups
        return await eventually(up, timeout)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    spaces = Namespaces()
    host_ns = spaces.create("host")
    state = tmp_path / "state"
    state.mkdir()
    # Its own SQLite database: only the network tables matter here.
    settings = Settings(state_dir=state, host_netns=host_ns, network_backend="linuxbridge",
                        vif_plugging_timeout=60.0)
    upgrade(settings.database_url)
    db = Database(settings.database_url)
    environment = Env(settings, db, spaces, host_ns, tmp_path)
    try:
        yield environment
    finally:
        try:
            await environment.stop_backends()
        finally:
            spaces.cleanup()
            db.close()


def dnsmasq_pids(env: Env) -> list[int]:
    """dnsmasq processes using this test's state dir."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if "dnsmasq" in cmdline and str(env.settings.state_dir) in cmdline:
                pids.append(int(proc.name))
    return pids


async def test_ports_dhcp_security_groups_anti_spoofing_and_cleanup(env: Env) -> None:
    backend = await env.start_backend()
    net, subnet = await env.network("10.77.0.0/24", mtu=1400)
    bridge = bridge_name(net["id"])
    group_a, group_b = await env.group("ga"), await env.group("gb")
    port_a, port_b = await env.port(net, [group_a]), await env.port(net, [group_b])
    assert env.binder is not None
    await env.binder.bound(port_a)
    await env.binder.bound(port_b)

    # The bridge holds the gateway; bridged traffic goes through the inet hooks.
    assert "10.77.0.1/24" in await env.host("ip", "-o", "addr", "show", "dev", bridge)
    assert (await env.host("cat", "/proc/sys/net/bridge/bridge-nf-call-iptables")).strip() == "1"
    hosts = (Path(env.settings.state_dir) / "dhcp" / net["id"] / "hosts").read_text()
    assert f"{port_a['mac_address']},{port_a['ip']},host-{port_a['ip'].replace('.', '-')}" in hosts
    assert port_b["mac_address"] in hosts
    assert len(dnsmasq_pids(env)) == 1

    # Up only once the tap is on the bridge (libvirt starts the domain paused).
    await asyncio.sleep(0.5)
    assert env.ups == [] and await env.status(port_a) == "DOWN"
    guest_a, guest_b = env.guest(port_a), env.guest(port_b)
    await guest_a.plug(bridge)
    assert await env.wait_up(port_a["id"])
    assert await env.status(port_a) == "ACTIVE"
    await guest_b.plug(bridge)
    assert await env.wait_up(port_b["id"])
    assert env.ups.count(port_a["id"]) == 1

    # DHCP hands out exactly the allocated addresses, with gateway, MTU and DNS.
    prefix = ipaddress.ip_network(subnet["cidr"]).prefixlen
    for guest, port in ((guest_a, port_a), (guest_b, port_b)):
        lease = await guest.dhcp(env.workdir)
        assert lease["ip"] == port["ip"]
        assert lease["subnet"] == "255.255.255.0"
        assert lease["router"] == "10.77.0.1" and lease["mtu"] == "1400"
        assert lease["dns"] == "192.0.2.53"
        await guest.configure(lease["ip"], prefix)

    # No ingress rule: the host cannot reach A; an ICMP rule from the host opens it.
    assert not await ping_from(env.host_ns, port_a["ip"])
    await env.rule(group_a, direction="ingress", protocol="icmp", remote_ip_prefix="10.77.0.1/32")

    async def host_reaches_a() -> bool:
        return await ping_from(env.host_ns, port_a["ip"])
    assert await eventually(host_reaches_a), "the periodic sync did not apply the new rule"
    # Egress (default rules) lets guests reach the gateway.
    assert await guest_b.ping("10.77.0.1")

    # A → B only once B's group admits A's group; replies return by conntrack,
    # while B still cannot start anything towards A.
    assert not await guest_a.ping(port_b["ip"])
    await env.rule(group_b, direction="ingress", protocol="icmp", remote_group_id=group_a)

    async def a_reaches_b() -> bool:
        return await guest_a.ping(port_b["ip"])
    assert await eventually(a_reaches_b)
    assert not await guest_b.ping(port_a["ip"])

    # A spoofed source is dropped on the bridge even where the group would allow it.
    await env.rule(group_b, direction="ingress", protocol="icmp", remote_ip_prefix="10.77.0.0/24")
    await backend.sync()
    await sh("ip", "-n", guest_a.ns, "addr", "add", "10.77.0.200/24", "dev", "eth0")
    assert not await guest_a.ping(port_b["ip"], source="10.77.0.200")
    assert await guest_a.ping(port_b["ip"], source=port_a["ip"])
    spoof = await env.host("nft", "list", "chain", "bridge", "cirrus", f"spoof-{port_a['id']}")
    # Dropped as IPv4 from a foreign source, or already as ARP from it.
    dropped = re.findall(r"(?:ip saddr|saddr ip) != [^\n]*counter packets (\d+)", spoof)
    assert sum(map(int, dropped)) >= 1, spoof

    # Unplug A: its DHCP entry and rules go; B keeps its dnsmasq.
    await guest_a.unplug()
    await env.unbind(port_a)
    hosts = (Path(env.settings.state_dir) / "dhcp" / net["id"] / "hosts").read_text()
    assert port_a["mac_address"] not in hosts and port_b["mac_address"] in hosts
    assert port_a["id"] not in await env.host("nft", "list", "ruleset")
    assert port_b["id"] in await env.host("nft", "list", "ruleset")
    assert len(dnsmasq_pids(env)) == 1

    # Unplug B: nothing of the network's DHCP or rules is left.
    await guest_b.unplug()
    await env.unbind(port_b)
    assert dnsmasq_pids(env) == []
    assert not (Path(env.settings.state_dir) / "dhcp" / net["id"]).exists()
    assert "cirrus" not in await env.host("nft", "list", "tables")

    # The network is deleted (in the API process): the next sync drops the bridge.
    for port in (port_a, port_b):
        await env.db.run(port_db.delete_port, CTX, port["id"])
    await env.db.run(net_db.delete_network, CTX, net["id"])
    await backend.sync()
    assert bridge not in await env.host("ip", "-o", "link", "show")


async def test_restart_recreates_dhcp_firewall_and_tap_watch(env: Env) -> None:
    backend = await env.start_backend()
    net, subnet = await env.network("10.78.0.0/24")
    bridge = bridge_name(net["id"])
    group = await env.group("g")
    await env.rule(group, direction="ingress", protocol="icmp")
    port_a, port_b = await env.port(net, [group]), await env.port(net, [group])
    assert env.binder is not None
    await env.binder.bound(port_a)
    guest_a = env.guest(port_a)
    await guest_a.plug(bridge)
    assert await env.wait_up(port_a["id"])
    await env.stop_backends()
    assert dnsmasq_pids(env) == []
    # Rules stay while compute is down: the guests keep running.
    assert port_a["id"] in await env.host("nft", "list", "ruleset")

    # B was bound while compute was down (e.g. through the API): the restarted
    # backend serves both, and reports B up when its tap appears.
    await env.db.run(port_db.update_port, CTX, port_b["id"], {"binding_host_id": HOST})
    await env.start_backend()
    assert len(dnsmasq_pids(env)) == 1
    hosts = (Path(env.settings.state_dir) / "dhcp" / net["id"] / "hosts").read_text()
    assert port_a["mac_address"] in hosts and port_b["mac_address"] in hosts
    assert port_b["id"] in await env.host("nft", "list", "ruleset")
    lease = await guest_a.dhcp(env.workdir)
    assert lease["ip"] == port_a["ip"]
    guest_b = env.guest(port_b)
    await guest_b.plug(bridge)
    assert await env.wait_up(port_b["id"])
    assert env.ups.count(port_a["id"]) == 1  # A was ACTIVE already: not reported again
    lease = await guest_b.dhcp(env.workdir)
    assert lease["ip"] == port_b["ip"]
    await guest_b.configure(lease["ip"], 24)
    assert await ping_from(env.host_ns, port_b["ip"])


async def test_port_security_disabled_is_not_filtered(env: Env) -> None:
    await env.start_backend()
    net, _ = await env.network("10.79.0.0/24")
    bridge = bridge_name(net["id"])
    port = await env.port(net, [], port_security=False)
    assert env.binder is not None
    await env.binder.bound(port)
    guest = env.guest(port)
    await guest.plug(bridge)
    assert await env.wait_up(port["id"])
    lease = await guest.dhcp(env.workdir)
    assert lease["ip"] == port["ip"]
    # Any source address, and no ingress rule needed.
    await guest.configure("10.79.0.250", 24)
    assert await guest.ping("10.79.0.1", source="10.79.0.250")
    assert await ping_from(env.host_ns, "10.79.0.250")
    assert port["id"] not in await env.host("nft", "list", "ruleset")


async def test_a_freed_address_is_served_to_the_next_port(env: Env) -> None:
    """dnsmasq keeps a lease until it expires; a removed port's lease must be
    released, or the next port given that address gets no DHCP answer."""
    await env.start_backend()
    net, _ = await env.network("10.80.0.0/24")
    bridge = bridge_name(net["id"])
    keeper, first = await env.port(net, []), await env.port(net, [])  # keeper: dnsmasq stays
    assert env.binder is not None
    for port in (keeper, first):
        await env.binder.bound(port)
    guest = env.guest(first)
    await guest.plug(bridge)
    assert (await guest.dhcp(env.workdir))["ip"] == first["ip"]
    await guest.unplug()
    await env.unbind(first)
    await env.db.run(port_db.delete_port, CTX, first["id"])

    def create(conn: Any) -> dict[str, Any]:
        return port_db.create_port(conn, CTX, {
            "network_id": net["id"], "project_id": PROJECT, "security_groups": [],
            "device_id": str(uuid.uuid4()), "device_owner": "compute:nova",
            "port_security_enabled": False, "binding_host_id": HOST,
            "fixed_ips": [{"ip_address": first["ip"]}]}, env.settings.base_mac)
    second = await env.db.run(create)
    assert second["mac_address"] != first["mac_address"]
    await env.binder.bound(second)
    reused = env.guest(second)
    await reused.plug(bridge)
    assert (await reused.dhcp(env.workdir))["ip"] == first["ip"]
