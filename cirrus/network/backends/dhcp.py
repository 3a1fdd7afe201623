"""DHCP for the ports bound to this host: one dnsmasq per network.

Each dnsmasq listens only on the network's bridge (inside ``host_netns``),
hands out exactly the fixed addresses the network service allocated (a hosts
file of ``MAC,IP,host-A-B-C-D``; ``static`` ranges, so nobody else gets an
address), and tells guests the subnet's gateway, DNS servers, host routes and
the network's MTU. Its files live in ``STATE_DIR/dhcp/<network id>/``. A hosts
change is a SIGHUP; a change of the command line (subnets) is a restart.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import pwd
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cirrus.network import dns
from cirrus.network.backends import dhcp_opts, dhcpv6
from cirrus.network.linux import ip

LOG = logging.getLogger(__name__)
LEASE_SECONDS = 86400
# Where guests find the metadata service: the proxy on this server's bridge.
METADATA_CIDR = "169.254.169.254/32"


def served_subnets(subnets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subnets dnsmasq serves: IPv4 with DHCP enabled and a gateway (the
    bridge holds the gateway address, which is where dnsmasq answers from)."""
    return [s for s in subnets if s["ip_version"] == 4 and s["enable_dhcp"] and s["gateway_ip"]]


def hosts_text(ports: list[dict[str, Any]], subnets: list[dict[str, Any]]) -> str:
    """The ``--dhcp-hostsfile``: one ``MAC,IP,hostname`` line per fixed
    address of a served IPv4 subnet or DHCPv6-stateful subnet (``[IP]``); the
    host name is the port's ``dns_name``, else ``host-A-B-C-D`` (its
    ``dns_assignment``)."""
    served = {s["id"] for s in served_subnets(subnets)}
    stateful = dhcpv6.stateful_ids(subnets)
    lines = []
    for port in sorted(ports, key=lambda p: p["mac_address"]):
        for fixed in port.get("fixed_ips", []):
            address = fixed["ip_address"]
            name = dns.hostname(port.get("dns_name") or "", address)
            # The tag selects the port's extra DHCP options (dhcp_opts).
            tag = f",set:{dhcp_opts.port_tag(port['id'])}" if dhcp_opts.has_options(port) else ""
            if fixed["subnet_id"] in served:
                lines.append(f"{port['mac_address']}{tag},{address},{name}")
            elif fixed["subnet_id"] in stateful:
                lines.append(f"{port['mac_address']}{tag},[{address}],{name}")
    return "".join(line + "\n" for line in lines)


def dnsmasq_argv(network: dict[str, Any], subnets: list[dict[str, Any]], files: "DhcpFiles",
                 bridge: str, user: str, metadata: bool = False) -> list[str]:
    """The dnsmasq command line for ``network`` (without the netns prefix);
    ``metadata``: route guests to 169.254.169.254 through this server."""
    argv = ["dnsmasq", "--conf-file=/dev/null", "--port=0", "--no-resolv", "--no-hosts",
            "--bind-interfaces", f"--interface={bridge}", "--except-interface=lo",
            f"--pid-file={files.pid}", f"--dhcp-leasefile={files.leases}",
            f"--dhcp-hostsfile={files.hosts}", f"--dhcp-optsfile={files.opts}",
            f"--log-facility={files.log}",
            # dnsmasq re-reads the hosts file after dropping privileges; the state
            # dir may be private to the user cirrus runs as.
            f"--user={user}", "--dhcp-authoritative"]
    argv += dhcpv6.argv(subnets, LEASE_SECONDS)
    for subnet in served_subnets(subnets):
        net = ipaddress.ip_network(subnet["cidr"], strict=False)
        tag = f"subnet-{subnet['id']}"
        argv.append(f"--dhcp-range=set:{tag},{net.network_address},static,{net.netmask},"
                    f"{LEASE_SECONDS}s")
        gateway = subnet["gateway_ip"]
        argv.append(f"--dhcp-option=tag:{tag},option:router,{gateway}")
        dns = [d for d in subnet["dns_nameservers"] or [] if ipaddress.ip_address(d).version == 4]
        # An empty list sends no DNS servers rather than dnsmasq's own address.
        argv.append(f"--dhcp-option=tag:{tag},option:dns-server" + "".join(f",{d}" for d in dns))
        # Forced: many clients (busybox udhcpc) do not ask for the MTU.
        argv.append(f"--dhcp-option-force=tag:{tag},option:mtu,{network['mtu']}")
        routes = [r for r in subnet["host_routes"] or []
                  if ipaddress.ip_network(r["destination"], strict=False).version == 4]
        pairs = [f"{r['destination']},{r['nexthop']}" for r in routes]
        if metadata:  # Neutron's isolated metadata: with or without a router
            # Through this server's own address: on a routed subnet the
            # gateway is the router's, and the proxy is not there.
            pairs.insert(0, f"{METADATA_CIDR},{subnet.get('dhcp_server_ip') or gateway}")
        if pairs:
            # RFC 3442: clients ignore the router option when option 121 is sent.
            pairs.append(f"0.0.0.0/0,{gateway}")
            argv.append(f"--dhcp-option=tag:{tag},option:classless-static-route,"
                        + ",".join(pairs))
    return argv


@dataclass(frozen=True)
class DhcpFiles:
    """The files of one network's dnsmasq."""

    root: Path

    @property
    def pid(self) -> Path:
        return self.root / "pid"

    @property
    def hosts(self) -> Path:
        return self.root / "hosts"

    @property
    def opts(self) -> Path:
        return self.root / "opts"

    @property
    def leases(self) -> Path:
        return self.root / "leases"

    @property
    def log(self) -> Path:
        return self.root / "dnsmasq.log"


