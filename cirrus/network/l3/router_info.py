"""One router's namespace made to match its spec (Neutron's
``agent/l3/router_info.py``, ``RouterInfo.process``).

:meth:`RouterInfo.process` reads the namespace once (``ip -j addr``, the
routes) and the host's links once, then runs only the commands that change
something: devices that are missing, wrong or extra, addresses, routes, and
the NAT script when its text changed.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import shutil
from dataclasses import dataclass, field
from typing import Any

from cirrus.network.l3 import nat, namespaces
from cirrus.network.l3.namespaces import InNamespace
from cirrus.network.l3.spec import RouterPort, RouterSpec
from cirrus.network.linux import ip
from cirrus.network.model import devname

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class WantedDevice:
    """A ``qr-``/``qg-`` device as the spec wants it."""

    name: str
    port: RouterPort
    cidrs: frozenset[str]


@dataclass
class RouterInfo:
    """What this host last made of one router: the spec fully applied
    (None: never, or not since a failure) and the NAT script loaded."""

    router_id: str
    spec: RouterSpec | None = None
    nat: str | None = None
    garp: list[str] = field(default_factory=list)  # addresses announced, for tests/logs

    async def process(self, settings: Any, spec: RouterSpec) -> None:
        """Make the namespace match ``spec``; raises :class:`ip.CommandError`
        (the next sync retries from what is there)."""
        self.spec = None
        inside = InNamespace(spec.namespace)
        if not namespaces.exists(spec.namespace):
            inside = await namespaces.create(spec.namespace)
            self.nat = None
        have = await namespaces.links(inside)
        host = await ip.links(settings)
        wanted = wanted_devices(spec)
        for dev in wanted.values():
            await plug(settings, inside, dev, have.get(dev.name), host.get(devname(dev.port.port_id)),
                       spec.admin_state_up)
            added = await set_addresses(inside, dev, have.get(dev.name, {}))
            if spec.gateway is not None and dev.port == spec.gateway.port and spec.admin_state_up:
                await self._announce(inside, dev.name, added)
        for name in have:
            if name.startswith(namespaces.ROUTER_DEVICE_PREFIXES) and name not in wanted:
                await ip.run(inside, ["ip", "link", "del", "dev", name])
        script = nat.render(spec)
        if script != self.nat:
            self.nat = None  # unknown until nft succeeds
            await ip.run(inside, ["nft", "-f", "-"], input=script)
            self.nat = script
        await set_routes(inside, spec)
        self.spec = spec

    async def _announce(self, inside: InNamespace, dev: str, added: list[str]) -> None:
        """Gratuitous ARP for new IPv4 addresses on the gateway (a floating IP
        moved from another router or host is reachable at once)."""
        argv = arping_argv()
        for cidr in added:
            address = str(ipaddress.ip_interface(cidr).ip)
            if argv is None or ":" in address:
                continue
            await ip.run(inside, [*argv, "-U", "-c", "1", "-I", dev, "-s", address, address],
                         check=False)
            self.garp.append(address)


def arping_argv() -> list[str] | None:
    """``arping`` (iputils), else busybox's, else None (no announcements)."""
    if shutil.which("arping"):
        return ["arping"]
    return ["busybox", "arping"] if shutil.which("busybox") else None


def _normal(cidr: str) -> str:
    return str(ipaddress.ip_interface(cidr))


def _host_cidr(address: str) -> str:
    return str(ipaddress.ip_interface(address))  # /32 or /128


def wanted_devices(spec: RouterSpec) -> dict[str, WantedDevice]:
    """Every device of the router by name; floating addresses (/32) on the gateway."""
    out = {}
    for port in spec.interfaces:
        name = nat.device_name(nat.QR_PREFIX, port.port_id)
        out[name] = WantedDevice(name, port, frozenset(map(_normal, port.cidrs)))
    if spec.gateway is not None:
        port = spec.gateway.port
        name = nat.device_name(nat.QG_PREFIX, port.port_id)
        # IPv4 only, as the NAT: an IPv6 "floating" address would be the router's own.
        floating = {_host_cidr(f.floating_ip_address) for f in spec.floating_ips
                    if ":" not in f.floating_ip_address}
        out[name] = WantedDevice(name, port, frozenset(map(_normal, port.cidrs)) | floating)
    return out


