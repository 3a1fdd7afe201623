"""One router's namespace made to match its spec (Neutron's
``agent/l3/router_info.py``, ``RouterInfo.process``).

The namespace's state is compared as data (:class:`NamespaceState`): what the
spec wants against what is there, which is the state the last applied spec
left (:func:`as_built`), or, the first time and after any failure, what the
kernel reports (:func:`read_state`: ``ip -j addr``, the routes, the host's
links; also every ``RESYNC_INTERVAL`` of the agent). Only the difference becomes commands, run as one ``ip -batch`` on
the host side (veth pairs onto the bridges) and one inside the namespace
(devices, addresses, routes), plus ``nft -f`` when the NAT script changed. A
floating IP associated is then three processes: the namespace's
``ip -batch``, ``nft`` and ``arping``.
"""
from __future__ import annotations

import ipaddress
import json
import logging
import shutil
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from cirrus.network.l3 import nat, namespaces
from cirrus.network.l3.namespaces import HERE, InNamespace
from cirrus.network.l3.spec import RouterPort, RouterSpec
from cirrus.network.linux import ip
from cirrus.network.model import devname

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Device:
    """A ``qr-``/``qg-`` device inside the namespace."""

    mac: str
    mtu: int
    up: bool
    cidrs: frozenset[str]


@dataclass(frozen=True)
class Peer:
    """The host end of a router device's veth pair."""

    master: str | None
    mtu: int | None
    up: bool


@dataclass(frozen=True)
class NamespaceState:
    devices: dict[str, Device]
    peers: dict[str, Peer]  # host ends of the spec's devices, by name
    routes: frozenset[tuple[str, str]]  # (destination, next hop)


@dataclass
class RouterInfo:
    """What this host last made of one router: the spec fully applied
    (None: never, or not since a failure) and the NAT script loaded."""

    router_id: str
    spec: RouterSpec | None = None
    nat: str | None = None
    # Addresses announced by the last change (tests and operators read it).
    garp: list[str] = field(default_factory=list)

    async def process(self, settings: Any, spec: RouterSpec) -> None:
        """Make the namespace match ``spec``; raises :class:`ip.CommandError`
        (the next sync re-reads the namespace and retries)."""
        previous, self.spec = self.spec, None
        if not namespaces.exists(spec.namespace):
            await namespaces.create(spec.namespace)
            self.nat = None
            have = NamespaceState({}, {}, frozenset())
        elif previous is None:
            have = await read_state(settings, InNamespace(spec.namespace), spec)
        else:
            have = as_built(previous)
        want = as_built(spec)
        # Each step is tried even when one before failed (a bridge not there
        # yet must not keep the router's other networks down).
        failed: list[ip.CommandError] = []
        steps: list[Callable[[], Awaitable[None]]] = [
            lambda: namespaces.batch(settings, host_commands(spec, want, have)),
            lambda: self._load_nat(spec),
            lambda: namespaces.batch(HERE, namespace_commands(want, have), spec.namespace)]
        for step in steps:
            try:
                await step()
            except ip.CommandError as e:
                failed.append(e)
        await self._announce(spec, want, have)
        if failed:
            raise failed[0]
        self.spec = spec

    async def _load_nat(self, spec: RouterSpec) -> None:
        script = nat.render(spec)
        if script != self.nat:
            self.nat = None  # unknown until nft succeeds
            await ip.run(InNamespace(spec.namespace), ["nft", "-f", "-"], input=script)
            self.nat = script

    async def _announce(self, spec: RouterSpec, want: NamespaceState,
                        have: NamespaceState) -> None:
        """Gratuitous ARP for IPv4 addresses new on the gateway (a floating IP
        that moved from another router is reachable at once)."""
        self.garp = []
        argv = arping_argv()
        if spec.gateway is None or argv is None or not spec.admin_state_up:
            return
        dev = nat.device_name(nat.QG_PREFIX, spec.gateway.port.port_id)
        before = have.devices.get(dev)
        for cidr in sorted(want.devices[dev].cidrs - (before.cidrs if before else frozenset())):
            address = str(ipaddress.ip_interface(cidr).ip)
            if ":" not in address:
                await ip.run(InNamespace(spec.namespace),
                             [*argv, "-U", "-c", "1", "-I", dev, "-s", address, address],
                             check=False)
                self.garp.append(address)


def arping_argv() -> list[str] | None:
    """``arping`` (iputils), else busybox's, else None (no announcements)."""
    if shutil.which("arping"):
        return ["arping"]
    return ["busybox", "arping"] if shutil.which("busybox") else None