@dataclass
class _Server:
    pid: int
    argv: list[str]
    hosts: str
    opts: str = ""


class DhcpServers:
    """The dnsmasq processes of this host, one per network with bound ports."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.root = Path(settings.state_dir) / "dhcp"
        self._servers: dict[str, _Server] = {}
        self._user = pwd.getpwuid(os.geteuid()).pw_name

    def files(self, network_id: str) -> DhcpFiles:
        return DhcpFiles(self.root / network_id)

    def serving(self) -> set[str]:
        """Networks with a dnsmasq started by this object."""
        return set(self._servers)

    def pid_of(self, network_id: str) -> int | None:
        server = self._servers.get(network_id)
        return server.pid if server else None

    async def sync(self, network: dict[str, Any], subnets: list[dict[str, Any]],
                   ports: list[dict[str, Any]], bridge: str) -> None:
        """Serve exactly ``ports``' addresses on ``network`` (and advertise
        its IPv6 prefixes); no served subnet or no port: no dnsmasq."""
        net_id = network["id"]
        hosts, opts = hosts_text(ports, subnets), dhcp_opts.opts_text(ports)
        if not (hosts and served_subnets(subnets)) and not (ports and dhcpv6.served(subnets)):
            await self.stop(net_id)
            return
        files = self.files(net_id)
        argv = dnsmasq_argv(network, subnets, files, bridge, self._user,
                            bool(getattr(self.settings, "enable_isolated_metadata", False)))
        server = self._servers.get(net_id)
        if server is not None and (server.argv != argv or not _alive(server.pid, files)):
            await self.stop(net_id)
            server = None
        if server is None:
            await self._start(net_id, files, argv, hosts, opts)
        elif (server.hosts, server.opts) != (hosts, opts):
            gone = _entries(server.hosts) - _entries(hosts)
            _write(files.opts, opts)
            _write(files.hosts, hosts)
            os.kill(server.pid, signal.SIGHUP)
            server.hosts, server.opts = hosts, opts
            await self._release(net_id, files, bridge, gone)

    async def _release(self, net_id: str, files: DhcpFiles, bridge: str,
                       gone: set[tuple[str, str]]) -> None:
        """Forget the leases of removed ports. dnsmasq keeps a lease until it
        expires and will not offer its address to another MAC meanwhile, so a
        new port given a freed address would get no answer (Neutron calls
        dhcp_release for the same reason)."""
        leased = {(mac, addr) for mac, addr in gone
                  if files.leases.exists() and mac in files.leases.read_text()}
        if not leased:
            return
        if shutil.which("dhcp_release"):
            for mac, addr in sorted(leased):
                await ip.run(self.settings, ["dhcp_release", bridge, addr, mac], check=False)
            return
        # Without dnsmasq-utils: restart dnsmasq on a lease file without them.
        server = self._servers.pop(net_id)
        await _terminate(server.pid)
        lines = files.leases.read_text().splitlines()
        _write(files.leases, "".join(f"{line}\n" for line in lines
                                     if not any(mac in line for mac, _ in leased)))
        await self._start(net_id, files, server.argv, server.hosts, server.opts)

    async def _start(self, net_id: str, files: DhcpFiles, argv: list[str], hosts: str,
                     opts: str) -> None:
        files.root.mkdir(parents=True, exist_ok=True)
        await _kill_stale(files)  # left by a previous cirrus that did not stop cleanly
        _write(files.hosts, hosts)
        _write(files.opts, opts)
        # dnsmasq daemonizes once it is listening, so errors surface here.
        await ip.run(self.settings, argv)
        pid = int(files.pid.read_text().strip())
        self._servers[net_id] = _Server(pid=pid, argv=argv, hosts=hosts, opts=opts)
        LOG.info("dnsmasq for network %s started (pid %d)", net_id, pid)

    async def stop(self, network_id: str) -> None:
        """Stop the network's dnsmasq (also one a previous process left) and
        remove its files."""
        server = self._servers.pop(network_id, None)
        files = self.files(network_id)
        if server is not None and _alive(server.pid, files):
            await _terminate(server.pid)
            LOG.info("dnsmasq for network %s stopped", network_id)
        await _kill_stale(files)
        if files.root.is_dir():
            for path in files.root.iterdir():
                path.unlink(missing_ok=True)
            files.root.rmdir()

    async def stop_all(self) -> None:
        for network_id in list(self._servers):
            await self.stop(network_id)


def _entries(hosts: str) -> set[tuple[str, str]]:
    """(MAC, address) pairs of a hosts file's ``MAC[,set:tag],IP,name`` lines."""
    out = set()
    for line in hosts.splitlines():
        fields = [f for f in line.split(",") if not f.startswith("set:")]
        if len(fields) >= 2:
            out.add((fields[0].lower(), fields[1].strip("[]")))
    return out


def _write(path: Path, text: str) -> None:
    """Replace ``path`` atomically, so dnsmasq never reads half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _alive(pid: int, files: DhcpFiles) -> bool:
    """``pid`` is a dnsmasq using these files (not a recycled pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return "dnsmasq" in cmdline and str(files.pid) in cmdline


async def _kill_stale(files: DhcpFiles) -> None:
    try:
        pid = int(files.pid.read_text().strip())
    except (OSError, ValueError):
        return
    if _alive(pid, files):
        await _terminate(pid)


async def _terminate(pid: int, timeout: float = 5.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 1.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        for _ in range(int(wait / 0.05)):
            if not Path(f"/proc/{pid}").exists() or _zombie(pid):
                return
            await asyncio.sleep(0.05)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False
