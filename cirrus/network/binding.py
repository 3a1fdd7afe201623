"""Port binding side effects: the host backend, port status, vif-plugged events."""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus.context import RequestContext, admin_context
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_one
from cirrus.network.backends.base import HostBackend
from cirrus.network.models import ports
from cirrus.network.networks import network_by_id, subnets_of

LOG = logging.getLogger(__name__)
EventSink = Callable[[RequestContext, list[dict[str, Any]]], Awaitable[Any]]


def _activate(conn: sa.Connection, port_id: str) -> dict[str, Any] | None:
    conn.execute(ports.update().where(ports.c.id == port_id, ports.c.binding_host_id != "").values(
        status="ACTIVE", updated_at=utcnow()))
    return fetch_one(conn, sa.select(ports).where(ports.c.id == port_id))


def _context_of(conn: sa.Connection, port: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return _network_of(conn, port), subnets_of(conn, [port["network_id"]])


def _network_of(conn: sa.Connection, port: dict[str, Any]) -> dict[str, Any]:
    return network_by_id(conn, port["network_id"]) or {}


class Binder:
    """Tells the host backend about bound/unbound ports and reports ports up."""

    def __init__(self, db: Database, backend: HostBackend | None,
                 event_sink: EventSink | None = None) -> None:
        self.db = db
        self.backend = backend
        self.event_sink = event_sink
        if backend is not None:
            backend.set_port_up_callback(self.port_up)
            backend.set_database(db)

    @property
    def up_on_bind(self) -> bool:
        """Whether a binding write may mark the port ACTIVE itself (see
        ``HostBackend.up_on_bind``); ``bound`` then only reports it plugged."""
        return self.backend is not None and self.backend.up_on_bind

    async def bound(self, port: dict[str, Any],
                    context: tuple[dict[str, Any], list[dict[str, Any]]] | None = None) -> None:
        """``context``: the port's (network, subnets) when the caller has them."""
        if self.backend is None or not port.get("binding_host_id"):
            return
        if self.up_on_bind and port.get("status") == "ACTIVE":
            await self._plugged(port)  # activated by the binding write
            return
        if context is None:
            context = await self.db.read(_context_of, port)
        network, subnets = context
        await self.backend.port_bound(port, network, subnets)

    async def unbound(self, port: dict[str, Any], network: dict[str, Any] | None = None) -> None:
        """``network``: the port's network when the caller has it."""
        if self.backend is None:
            return
        if not self.backend.unbind_needs_network:
            network = {}
        elif network is None:  # an unbind needs the network only, not the subnets
            network = await self.db.read(_network_of, port)
        await self.backend.port_unbound(port, network)

    @property
    def unbind_needs_network(self) -> bool:
        """Whether ``unbound`` tells the backend the port's network (a caller
        releasing ports then reads their networks with them)."""
        return self.backend is not None and self.backend.unbind_needs_network

    async def port_up(self, port_id: str) -> None:
        """The device of ``port_id`` is up: ACTIVE, then ``network-vif-plugged``."""
        port = await self.db.run(_activate, port_id)
        if port is None or port["status"] != "ACTIVE":
            return
        await self._plugged(port)

    async def _plugged(self, port: dict[str, Any]) -> None:
        """Send ``network-vif-plugged`` for an ACTIVE port of an instance."""
        port_id = port["id"]
        if self.event_sink is not None and port["device_owner"].startswith("compute:") \
                and port["device_id"]:
            event = {"name": "network-vif-plugged", "server_uuid": port["device_id"],
                     "tag": port_id, "status": "completed"}
            try:
                await self.event_sink(admin_context(), [event])
            except Exception:  # noqa: BLE001 - the waiter times out and says so
                LOG.exception("could not send network-vif-plugged for port %s", port_id)
