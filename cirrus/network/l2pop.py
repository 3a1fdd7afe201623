"""L2 population: the forwarding entries a host's VXLAN device needs, from the
port bindings (Neutron's l2population mechanism driver and the linuxbridge
agent's ``fdb_add``/``fdb_remove``).

VXLAN devices are created with ``nolearning``, so the kernel never learns
where a MAC lives; every entry comes from here:

* per other host with a port on the network, a flooding entry
  ``00:00:00:00:00:00 dst <its tunnel address>`` (broadcasts and unknown
  unicast are replicated to each, head-end);
* per port on another host, ``<mac> dst <its host's address>`` and, for the
  device's ARP proxy (``proxy``: ARP requests are answered by the device from
  its neighbour table and never cross the overlay), ``<ip> lladdr <mac>``.

:func:`desired_entries` computes them, :func:`diff` against what ``bridge fdb``
and ``ip neigh`` show says what to add and remove; both are pure, so the
reconciliation is tested without root. ``cirrus.network.linux.vxlan`` applies it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

FLOODING_MAC = "00:00:00:00:00:00"


@dataclass(frozen=True, order=True)
class FdbEntry:
    """``bridge fdb … <mac> dev <vxlan> dst <dst>``."""

    mac: str
    dst: str


@dataclass(frozen=True, order=True)
class NeighEntry:
    """``ip neigh … <ip> lladdr <mac> dev <vxlan> nud permanent``."""

    ip: str
    mac: str


@dataclass(frozen=True)
class L2Entries:
    fdb: frozenset[FdbEntry] = frozenset()
    neigh: frozenset[NeighEntry] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.fdb or self.neigh)


@dataclass(frozen=True)
class PortLocation:
    """A port (or the DHCP host's gateway) of a network: where its MAC lives."""

    host: str
    mac: str
    ips: tuple[str, ...] = ()


def desired_entries(local_host: str, endpoints: Mapping[str, str],
                    ports: Iterable[PortLocation]) -> L2Entries:
    """The entries of ``local_host``'s VXLAN device for a network whose ports
    are ``ports`` (on any host; ``endpoints``: host → tunnel address). Ports
    here need none (the bridge knows its own taps), nor do ports on a host
    without a tunnel address (they cannot be reached)."""
    fdb: set[FdbEntry] = set()
    neigh: set[NeighEntry] = set()
    local_ip = endpoints.get(local_host)
    for port in ports:
        dst = endpoints.get(port.host)
        if port.host == local_host or not dst or dst == local_ip:
            continue
        mac = port.mac.lower()
        fdb.add(FdbEntry(FLOODING_MAC, dst))
        fdb.add(FdbEntry(mac, dst))
        neigh.update(NeighEntry(address, mac) for address in port.ips)
    return L2Entries(frozenset(fdb), frozenset(neigh))


def diff(desired: L2Entries, actual: L2Entries) -> tuple[L2Entries, L2Entries]:
    """(to add, to remove) that turn ``actual`` into ``desired``. A neighbour
    whose MAC changed is only added (``ip neigh replace`` overwrites it)."""
    add = L2Entries(desired.fdb - actual.fdb, desired.neigh - actual.neigh)
    replaced = {n.ip for n in add.neigh}
    remove = L2Entries(actual.fdb - desired.fdb,
                       frozenset(n for n in actual.neigh - desired.neigh if n.ip not in replaced))
    return add, remove


def parse_fdb(entries: Iterable[Mapping[str, Any]]) -> frozenset[FdbEntry]:
    """The remote entries of ``bridge -j fdb show dev <vxlan>`` (those with a
    ``dst``; the bridge's own ``master`` entries have none)."""
    return frozenset(FdbEntry(str(e["mac"]).lower(), str(e["dst"]))
                     for e in entries if e.get("dst") and e.get("mac"))


def parse_neigh(entries: Iterable[Mapping[str, Any]]) -> frozenset[NeighEntry]:
    """The permanent entries of ``ip -j neigh show dev <vxlan>`` (anything else
    the kernel made itself and ages out)."""
    return frozenset(NeighEntry(str(e["dst"]), str(e["lladdr"]).lower())
                     for e in entries
                     if e.get("lladdr") and "PERMANENT" in (e.get("state") or []))


def gateway_mac(network_id: str) -> str:
    """The MAC of a spanning network's bridge on its DHCP host, derived from
    the network id so every host can point its entries at it without asking.
    Locally administered (``fa``), and apart from ports' ``fa:16:3e`` prefix."""
    digest = hashlib.sha256(network_id.encode()).digest()
    return "fa:16:3f:" + ":".join(f"{b:02x}" for b in digest[:3])


def dhcp_host(network_id: str, candidates: Iterable[str]) -> str | None:
    """The host that serves DHCP (and holds the gateway) of a network spanning
    hosts: the candidate with the highest hash of (network, host). Rendezvous
    hashing: every host computes the same answer from the same candidates, and
    a host joining or leaving moves only the networks it wins or held."""
    best: tuple[bytes, str] | None = None
    for host in candidates:
        score = hashlib.sha256(f"{network_id}/{host}".encode()).digest()
        if best is None or score > best[0]:
            best = (score, host)
    return best[1] if best else None
