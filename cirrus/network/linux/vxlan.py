"""The devices that join a network's bridge to the other hosts' (Neutron's
linuxbridge agent: ``ensure_vxlan``, ``ensure_vlan``, ``ensure_physical_in_bridge``)
and the VXLAN forwarding entries of :mod:`cirrus.network.l2pop`.

Like :mod:`cirrus.network.linux.ip`, every command runs in the host namespace.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from cirrus.network import l2pop
from cirrus.network.linux import ip

LOG = logging.getLogger(__name__)
VXLAN_PORT = 4789  # IANA's, as Neutron's default
IFNAMSIZ = 15


def vxlan_name(vni: int) -> str:
    return f"vxlan-{vni}"


def vlan_name(interface: str, vlan: int) -> str:
    """``<interface>.<vlan>``, the interface cut so the name fits IFNAMSIZ."""
    suffix = f".{vlan}"
    return interface[:IFNAMSIZ - len(suffix)] + suffix


async def _enslave(settings: Any, dev: str, bridge: str, mtu: int | None) -> None:
    """``dev`` up on ``bridge`` with the network's MTU, whoever created it."""
    argv = ["ip", "link", "set", "dev", dev, "master", bridge]
    if mtu:
        argv += ["mtu", str(int(mtu))]
    await ip.run(settings, [*argv, "up"])


async def _create(settings: Any, dev: str, argv: list[str]) -> None:
    """Create ``dev`` with ``argv`` unless it exists; safe against a racing creator."""
    if await ip.link_exists(settings, dev):
        return
    try:
        await ip.run(settings, argv)
    except ip.CommandError:
        if not await ip.link_exists(settings, dev):
            raise


async def ensure_vxlan(settings: Any, vni: int, local_ip: str, bridge: str,
                       mtu: int | None) -> str:
    """``vxlan-<vni>`` from ``local_ip`` on UDP 4789, no learning, answering
    ARP from its neighbour table, enslaved to ``bridge``; its name."""
    dev = vxlan_name(vni)
    await _create(settings, dev, ["ip", "link", "add", dev, "type", "vxlan", "id", str(vni),
                                  "local", local_ip, "dstport", str(VXLAN_PORT),
                                  "nolearning", "proxy"])
    await _enslave(settings, dev, bridge, mtu)
    return dev


async def ensure_vlan(settings: Any, interface: str, vlan: int, bridge: str,
                      mtu: int | None) -> str:
    """``<interface>.<vlan>`` (802.1Q on the physical network's interface),
    enslaved to ``bridge``; its name."""
    dev = vlan_name(interface, vlan)
    await ip.run(settings, ["ip", "link", "set", "dev", interface, "up"])
    await _create(settings, dev, ["ip", "link", "add", "link", interface, "name", dev,
                                  "type", "vlan", "id", str(vlan)])
    await _enslave(settings, dev, bridge, mtu)
    return dev


async def ensure_flat(settings: Any, interface: str, bridge: str) -> str:
    """The physical network's interface itself on ``bridge`` (untagged)."""
    await _enslave(settings, interface, bridge, None)
    return interface


async def entries(settings: Any, dev: str) -> l2pop.L2Entries:
    """The remote FDB and permanent neighbour entries of VXLAN device ``dev``."""
    fdb = await ip.run(settings, ["bridge", "-j", "fdb", "show", "dev", dev])
    neigh = await ip.run(settings, ["ip", "-j", "neigh", "show", "dev", dev])
    return l2pop.L2Entries(l2pop.parse_fdb(json.loads(fdb or "[]")),
                           l2pop.parse_neigh(json.loads(neigh or "[]")))


async def apply(settings: Any, dev: str, add: l2pop.L2Entries, remove: l2pop.L2Entries) -> None:
    """Remove, then add entries on ``dev``. Flooding entries are appended (one
    per remote host); a port's MAC or address moved elsewhere is replaced."""
    for fdb in sorted(remove.fdb):
        await ip.run(settings, ["bridge", "fdb", "del", fdb.mac, "dev", dev, "dst", fdb.dst],
                     check=False)
    for neigh in sorted(remove.neigh):
        await ip.run(settings, ["ip", "neigh", "del", neigh.ip, "dev", dev], check=False)
    for fdb in sorted(add.fdb):
        verb = "append" if fdb.mac == l2pop.FLOODING_MAC else "replace"
        await ip.run(settings, ["bridge", "fdb", verb, fdb.mac, "dev", dev, "dst", fdb.dst])
    for neigh in sorted(add.neigh):
        await ip.run(settings, ["ip", "neigh", "replace", neigh.ip, "lladdr", neigh.mac,
                                "dev", dev, "nud", "permanent"])


async def reconcile(settings: Any, dev: str, desired: l2pop.L2Entries) -> bool:
    """Make ``dev``'s entries ``desired``; whether anything changed."""
    add, remove = l2pop.diff(desired, await entries(settings, dev))
    if add or remove:
        LOG.debug("%s: adding %s, removing %s", dev, add, remove)
        await apply(settings, dev, add, remove)
    return bool(add or remove)
