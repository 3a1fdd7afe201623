"""Tenant networks across hosts on the real kernel: two "hosts" as network
namespaces joined by a veth underlay, each running its own linuxbridge
backend on one shared database, guests plugged in as libvirt would.

Host A may serve DHCP, host B may not, so every network's DHCP host is A and
B's guests get their leases across the overlay.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.db.migrate import upgrade
from cirrus.network import networks as net_db
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network.backends.linuxbridge import LinuxBridgeBackend
from cirrus.network.binding import Binder
from cirrus.network.host_view import bridge_name
from cirrus.network.l2pop import FLOODING_MAC, gateway_mac
from cirrus.network.model import devname
from cirrus.network.segments import NetworkType, Segment, SegmentConfig
from tests.host.netns import Guest, Namespaces, eventually, sh, why_not

PROJECT = "p-overlay"
CTX = RequestContext(user_id="u", project_id=PROJECT, roles=["admin"])
UNDERLAY = {"A": "192.0.2.1", "B": "192.0.2.2"}
CONFIG = SegmentConfig(tenant_type=NetworkType.VXLAN, vni_ranges=((700, 799),),
                       vlan_ranges={"physnet1": ()}, flat_networks=frozenset({"physnet1"}))

pytestmark = pytest.mark.slow


@dataclass
class Host:
    name: str
    ns: str
    backend: LinuxBridgeBackend
    binder: Binder
    settings: Settings

    async def sh(self, *argv: str) -> str:
        return (await sh("ip", "netns", "exec", self.ns, *argv)).stdout

    async def links(self) -> dict[str, dict[str, Any]]:
        found = json.loads(await self.sh("ip", "-d", "-j", "link", "show"))
        return {link["ifname"]: link for link in found}

    async def fdb(self, dev: str) -> set[tuple[str, str]]:
        entries = json.loads(await self.sh("bridge", "-j", "fdb", "show", "dev", dev))
        return {(e["mac"], e["dst"]) for e in entries if e.get("dst")}

    async def neigh(self, dev: str) -> set[tuple[str, str]]:
        entries = json.loads(await self.sh("ip", "-j", "neigh", "show", "dev", dev))
        return {(e["dst"], e["lladdr"]) for e in entries if "PERMANENT" in e.get("state", [])}


@dataclass
class Cloud:
    db: Database
    spaces: Namespaces
    workdir: Path
    hosts: dict[str, Host] = field(default_factory=dict)

    async def sync(self) -> None:
        """Both hosts re-read the database (their periodic sync, made now)."""
        for host in self.hosts.values():
            await host.backend.sync()

    async def network(self, cidr: str, segment: Segment | None = None) -> dict[str, Any]:
        def create(conn: Any) -> dict[str, Any]:
            net = net_db.create_network(conn, CTX, {"name": "n", "project_id": PROJECT},
                                        CONFIG, segment)
            net_db.create_subnet(conn, CTX, {"network_id": net["id"], "cidr": cidr})
            return net
        return await self.db.run(create)

    async def group(self, ingress_icmp_from_itself: bool) -> str:
        group = (await self.db.run(sg_db.create_group, CTX, "g", "", PROJECT))["id"]
        if ingress_icmp_from_itself:
            await self.db.run(sg_db.create_rule, CTX, {
                "security_group_id": group, "direction": "ingress", "protocol": "icmp",
                "remote_group_id": group})
        return group

    async def guest(self, net: dict[str, Any], host: str, groups: list[str],
                    port_security: bool = True) -> tuple[Guest, dict[str, Any]]:
        """A port bound to ``host`` and a guest namespace plugged into it."""
        def create(conn: Any) -> dict[str, Any]:
            row = port_db.create_port(conn, CTX, {
                "network_id": net["id"], "project_id": PROJECT, "security_groups": groups,
                "device_id": str(uuid.uuid4()), "device_owner": "compute:nova",
                "port_security_enabled": port_security, "binding_host_id": host},
                "fa:16:3e:00:00:00")
            row["ip"] = port_db.fixed_ips_of(conn, [row["id"]])[row["id"]][0]["ip_address"]
            return row
        port = await self.db.run(create)
        await self.hosts[host].binder.bound(port)
        guest = Guest(self.spaces.create(f"g{len(self.spaces.names)}"), self.hosts[host].ns,
                      devname(port["id"]), port["mac_address"])
        await guest.plug(bridge_name(net["id"]))
        return guest, port

    async def unbind(self, port: dict[str, Any], guest: Guest) -> None:
        await guest.unplug()
        before, _ = await self.db.run(port_db.update_port, CTX, port["id"],
                                      {"binding_host_id": ""})
        await self.hosts[before["binding_host_id"]].binder.unbound(before)


@pytest.fixture
async def cloud(tmp_path: Path) -> AsyncIterator[Cloud]:
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    spaces = Namespaces()
    url = f"sqlite:///{tmp_path / 'cirrus.db'}"
    upgrade(url)
    db = Database(url)
    environment = Cloud(db, spaces, tmp_path)
    try:
        namespaces = {name: spaces.create(f"host{name}") for name in UNDERLAY}
        # ul0: the underlay the tunnels run on; ph0: physnet1, a wire of its own.
        for wire in ("ul0", "ph0"):
            await sh("ip", "link", "add", wire, "netns", namespaces["A"], "type", "veth",
                     "peer", "name", wire, "netns", namespaces["B"])
        for name, ns in namespaces.items():
            await sh("ip", "-n", ns, "addr", "add", f"{UNDERLAY[name]}/24", "dev", "ul0")
            await sh("ip", "-n", ns, "link", "set", "ul0", "up")
            state = tmp_path / f"state-{name}"
            state.mkdir()
            settings = Settings(state_dir=state, database_url=url, host_netns=ns,
                                network_backend="linuxbridge", local_ip=UNDERLAY[name],
                                physical_interface_mappings="physnet1:ph0",
                                dhcp_agent=name == "A", vif_plugging_timeout=60.0)
            backend = LinuxBridgeBackend(settings, name)
            backend.SYNC_INTERVAL = 3600  # the test syncs when it wants to
            binder = Binder(db, backend, None)
            environment.hosts[name] = Host(name, ns, backend, binder, settings)
        if not await kernel_has(namespaces["A"], "vxlan", "id", "1", "dstport", "4789"):
            pytest.skip("this kernel has no VXLAN devices")
        for host in environment.hosts.values():
            await host.backend.start()
        yield environment
    finally:
        try:
            for host in environment.hosts.values():
                await host.backend.stop()
        finally:
            spaces.cleanup()
            db.close()


async def kernel_has(ns: str, kind: str, *args: str) -> bool:
    """Whether the kernel makes ``kind`` devices (a probe in namespace ``ns``)."""
    made = await sh("ip", "-n", ns, "link", "add", "link", "ul0", "name", "probe0", "type", kind,
                    *args, check=False)
    await sh("ip", "-n", ns, "link", "del", "probe0", check=False)
    return made.returncode == 0


async def reaches(guest: Guest, target: str) -> bool:
    async def ping() -> bool:
        return await guest.ping(target)
    return await eventually(ping, timeout=10)


async def test_guests_on_two_hosts_share_a_vxlan_network_and_nothing_else(cloud: Cloud) -> None:
    a, b = cloud.hosts["A"], cloud.hosts["B"]
    net = await cloud.network("10.81.0.0/24")
    vni = net["segmentation_id"]
    assert (net["network_type"], net["mtu"]) == ("vxlan", 1450) and 700 <= vni <= 799
    group, closed = await cloud.group(True), await cloud.group(False)
    guest_a, port_a = await cloud.guest(net, "A", [group])
    guest_b, port_b = await cloud.guest(net, "B", [group])
    guest_c, port_c = await cloud.guest(net, "B", [closed])
    await cloud.sync()

    # Each host: vxlan-<vni> from its underlay address, no learning, ARP
    # answered by the device, on the network's bridge, at the network's MTU.
    dev, bridge = f"vxlan-{vni}", bridge_name(net["id"])
    for host in (a, b):
        link = (await host.links())[dev]
        info = link["linkinfo"]["info_data"]
        assert (info["id"], info["local"], info["port"]) == (vni, UNDERLAY[host.name], 4789)
        assert info["learning"] is False and info["proxy"] is True
        assert link["master"] == bridge and link["mtu"] == 1450
    # A floods to B and knows B's ports; B floods to A and knows A's port and
    # the gateway, which lives on A's bridge (A serves the DHCP).
    assert await a.fdb(dev) == {(FLOODING_MAC, UNDERLAY["B"]), (port_b["mac_address"], UNDERLAY["B"]),
                                (port_c["mac_address"], UNDERLAY["B"])}
    assert await a.neigh(dev) == {(port_b["ip"], port_b["mac_address"]),
                                  (port_c["ip"], port_c["mac_address"])}
    gw_mac = gateway_mac(net["id"])
    assert await b.fdb(dev) == {(FLOODING_MAC, UNDERLAY["A"]), (port_a["mac_address"], UNDERLAY["A"]),
                                (gw_mac, UNDERLAY["A"])}
    assert (port_a["ip"], port_a["mac_address"]) in await b.neigh(dev)
    assert ("10.81.0.1", gw_mac) in await b.neigh(dev)
    assert "10.81.0.1/24" in await a.sh("ip", "-o", "addr", "show", "dev", bridge)
    assert "10.81.0.1" not in await b.sh("ip", "-o", "addr", "show", "dev", bridge)

    # DHCP is served once, by A, and reaches B's guests through the overlay,
    # with the MTU the overlay leaves.
    assert (Path(a.settings.state_dir) / "dhcp" / net["id"] / "pid").exists()
    assert not (Path(b.settings.state_dir) / "dhcp" / net["id"]).exists()
    for guest, port in ((guest_a, port_a), (guest_b, port_b), (guest_c, port_c)):
        lease = await guest.dhcp(cloud.workdir)
        assert (lease["ip"], lease["router"], lease["mtu"]) == (port["ip"], "10.81.0.1", "1450")
        await guest.configure(lease["ip"], 24)

    # Across the overlay, both ways; the security group is enforced on B's side.
    assert await reaches(guest_a, port_b["ip"])
    assert await reaches(guest_b, port_a["ip"])
    assert await reaches(guest_b, "10.81.0.1")  # the gateway on A
    assert not await guest_a.ping(port_c["ip"])

    # A guest on another VNI, even holding an address of this subnet, reaches
    # its own network across the overlay but nothing of this one.
    other = await cloud.network("10.82.0.0/24")
    assert other["segmentation_id"] != vni
    guest_d, port_d = await cloud.guest(other, "B", [], port_security=False)
    await cloud.sync()
    lease = await guest_d.dhcp(cloud.workdir)
    assert lease["ip"] == port_d["ip"]
    await guest_d.configure(lease["ip"], 24)
    await guest_d.configure("10.81.0.200", 24)
    assert await reaches(guest_d, "10.82.0.1")
    assert not await guest_d.ping(port_a["ip"])
    assert not await guest_a.ping("10.81.0.200")

    # The last ports of this network on B go: A forgets B, and B drops the
    # network's bridge and tunnel.
    for guest, port in ((guest_b, port_b), (guest_c, port_c)):
        await cloud.unbind(port, guest)
    await cloud.sync()
    assert await a.fdb(dev) == set() and await a.neigh(dev) == set()
    assert dev not in await b.links() and bridge not in await b.links()
    # The other network still joins the two hosts.
    assert f"vxlan-{other['segmentation_id']}" in await b.links()


async def test_guests_on_two_hosts_share_a_vlan_provider_network(cloud: Cloud) -> None:
    a, b = cloud.hosts["A"], cloud.hosts["B"]
    if not await kernel_has(a.ns, "vlan", "id", "5"):
        pytest.skip("this kernel has no 802.1Q devices (8021q)")
    net = await cloud.network("10.83.0.0/24", Segment(NetworkType.VLAN, "physnet1", 100))
    assert net["mtu"] == 1500
    guest_a, port_a = await cloud.guest(net, "A", [], port_security=False)
    guest_b, port_b = await cloud.guest(net, "B", [], port_security=False)
    await cloud.sync()
    for host in (a, b):
        link = (await host.links())["ph0.100"]
        assert link["linkinfo"]["info_data"]["id"] == 100
        assert link["master"] == bridge_name(net["id"])
    for guest, port in ((guest_a, port_a), (guest_b, port_b)):
        lease = await guest.dhcp(cloud.workdir)
        assert lease["ip"] == port["ip"]
        await guest.configure(lease["ip"], 24)
    assert await reaches(guest_b, port_a["ip"])


async def test_guests_on_two_hosts_share_a_flat_provider_network(cloud: Cloud) -> None:
    a, b = cloud.hosts["A"], cloud.hosts["B"]
    net = await cloud.network("10.84.0.0/24", Segment(NetworkType.FLAT, "physnet1", 0))
    guest_a, port_a = await cloud.guest(net, "A", [], port_security=False)
    guest_b, port_b = await cloud.guest(net, "B", [], port_security=False)
    await cloud.sync()
    bridge = bridge_name(net["id"])
    for host in (a, b):  # the interface itself, untagged, on the bridge
        assert (await host.links())["ph0"]["master"] == bridge
    for guest, port in ((guest_a, port_a), (guest_b, port_b)):
        lease = await guest.dhcp(cloud.workdir)
        assert (lease["ip"], lease["mtu"]) == (port["ip"], "1500")
        await guest.configure(lease["ip"], 24)
    assert await reaches(guest_b, port_a["ip"])
    # B's last port goes: its bridge goes, the interface stays, released.
    await cloud.unbind(port_b, guest_b)
    await cloud.sync()
    links = await b.links()
    assert bridge not in links and "master" not in links["ph0"]
