"""What a host must build for one router: the contract between the L3 API
(which stores routers, interfaces and floating IPs) and the L3 agent (which
makes them real in a network namespace).

``load_router_specs`` on the API side reads the database into these; the
agent's ``sync`` makes the host match a list of them (creating, changing and
removing ``qrouter-<router id>`` namespaces). Both sides are tested against
these shapes alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

NAMESPACE_PREFIX = "qrouter-"


def namespace_name(router_id: str) -> str:
    """The router's network namespace, as Neutron's L3 agent names it."""
    return f"{NAMESPACE_PREFIX}{router_id}"


@dataclass(frozen=True)
class RouterPort:
    """A router's port on one network: an interface (``qr-``) or the external
    gateway (``qg-``). ``cidrs`` are the router's addresses with their
    prefixes (``10.0.0.1/24``); ``bridge`` is the host bridge of the network
    (``brq<network id[:11]>``) the port's device must be plugged into."""

    port_id: str
    network_id: str
    mac_address: str
    cidrs: tuple[str, ...]
    bridge: str
    mtu: int = 1500


@dataclass(frozen=True)
class Gateway:
    """The external gateway: the port on the ``router:external`` network, the
    next hop of the router's default route(s) (the external subnets' gateway
    addresses), and whether traffic from the internal subnets is SNATed to
    the gateway's first address."""

    port: RouterPort
    default_gateways: tuple[str, ...]
    enable_snat: bool = True


@dataclass(frozen=True)
class FloatingIP:
    """A floating address DNATed to a fixed one (and the fixed one SNATed to
    it on the way out); the floating address is held on the gateway port."""

    floating_ip_address: str
    fixed_ip_address: str


@dataclass(frozen=True)
class Route:
    """A static route (``extraroute``) in the router's namespace."""

    destination: str
    nexthop: str


@dataclass(frozen=True)
class RouterSpec:
    """Everything one router needs on its host. An ``admin_state_up=False``
    router keeps its namespace but forwards nothing."""

    router_id: str
    interfaces: tuple[RouterPort, ...] = ()
    gateway: Gateway | None = None
    floating_ips: tuple[FloatingIP, ...] = ()
    routes: tuple[Route, ...] = ()
    admin_state_up: bool = True

    @property
    def namespace(self) -> str:
        return namespace_name(self.router_id)


class RouterDriver(Protocol):
    """The host side: make this host's routers exactly ``specs`` (a router
    not in the list has its namespace removed)."""

    async def sync(self, specs: Sequence[RouterSpec]) -> None: ...
