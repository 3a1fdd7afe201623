"""The host side of networking: what a port needs on the host it is bound to.

``noop`` marks a port ACTIVE as soon as it is bound (fake hosts);
``linuxbridge`` builds a bridge per network, dnsmasq per DHCP subnet and
nftables rules per port. The network service calls these; when a backend
reports a port up, the service sends ``network-vif-plugged`` to compute.
"""
from __future__ import annotations

import abc
from typing import Any, Awaitable, Callable

# Called by a backend when a bound port's device is up on its host.
PortUpCallback = Callable[[str], Awaitable[None]]


class HostBackend(abc.ABC):
    """Per-deployment host networking driver."""

    db: Any = None
    # True for a backend whose bound port is up the moment it is bound (noop):
    # the binding write marks the port ACTIVE itself, and binding only sends
    # ``network-vif-plugged`` — no port-up callback, no second write.
    up_on_bind: bool = False
    # Whether ``port_unbound`` reads its ``network`` argument: a backend that
    # does not (noop, linuxbridge) gets ``{}``, and a release reads no
    # network for it.
    unbind_needs_network: bool = True

    def set_port_up_callback(self, callback: PortUpCallback) -> None:
        self._port_up = callback

    def set_database(self, db: Any) -> None:
        """The database the backend reads host state from (``await db.read(fn,
        …)``); the Binder sets it."""
        self.db = db

    async def start(self) -> None:
        """Prepare the host (and re-create state after a restart)."""

    async def stop(self) -> None:
        """Release host resources this process holds (not the networks)."""

    @abc.abstractmethod
    async def port_bound(self, port: dict[str, Any], network: dict[str, Any],
                         subnets: list[dict[str, Any]]) -> None:
        """``port`` got ``binding:host_id``: make the host ready for its device
        (bridge, DHCP entry, firewall) and call the port-up callback once the
        device is up (noop: at once)."""

    @abc.abstractmethod
    async def port_unbound(self, port: dict[str, Any], network: dict[str, Any]) -> None:
        """``port`` was unbound or deleted: remove its DHCP entry and rules.
        ``network``: the port's network, or ``{}`` when the backend says it
        does not need it (``unbind_needs_network``)."""

    async def network_deleted(self, network: dict[str, Any]) -> None:
        """Remove the network's bridge and DHCP server, if any."""

    async def subnet_changed(self, network: dict[str, Any], subnets: list[dict[str, Any]]) -> None:
        """Subnets of ``network`` changed (DHCP ranges, gateway)."""