async def plug(settings: Any, inside: InNamespace, dev: WantedDevice, link: dict[str, Any] | None,
               peer: dict[str, Any] | None, up: bool) -> None:
    """The veth pair exists, the router end has the port's MAC, MTU and admin
    state, the host end is up on the network's bridge."""
    port, peer_name = dev.port, devname(dev.port.port_id)
    if link is None:
        if peer is not None:  # the host end of a half-made pair
            await ip.delete_link(settings, peer_name)
        await ip.run(settings, ["ip", "link", "add", peer_name, "type", "veth",
                                "peer", "name", dev.name, "netns", inside.host_netns])
        link, peer = {}, {}
    changes: list[str] = []
    if str(link.get("address", "")).lower() != port.mac_address.lower():
        changes += ["address", port.mac_address]
    if link.get("mtu") != port.mtu:
        changes += ["mtu", str(port.mtu)]
    if ("UP" in link.get("flags", [])) != up:
        changes.append("up" if up else "down")
    if changes:
        await ip.run(inside, ["ip", "link", "set", "dev", dev.name, *changes])
    peer = peer or {}
    if (peer.get("master") != port.bridge or peer.get("mtu") != port.mtu
            or "UP" not in peer.get("flags", [])):
        await ip.run(settings, ["ip", "link", "set", "dev", peer_name, "master", port.bridge,
                                "mtu", str(port.mtu), "up"])


async def set_addresses(inside: InNamespace, dev: WantedDevice, link: dict[str, Any]) -> list[str]:
    """Exactly ``dev.cidrs`` on the device; returns the addresses added."""
    have = {_normal(c) for c in namespaces.global_addresses(link)}
    added = sorted(dev.cidrs - have)
    for cidr in added:
        # nodad: the address is the router's by construction, usable at once.
        await ip.run(inside, ["ip", "addr", "add", cidr, "dev", dev.name,
                              *(["nodad"] if ":" in cidr else [])])
    for cidr in sorted(have - dev.cidrs):
        await ip.run(inside, ["ip", "addr", "del", cidr, "dev", dev.name])
    return added


def wanted_routes(spec: RouterSpec) -> set[tuple[str, str]]:
    """(destination, next hop): a default route per address family through
    the gateway's first next hop of that family, and the static routes. A
    router that is administratively down routes nothing."""
    if not spec.admin_state_up:
        return set()
    out: set[tuple[str, str]] = set()
    if spec.gateway is not None:
        for version, default in ((4, "0.0.0.0/0"), (6, "::/0")):
            hops = [h for h in spec.gateway.default_gateways
                    if ipaddress.ip_address(h).version == version]
            if hops:
                out.add((default, str(ipaddress.ip_address(hops[0]))))
    for route in spec.routes:
        out.add((str(ipaddress.ip_network(route.destination, strict=False)),
                 str(ipaddress.ip_address(route.nexthop))))
    return out


async def present_routes(inside: InNamespace) -> set[tuple[str, str]]:
    """The routes through a next hop in the namespace's main table (the
    kernel's connected routes have none, so every one listed is ours)."""
    out = set()
    for family, default in (("-4", "0.0.0.0/0"), ("-6", "::/0")):
        text = await ip.run(inside, ["ip", family, "-j", "route", "show"])
        for route in json.loads(text or "[]"):
            if "gateway" in route:
                dst = default if route["dst"] == "default" else route["dst"]
                out.add((str(ipaddress.ip_network(dst, strict=False)), route["gateway"]))
    return out


async def set_routes(inside: InNamespace, spec: RouterSpec) -> None:
    want, have = wanted_routes(spec), await present_routes(inside)
    for dst, hop in sorted(have - want):
        await ip.run(inside, ["ip", "route", "del", dst, "via", hop], check=False)
    for dst, hop in sorted(want - have):
        await ip.run(inside, ["ip", "route", "replace", dst, "via", hop])
