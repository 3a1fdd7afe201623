"""Router namespaces: create, enumerate, delete (Neutron's
``agent/l3/namespaces.py``).

A router namespace is a network namespace of its own, named globally
(``/run/netns/qrouter-<id>``) whether or not the host's bridges live in
``settings.host_netns``; its ``qr-``/``qg-`` devices are veth ends whose peers
sit on those bridges.
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from cirrus.network.linux import ip

LOG = logging.getLogger(__name__)
NETNS_DIR = "/run/netns"
# Forwarding on inside the router only; the host's own settings are untouched.
FORWARDING_SYSCTLS = ("net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding")
ROUTER_DEVICE_PREFIXES = ("qr-", "qg-")


@dataclass(frozen=True)
class InNamespace:
    """Settings-shaped handle that makes every :mod:`cirrus.network.linux.ip`
    helper run inside the network namespace ``host_netns`` (here: a router's)."""

    host_netns: str


# Namespace names are global: ``ip netns add/del`` run where this process is.
HERE = InNamespace("")


def exists(name: str) -> bool:
    """Whether the namespace ``name`` exists (a file check, no command)."""
    return os.path.exists(os.path.join(NETNS_DIR, name))


async def create(name: str) -> InNamespace:
    """Add the namespace, bring up ``lo`` and turn forwarding on inside it."""
    await ip.run(HERE, ["ip", "netns", "add", name])
    inside = InNamespace(name)
    await ip.run(inside, ["ip", "link", "set", "lo", "up"])
    for key in FORWARDING_SYSCTLS:
        await ip.write_sysctl(inside, key, "1")
    return inside


async def links(inside: InNamespace) -> dict[str, dict[str, Any]]:
    """Every link of the namespace with its addresses (``ip -j addr``): one
    command tells MAC, MTU, state and addresses of every device."""
    text = await ip.run(inside, ["ip", "-j", "addr", "show"])
    return {link["ifname"]: link for link in json.loads(text or "[]")}


def global_addresses(link: dict[str, Any]) -> set[str]:
    """The global ``ADDR/PREFIX`` addresses of one ``ip -j addr`` entry."""
    return {f"{a['local']}/{a['prefixlen']}" for a in link.get("addr_info", [])
            if "local" in a and a.get("scope") == "global"}


async def delete(name: str) -> None:
    """Delete the router's devices (so their bridge-side peers go at once,
    not whenever the kernel reaps the namespace), then the namespace."""
    if not exists(name):
        return
    try:
        devices = [dev for dev in await links(InNamespace(name))
                   if dev.startswith(ROUTER_DEVICE_PREFIXES)]
        await batch(HERE, [f"link del dev {dev}" for dev in devices], name)
    except ip.CommandError as e:  # still delete the namespace itself
        LOG.warning("deleting the devices of %s failed: %s", name, e)
    await ip.run(HERE, ["ip", "netns", "del", name])


async def batch(settings: Any, lines: list[str], netns: str | None = None) -> None:
    """Run ``ip`` commands as one process (in ``netns`` when given);
    ``-force`` applies every line it can and still fails when one did not."""
    if lines:
        where = ["-n", netns] if netns else []
        await ip.run(settings, ["ip", *where, "-force", "-batch", "-"],
                     input="\n".join(lines) + "\n")