def _normal(cidr: str) -> str:
    return str(ipaddress.ip_interface(cidr))


def ports(spec: RouterSpec) -> dict[str, RouterPort]:
    """The router's ports by device name."""
    out = {nat.device_name(nat.QR_PREFIX, p.port_id): p for p in spec.interfaces}
    if spec.gateway is not None:
        out[nat.device_name(nat.QG_PREFIX, spec.gateway.port.port_id)] = spec.gateway.port
    return out


def wanted_cidrs(spec: RouterSpec, port: RouterPort) -> frozenset[str]:
    """The port's addresses; the gateway also holds the floating IPs (/32,
    IPv4 only, as the NAT: an IPv6 one would be the router's own address)."""
    cidrs = set(map(_normal, port.cidrs))
    if spec.gateway is not None and port == spec.gateway.port:
        cidrs |= {_normal(f.floating_ip_address) for f in spec.floating_ips
                  if ":" not in f.floating_ip_address}
    return frozenset(cidrs)


def as_built(spec: RouterSpec) -> NamespaceState:
    """The namespace as :meth:`RouterInfo.process` leaves it for ``spec``."""
    devices = {name: Device(port.mac_address.lower(), port.mtu, spec.admin_state_up,
                            wanted_cidrs(spec, port)) for name, port in ports(spec).items()}
    peers = {devname(port.port_id): Peer(port.bridge, port.mtu, True)
             for port in ports(spec).values()}
    return NamespaceState(devices, peers, frozenset(wanted_routes(spec)))


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


async def read_state(settings: Any, inside: InNamespace, spec: RouterSpec) -> NamespaceState:
    """What the kernel has: the namespace's router devices and routes, and
    the host ends of the spec's devices."""
    devices = {}
    for name, link in (await namespaces.links(inside)).items():
        if name.startswith(namespaces.ROUTER_DEVICE_PREFIXES):
            devices[name] = Device(str(link.get("address", "")).lower(), int(link.get("mtu", 0)),
                                   "UP" in link.get("flags", []),
                                   frozenset(map(_normal, namespaces.global_addresses(link))))
    host = await ip.links(settings)
    peers = {}
    for port in ports(spec).values():
        peer = host.get(devname(port.port_id))
        if peer is not None:
            peers[devname(port.port_id)] = Peer(peer.get("master"), peer.get("mtu"),
                                                "UP" in peer.get("flags", []))
    return NamespaceState(devices, peers, frozenset(await present_routes(inside)))


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


def host_commands(spec: RouterSpec, want: NamespaceState, have: NamespaceState) -> list[str]:
    """``ip -batch`` lines on the host: missing veth pairs (their router end
    straight into the namespace), host ends up on the right bridge."""
    lines = []
    for name, port in ports(spec).items():
        peer = devname(port.port_id)
        current = have.peers.get(peer)
        if name not in have.devices:
            if current is not None:  # the host end of a half-made pair
                lines.append(f"link del dev {peer}")
            lines.append(f"link add {peer} type veth peer name {name} netns {spec.namespace}")
            current = None
        if current != want.peers[peer]:
            lines.append(f"link set dev {peer} master {port.bridge} mtu {port.mtu} up")
    return lines


def namespace_commands(want: NamespaceState, have: NamespaceState) -> list[str]:
    """``ip -batch`` lines in the namespace. Stale routes go first, while
    their devices are still up; new routes last, once addresses are there."""
    lines = [f"route del {dst} via {hop}" for dst, hop in sorted(have.routes - want.routes)]
    for name, device in want.devices.items():
        lines += _device_commands(name, device, have.devices.get(name))
    lines += [f"link del dev {name}" for name in sorted(set(have.devices) - set(want.devices))]
    lines += [f"route replace {dst} via {hop}" for dst, hop in sorted(want.routes - have.routes)]
    return lines


def _device_commands(name: str, want: Device, have: Device | None) -> list[str]:
    have = have or Device("", 0, False, frozenset())
    changes = []
    if have.mac != want.mac:
        changes.append(f"address {want.mac}")
    if have.mtu != want.mtu:
        changes.append(f"mtu {want.mtu}")
    if have.up != want.up:
        changes.append("up" if want.up else "down")
    lines = [f"link set dev {name} {' '.join(changes)}"] if changes else []
    # nodad: the address is the router's by construction, usable at once.
    lines += [f"addr add {cidr} dev {name}" + (" nodad" if ":" in cidr else "")
              for cidr in sorted(want.cidrs - have.cidrs)]
    lines += [f"addr del {cidr} dev {name}" for cidr in sorted(have.cidrs - want.cidrs)]
    return lines
