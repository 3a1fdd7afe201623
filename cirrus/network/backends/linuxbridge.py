"""The ``linuxbridge`` host backend: real host networking for the libvirt driver.

Per network with ports bound to this host: a bridge ``brq<network id[:11]>``
holding the subnets' gateway addresses and one dnsmasq; per port: nftables
anti-spoofing and security group chains (``firewall.py``). Everything happens
in ``settings.host_netns`` (empty: this process's namespace).

A network spanning hosts (vxlan, vlan, flat) also gets its uplink
(``uplinks.py``), and its gateway and dnsmasq live on one host only, its DHCP
host (elected among the live agents, ``host_view``), which serves the ports
of every host through the overlay; that host keeps the bridge while any port
of the network is bound anywhere. A spanning network's bridge goes with its
last port here, so no tunnel stays open to a host that has no use for it.

The database is the source of truth: every change (a port bound or unbound
here, and a periodic sync every :attr:`SYNC_INTERVAL` seconds) re-reads what
is bound to this host and re-renders DHCP and firewall state, applying only
what changed. That is how security group rules and subnets edited in the API
process reach the host without any RPC, and how a restarted compute process
re-creates its state.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
from typing import Any

from cirrus.network.agents import Agent, report
from cirrus.network.backends import firewall
from cirrus.network.backends.base import HostBackend
from cirrus.network.backends.dhcp import DhcpServers
from cirrus.network.backends.metadata_proxy import MetadataProxy
from cirrus.network.backends.tapwatch import TapWatcher
from cirrus.network.backends.uplinks import UplinkError, Uplinks, is_uplink
from cirrus.network.host_view import (HostView, bridge_name, load_host_view,
                                      networks_kept_idle, networks_of_bridges)
from cirrus.network.l3.agent import L3Agent
from cirrus.network.l3.hostview import load_router_specs
from cirrus.network.l3.spec import RouterDriver
from cirrus.network.linux import ip
from cirrus.network.model import devname
from cirrus.network.segments import NetworkType, Segment
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)
BRIDGE_NF_SYSCTLS = ("net.bridge.bridge-nf-call-iptables", "net.bridge.bridge-nf-call-ip6tables")


def gateway_cidrs(subnets: list[dict[str, Any]]) -> set[str]:
    """The addresses the bridge holds: each subnet's gateway with its prefix."""
    out = set()
    for subnet in subnets:
        if subnet.get("gateway_ip"):
            prefix = ipaddress.ip_network(subnet["cidr"], strict=False).prefixlen
            out.add(f"{subnet['gateway_ip']}/{prefix}")
    return out


