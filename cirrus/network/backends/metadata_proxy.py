"""The isolated-metadata proxy (Neutron's ``enable_isolated_metadata``): guests
reach ``169.254.169.254:80`` on their network's DHCP host.

Per network this host serves DHCP for: the address ``169.254.169.254/32`` on
the network's bridge and one listening socket bound to that bridge
(``SO_BINDTODEVICE``, inside ``host_netns``), so the socket a request arrives
on names the network. The source address then names the port holding it, and
the port's ``device_id`` the instance: the proxy signs the request for it
(:mod:`cirrus.metadata.signature`) and forwards it to the metadata API
(``metadata_url``, default ``public_url/metadata``). Guests are routed here by
DHCP option 121 (``dhcp.dnsmasq_argv``), with or without a router.

The port table comes from the backend's sync (no database read per request);
the HTTP it speaks is the little metadata clients use: ``GET``/``POST`` with
a ``Content-Length`` body, keep-alive.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from cirrus.metadata.signature import shared_secret, sign
from cirrus.network.backends import guest_http
from cirrus.network.backends.metadata_forward import Forwarder, ForwardError, HttpForwarder
from cirrus.network.linux import ip
from cirrus.network.linux.netns import listen_on_device

LOG = logging.getLogger(__name__)
METADATA_ADDRESS = "169.254.169.254"
METADATA_CIDR = f"{METADATA_ADDRESS}/32"
METADATA_PORT = 80


@dataclass(frozen=True)
class Asker:
    """Who holds an address on a network: the instance and its project."""

    instance_id: str
    tenant_id: str


def askers(ports: list[dict[str, Any]]) -> dict[str, Asker]:
    """Fixed address → instance, for the ports of instances (a router's or
    DHCP's port has no metadata to ask for)."""
    out = {}
    for port in ports:
        if not port.get("device_id") or not str(port.get("device_owner", "")).startswith("compute:"):
            continue
        for fixed in port.get("fixed_ips", []):
            out[fixed["ip_address"]] = Asker(port["device_id"], port["project_id"])
    return out


class MetadataProxy:
    """The listeners of this host's served networks and their port tables."""

    def __init__(self, settings: Any, forwarder: Forwarder | None = None,
                 port: int = METADATA_PORT) -> None:
        """``forwarder``: how the API is reached (None: HTTP to ``metadata_url``)."""
        self.settings = settings
        self.enabled = bool(getattr(settings, "enable_isolated_metadata", True))
        self.port = port
        self._forwarder = forwarder
        self._secret = ""
        self._servers: dict[str, asyncio.Server] = {}
        self._askers: dict[str, dict[str, Asker]] = {}
        self._failed: set[str] = set()  # networks whose listener could not be made

    def serving(self) -> set[str]:
        return set(self._servers)

    async def sync(self, network_id: str, ports: list[dict[str, Any]], bridge: str) -> None:
        """Serve ``network_id`` on ``bridge`` for exactly ``ports``' instances."""
        if not self.enabled:
            return
        self.set_ports(network_id, ports)
        if network_id in self._servers:
            return
        try:
            await ip.set_address(self.settings, bridge, METADATA_CIDR)
            sock = await listen_on_device(self.settings.host_netns, bridge, METADATA_ADDRESS,
                                          self.port)
        except (ip.CommandError, OSError) as e:
            # The guests lose their metadata, not their network: DHCP and the
            # firewall of this network must not fail with it (say, another
            # server on the namespace's port 80). The next sync tries again.
            if network_id not in self._failed:
                LOG.error("no metadata proxy for network %s on %s: %s", network_id, bridge, e)
            self._failed.add(network_id)
            return
        self._failed.discard(network_id)

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await guest_http.serve_connection(reader, writer,
                                              lambda req: self._forward(network_id, req))
        self._servers[network_id] = await asyncio.start_server(serve, sock=sock)
        LOG.info("metadata proxy for network %s on %s", network_id, bridge)

    def set_ports(self, network_id: str, ports: list[dict[str, Any]]) -> None:
        """Whose requests the network's listener answers from now on."""
        self._askers[network_id] = askers(ports)

    async def retain(self, network_ids: set[str]) -> None:
        """Stop serving every network not in ``network_ids``."""
        for network_id in self.serving() - network_ids:
            await self.stop(network_id)

    async def stop(self, network_id: str) -> None:
        """Close the network's listener (its address goes with the bridge, or
        stays harmlessly on one this host keeps)."""
        server = self._servers.pop(network_id, None)
        self._askers.pop(network_id, None)
        if server is not None:
            server.close()
            await server.wait_closed()

    async def stop_all(self) -> None:
        for network_id in list(self._servers):
            await self.stop(network_id)
        if self._forwarder is not None:
            await self._forwarder.close()

    def _api(self) -> Forwarder:
        if not self._secret:
            self._secret = shared_secret(self.settings)
        if self._forwarder is None:
            self._forwarder = HttpForwarder(self.settings.metadata_url or
                                            self.settings.public_url.rstrip("/") + "/metadata")
        return self._forwarder

    async def _forward(self, network_id: str, req: guest_http.GuestRequest,
                       ) -> guest_http.GuestResponse:
        """The API's answer to ``req``, asked for the instance at its source."""
        asker = self._askers.get(network_id, {}).get(req.peer)
        if asker is None:
            return guest_http.GuestResponse(404, b"no instance has this address\n")
        api = self._api()
        # The guest's own X-Instance-* headers are never passed on: these replace them.
        headers = {"X-Forwarded-For": req.peer, "X-Instance-ID": asker.instance_id,
                   "X-Tenant-ID": asker.tenant_id,
                   "X-Instance-ID-Signature": sign(self._secret, asker.instance_id)}
        if req.content_type:
            headers["Content-Type"] = req.content_type
        try:
            # The target is an origin-form path (guest_http checked it): it can
            # only name something under the metadata API.
            return await api.forward(req.method, req.target, headers, req.body)
        except ForwardError as e:
            LOG.warning("metadata request of %s not answered: %s", asker.instance_id, e)
            return guest_http.GuestResponse(502, b"the metadata service is unreachable\n")
