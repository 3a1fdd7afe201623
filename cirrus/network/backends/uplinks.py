"""What joins a network's bridge on this host to the same network on the
others: its uplink (Neutron's linuxbridge agent with l2population).

* ``vxlan``: a ``vxlan-<vni>`` device from ``local_ip``, its forwarding and
  ARP entries filled from the port bindings (:mod:`cirrus.network.l2pop`);
* ``vlan``: ``<interface>.<vlan>`` on the physical network's interface
  (``physical_interface_mappings``);
* ``flat``: that interface itself;
* ``local``: nothing, the bridge stays on its own.

A spanning network's gateway address and dnsmasq live on one host, its DHCP
host; its bridge there gets :func:`l2pop.gateway_mac`, which the other hosts'
entries point at. Elsewhere the bridge holds no address and must not keep that
MAC (the DHCP host may have moved).
"""
from __future__ import annotations

import logging
import random
from typing import Any

from cirrus.network import exception as exc
from cirrus.network import l2pop
from cirrus.network.host_view import HostView, bridge_name
from cirrus.network.linux import ip, vxlan
from cirrus.network.model import devname
from cirrus.network.segments import NetworkType, Segment

LOG = logging.getLogger(__name__)


class UplinkError(exc.NetworkError):
    """The host's settings cannot join this network (no local_ip, no mapping):
    a port of it bound here cannot come up."""


def parse_mappings(text: str) -> dict[str, str]:
    """``"physnet1:eth1,physnet2:bond0"`` → {physnet: interface}."""
    out = {}
    for part in (p.strip() for p in text.split(",")):
        if part:
            physnet, sep, interface = part.partition(":")
            if not sep or not physnet or not interface:
                raise ValueError(f"physical_interface_mappings: {part!r} is not PHYSNET:INTERFACE")
            out[physnet.strip()] = interface.strip()
    return out


def gateway_location(network_id: str, subnets: list[dict[str, Any]],
                     host: str | None) -> l2pop.PortLocation | None:
    """Where a spanning network's gateway lives: its DHCP host's bridge."""
    if host is None:
        return None
    gateways = tuple(s["gateway_ip"] for s in subnets if s.get("gateway_ip"))
    return l2pop.PortLocation(host, l2pop.gateway_mac(network_id), gateways)


def locations(view: HostView, network_id: str,
              subnets: list[dict[str, Any]]) -> list[l2pop.PortLocation]:
    """Every port of a spanning network, and its gateway, by host."""
    out = [l2pop.PortLocation(p["binding_host_id"], p["mac_address"],
                              tuple(ip_["ip_address"] for ip_ in p["fixed_ips"]))
           for p in view.span_ports.get(network_id, [])]
    gateway = gateway_location(network_id, subnets, view.dhcp_hosts.get(network_id))
    return out + ([gateway] if gateway else [])


def desired_entries(view: HostView, host: str, network_id: str,
                    subnets: list[dict[str, Any]]) -> l2pop.L2Entries:
    endpoints = {h: agent.tunneling_ip for h, agent in view.agents.items() if agent.tunneling_ip}
    return l2pop.desired_entries(host, endpoints, locations(view, network_id, subnets))


def random_mac() -> str:
    """A locally administered unicast MAC for a bridge giving up the gateway's."""
    return "02:" + ":".join(f"{random.randrange(256):02x}" for _ in range(5))


def is_uplink(dev: str) -> bool:
    """Whether a device on one of our bridges is an uplink, not a guest's tap."""
    return not dev.startswith(devname(""))


class Uplinks:
    """The uplink devices and VXLAN entries of this host's bridges."""

    def __init__(self, settings: Any, host: str) -> None:
        self.settings = settings
        self.host = host
        self.mappings = parse_mappings(settings.physical_interface_mappings)
        # network id → what was last made true (skips unchanged networks).
        self._done: dict[str, tuple[Any, ...]] = {}

    async def ensure(self, network: dict[str, Any], subnets: list[dict[str, Any]],
                     view: HostView) -> None:
        """The network's uplink on its bridge, its VXLAN entries, and the
        bridge's MAC (the gateway's on the DHCP host). Raises UplinkError
        when this host's settings cannot join it, ip.CommandError on failure."""
        segment = Segment.of(network)
        if segment.network_type == NetworkType.LOCAL:
            return
        serving = view.serves_dhcp(network["id"], self.host)
        entries = (desired_entries(view, self.host, network["id"], subnets)
                   if segment.network_type == NetworkType.VXLAN else None)
        state = (segment, network["mtu"], serving, entries)
        if self._done.get(network["id"]) == state:
            return
        self._done.pop(network["id"], None)
        bridge = bridge_name(network["id"])
        dev = await self._ensure_device(segment, bridge, network["mtu"])
        await self._ensure_bridge_mac(network["id"], bridge, serving)
        if entries is not None:
            await vxlan.reconcile(self.settings, dev, entries)
        self._done[network["id"]] = state

    def forget(self, network_id: str) -> None:
        self._done.pop(network_id, None)

    async def _ensure_device(self, segment: Segment, bridge: str, mtu: int | None) -> str:
        if segment.network_type == NetworkType.VXLAN:
            if not self.settings.local_ip:
                raise UplinkError(reason=f"vxlan network {segment.segmentation_id}: "
                                         f"local_ip is not set on this host")
            assert segment.segmentation_id is not None
            return await vxlan.ensure_vxlan(self.settings, segment.segmentation_id,
                                            self.settings.local_ip, bridge, mtu)
        interface = self.mappings.get(segment.physical_network)
        if interface is None:
            raise UplinkError(reason=f"physical network {segment.physical_network!r} has no "
                                     f"interface in physical_interface_mappings")
        if segment.network_type == NetworkType.VLAN:
            assert segment.segmentation_id is not None
            return await vxlan.ensure_vlan(self.settings, interface, segment.segmentation_id,
                                           bridge, mtu)
        return await vxlan.ensure_flat(self.settings, interface, bridge)

    async def _ensure_bridge_mac(self, network_id: str, bridge: str, serving: bool) -> None:
        gateway = l2pop.gateway_mac(network_id)
        current = await ip.link_mac(self.settings, bridge)
        if serving and current != gateway:
            await ip.set_mac(self.settings, bridge, gateway)
        elif not serving and current == gateway:
            await ip.set_mac(self.settings, bridge, random_mac())

    async def release(self, bridge: str, links: dict[str, dict[str, Any]]) -> None:
        """Take the uplinks off ``bridge`` before it goes: VXLAN and VLAN
        devices are deleted, a flat network's interface is only released."""
        for name, link in links.items():
            if link.get("master") != bridge or not is_uplink(name):
                continue
            if name.startswith("vxlan-") or "." in name:
                await ip.delete_link(self.settings, name)
            else:
                await ip.run(self.settings, ["ip", "link", "set", "dev", name, "nomaster"])