def _own_gateways(network: dict[str, Any], subnets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subnets whose gateways a host may put on the bridge before the sync
    says whether it is the network's DHCP host: a local network's, none else."""
    return subnets if Segment.of(network).network_type == NetworkType.LOCAL else []


class LinuxBridgeBackend(HostBackend):
    """Bridges, dnsmasq and nftables for the ports bound to ``host``."""

    # Seconds between re-reads of the database (security group rule changes
    # made in the API process take effect within this).
    SYNC_INTERVAL = 2.0
    unbind_needs_network = False  # an unbind resyncs the host from the database

    def __init__(self, settings: Any, host: str | None) -> None:
        self.settings = settings
        self.host = host or settings.compute_host
        self.dhcp = DhcpServers(settings)
        self.metadata = MetadataProxy(settings)  # 169.254.169.254 where we serve DHCP
        self.taps = TapWatcher(settings, self._tap_up)
        self.uplinks = Uplinks(settings, self.host)
        self._reported_at = -float("inf")  # monotonic time of the last agent report
        self._lock = asyncio.Lock()
        self._firewall: str | None = None  # the script last applied
        self._bridges: dict[str, tuple[str, int | None, frozenset[str]]] = {}  # net → state
        self._netns_ready = False
        self._sync_task: asyncio.Task[Any] | None = None
        # The L3 agent making this host's routers (the routers scheduled here;
        # with none, a sync costs it nothing).
        self.routers: RouterDriver | None = L3Agent(settings)

    # -- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        """Adopt this host's bridges, re-create DHCP and firewall state for the
        ports bound here, wait for taps of ports not yet up, then keep syncing."""
        self.taps = TapWatcher(self.settings, self._tap_up)  # a stopped one stays stopped
        await self._prepare_netns()
        await self._adopt_bridges()
        await self.sync()
        self._sync_task = spawn(self._sync_loop(), name=f"linuxbridge-sync-{self.host}")

    async def stop(self) -> None:
        """Stop syncing and the dnsmasq processes; bridges and firewall rules stay
        (the guests keep running and keep being protected)."""
        if self._sync_task is not None:
            self._sync_task.cancel()
            await asyncio.gather(self._sync_task, return_exceptions=True)
            self._sync_task = None
        await self.taps.stop()
        async with self._lock:
            await self.dhcp.stop_all()
            await self.metadata.stop_all()

    # -- HostBackend --------------------------------------------------------------------
    async def port_bound(self, port: dict[str, Any], network: dict[str, Any],
                         subnets: list[dict[str, Any]]) -> None:
        """Bridge (with gateway addresses), DHCP entry and firewall for ``port``,
        then report it up once libvirt put its tap on the bridge."""
        await self._prepare_netns()
        async with self._lock:
            # A bridge already here keeps its addresses until the sync (which
            # knows whether a router holds a gateway); a new one must exist
            # before libvirt plugs the tap.
            if network["id"] not in self._bridges:
                await self._ensure_network(network, _own_gateways(network, subnets))
        await self.sync()
        if port.get("status") != "ACTIVE":
            self.taps.watch(port["id"], devname(port["id"]), bridge_name(network["id"]),
                            self._plug_timeout())

    async def port_unbound(self, port: dict[str, Any], network: dict[str, Any]) -> None:
        """Forget the port: no tap wait, DHCP entry and rules gone (libvirt
        removes the tap with the domain)."""
        self.taps.cancel(port["id"])
        await self.sync()

    async def network_deleted(self, network: dict[str, Any]) -> None:
        """Stop the network's dnsmasq and delete its bridge."""
        async with self._lock:
            await self._drop_network(network["id"])

    async def subnet_changed(self, network: dict[str, Any], subnets: list[dict[str, Any]]) -> None:
        async with self._lock:
            if network["id"] not in self._bridges:  # as in port_bound: the sync knows more
                await self._ensure_network(network, _own_gateways(network, subnets))
        await self.sync()

    # -- the sync ---------------------------------------------------------------------
    async def sync(self) -> None:
        """Re-read what is bound here and apply bridges, DHCP and firewall changes."""
        if self.db is None:
            LOG.warning("linuxbridge backend on %s has no database; nothing to sync", self.host)
            return
        errors: list[Exception] = []
        async with self._lock:
            await self._report()
            view = await self.db.read(load_host_view, self.host,
                                      float(self.settings.service_down_time))
            for net_id in view.networks:
                try:
                    await self._sync_network(view, net_id)
                except (ip.CommandError, OSError, UplinkError) as e:
                    # One broken network must not hold back the others' DHCP
                    # or anyone's firewall rules.
                    LOG.error("network %s on %s: %s", net_id, self.host, e)
                    errors.append(e)
            for net_id in self.dhcp.serving() - set(view.networks):
                await self.dhcp.stop(net_id)
            await self.metadata.retain({n for n in view.networks if view.serves_dhcp(n, self.host)})
            await self._collect_deleted_networks(view)
            script = firewall.render(view.filters)
            if script != self._firewall:
                self._firewall = None  # unknown until nft succeeds
                await firewall.apply(self.settings, script)
                self._firewall = script
            if self.routers is not None:
                await self.routers.sync(await self.db.read(load_router_specs, self.host))
        self._watch_down_ports(view)
        if errors:
            raise errors[0]

    async def _sync_network(self, view: HostView, net_id: str) -> None:
        """Bridge, uplink and (on its DHCP host) gateway and dnsmasq of one network."""
        network, subnets = view.networks[net_id], view.subnets.get(net_id, [])
        serving = view.serves_dhcp(net_id, self.host)
        await self._ensure_network(network, view.bridge_subnets(net_id) if serving else [])
        await self.uplinks.ensure(network, subnets, view)
        if serving:
            await self.dhcp.sync(network, view.dhcp_subnets(net_id), view.dhcp_ports(net_id),
                                 bridge_name(net_id))
            await self.metadata.sync(net_id, view.dhcp_ports(net_id), bridge_name(net_id))
        elif net_id in self.dhcp.serving():
            await self.dhcp.stop(net_id)

    async def _report(self) -> None:
        """Register this host's agent, again every ``report_interval``, so the
        others count it alive (its VXLAN address, whether it serves DHCP)."""
        now = asyncio.get_running_loop().time()
        if now - self._reported_at < float(self.settings.report_interval):
            return
        await self.db.run(report, Agent(self.host, self.settings.local_ip,
                                        bool(self.settings.dhcp_agent)))
        self._reported_at = now

    async def _sync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.SYNC_INTERVAL)
            try:
                await self.sync()
            except (ip.CommandError, OSError) as e:  # the next round retries
                LOG.error("linuxbridge sync on %s failed: %s", self.host, e)
            except Exception:  # noqa: BLE001 - keep syncing; the next round retries
                LOG.exception("linuxbridge sync on %s failed", self.host)

    def _watch_down_ports(self, view: HostView) -> None:
        """Ports bound here by someone else (the API) or before a restart that
        are not up yet get a tap watch; ports no longer here lose theirs."""
        bound = {p["id"] for p in view.ports}
        for port_id in self.taps.known() - bound:
            self.taps.cancel(port_id)
        for port in view.ports:
            if port["status"] != "ACTIVE" and port["id"] not in self.taps.known():
                self.taps.watch(port["id"], devname(port["id"]), bridge_name(port["network_id"]),
                                self._plug_timeout())

    async def _collect_deleted_networks(self, view: HostView) -> None:
        """Networks deleted in the API process, and spanning networks with no
        port here any more: their bridges go once no tap is left on them."""
        idle = [n for n in self._bridges if n not in view.networks]
        if not idle:
            return
        kept = await self.db.read(networks_kept_idle, idle)
        for net_id in idle:
            if net_id not in kept:
                await self._drop_network(net_id)

    # -- host state -------------------------------------------------------------------
    async def _prepare_netns(self) -> None:
        """Bridged IPv4/IPv6 must pass the inet hooks (br_netfilter) for the
        security group chains and conntrack to see it."""
        if self._netns_ready:
            return
        await ip.run(self.settings, ["modprobe", "br_netfilter"], check=False)
        for key in BRIDGE_NF_SYSCTLS:
            await ip.write_sysctl(self.settings, key, "1")
        self._netns_ready = True

    async def _ensure_network(self, network: dict[str, Any], subnets: list[dict[str, Any]]) -> None:
        """The bridge exists, is up, and holds exactly the gateway addresses."""
        bridge = bridge_name(network["id"])
        mtu = network.get("mtu")
        cidrs = frozenset(gateway_cidrs(subnets))
        known = self._bridges.get(network["id"])
        if known == (bridge, mtu, cidrs):
            return
        await ip.ensure_bridge(self.settings, bridge, mtu)
        for cidr in sorted(cidrs):
            await ip.set_address(self.settings, bridge, cidr)
        for cidr in (known[2] if known else frozenset()) - cidrs:
            await ip.remove_address(self.settings, bridge, cidr)
        self._bridges[network["id"]] = (bridge, mtu, cidrs)

    async def _drop_network(self, network_id: str) -> None:
        await self.dhcp.stop(network_id)
        if await self._drop_bridge(bridge_name(network_id)):
            self._bridges.pop(network_id, None)
            self.uplinks.forget(network_id)

    async def _drop_bridge(self, bridge: str) -> bool:
        """Delete ``bridge`` (and its uplink) unless a tap is still on it."""
        links = await ip.links(self.settings)
        if any(link.get("master") == bridge and not is_uplink(name)
               for name, link in links.items()):
            LOG.warning("%s has no port bound here but still has taps; keeping it", bridge)
            return False
        await self.uplinks.release(bridge, links)
        await ip.delete_link(self.settings, bridge)
        return True

    async def _adopt_bridges(self) -> None:
        """After a restart: bridges of networks that still exist are ours again
        (addresses re-checked on the next sync); empty ones of deleted networks go."""
        if self.db is None:
            return
        names = [n for n in await ip.links(self.settings) if n.startswith("brq")]
        owners = await self.db.read(networks_of_bridges, names)
        for bridge in names:
            if bridge in owners:
                # What is on it now, so addresses of deleted subnets get removed.
                present = frozenset(await ip.addresses(self.settings, bridge))
                self._bridges.setdefault(owners[bridge], (bridge, None, present))
            else:
                await self._drop_bridge(bridge)

    async def _tap_up(self, port_id: str) -> None:
        """The tap joined its bridge: make sure the rules are current, then
        report the port up (ACTIVE + network-vif-plugged)."""
        try:
            await self.sync()
        except Exception:  # noqa: BLE001 - the rules were applied when it was bound
            LOG.exception("firewall refresh for port %s failed", port_id)
        await self._report_up(port_id)

    async def _report_up(self, port_id: str) -> None:
        callback = getattr(self, "_port_up", None)  # set_port_up_callback
        if callback is not None:
            await callback(port_id)

    def _plug_timeout(self) -> float:
        timeout = float(self.settings.vif_plugging_timeout)
        return timeout if timeout > 0 else 300.0
