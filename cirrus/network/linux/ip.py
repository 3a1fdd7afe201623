"""Run host networking commands, in the host's network namespace.

Every helper takes the deployment ``settings``: when ``settings.host_netns`` is
non-empty, commands run as ``ip netns exec NAME …`` so bridges, taps, dnsmasq
and nftables rules all live in the namespace where libvirtd creates the guests'
taps (tests and the real-VM suite use this to keep the machine's own
interfaces untouched). The libvirt driver uses :func:`ensure_bridge` and
:func:`link_master`; the ``linuxbridge`` backend uses the rest.
"""
from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Sequence

LOG = logging.getLogger(__name__)


class CommandError(Exception):
    """A host command exited non-zero; ``stderr`` says why."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"{' '.join(self.argv)!r} exited {returncode}: {self.stderr}")


def netns_argv(settings: Any, argv: Sequence[str]) -> list[str]:
    """``argv`` as it must be executed to run inside the host namespace."""
    netns = getattr(settings, "host_netns", "") or ""
    return ["ip", "netns", "exec", netns, *argv] if netns else list(argv)


async def run(settings: Any, argv: Sequence[str], *, input: str | None = None,
              check: bool = True) -> str:
    """Run ``argv`` in the host namespace and return its stdout.

    Raises :class:`CommandError` (with stderr) on a non-zero exit when
    ``check`` is true.
    """
    full = netns_argv(settings, argv)
    try:
        proc = await asyncio.create_subprocess_exec(
            *full, stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except FileNotFoundError as e:
        raise CommandError(full, 127, f"{e.filename or full[0]}: command not found") from None
    try:
        out, err = await proc.communicate(input.encode() if input is not None else None)
    except asyncio.CancelledError:
        # Never leave a half-applied command running behind a cancelled caller.
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        raise
    if check and proc.returncode != 0:
        raise CommandError(full, proc.returncode or 0, err.decode(errors="replace"))
    return out.decode(errors="replace")


async def links(settings: Any) -> dict[str, dict[str, Any]]:
    """Every link of the host namespace by name (``ip -j link``): one command
    for any number of devices, so pollers stay cheap."""
    text = await run(settings, ["ip", "-j", "link", "show"])
    return {link["ifname"]: link for link in json.loads(text or "[]")}


async def link_exists(settings: Any, dev: str) -> bool:
    """Whether ``dev`` exists in the host namespace."""
    try:
        await run(settings, ["ip", "-j", "link", "show", "dev", dev])
    except CommandError:
        return False
    return True


async def link_master(settings: Any, dev: str) -> str | None:
    """The bridge ``dev`` is enslaved to; None when it has none or is missing."""
    try:
        text = await run(settings, ["ip", "-j", "link", "show", "dev", dev])
    except CommandError:
        return None
    found = json.loads(text or "[]")
    return found[0].get("master") if found else None


async def ensure_bridge(settings: Any, name: str, mtu: int | None = None) -> None:
    """Create bridge ``name`` (no STP, no forwarding delay) and set it up;
    idempotent and safe against a concurrent creator."""
    if not await link_exists(settings, name):
        try:
            await run(settings, ["ip", "link", "add", name, "type", "bridge",
                                 "stp_state", "0", "forward_delay", "0"])
        except CommandError:
            # Someone else (the driver or the backend) may have won the race.
            if not await link_exists(settings, name):
                raise
    argv = ["ip", "link", "set", "dev", name]
    if mtu:
        argv += ["mtu", str(int(mtu))]
    await run(settings, [*argv, "up"])


async def addresses(settings: Any, dev: str) -> set[str]:
    """The global addresses on ``dev`` as ``ADDR/PREFIX`` strings."""
    text = await run(settings, ["ip", "-j", "addr", "show", "dev", dev, "scope", "global"])
    found = json.loads(text or "[]")
    # ``ip -j`` lists filtered-out addresses as empty objects.
    return {f"{a['local']}/{a['prefixlen']}" for link in found
            for a in link.get("addr_info", []) if "local" in a}


async def set_address(settings: Any, dev: str, cidr: str) -> None:
    """Put ``cidr`` (``ADDR/PREFIX``) on ``dev`` unless it is there already."""
    if cidr in await addresses(settings, dev):
        return
    argv = ["ip", "addr", "add", cidr, "dev", dev]
    if ":" in cidr:
        argv.append("nodad")  # usable at once; the address is ours by construction
    try:
        await run(settings, argv)
    except CommandError as e:
        if "File exists" not in e.stderr:
            raise


async def remove_address(settings: Any, dev: str, cidr: str) -> None:
    """Take ``cidr`` off ``dev``; missing is fine."""
    await run(settings, ["ip", "addr", "del", cidr, "dev", dev], check=False)


async def delete_link(settings: Any, dev: str) -> None:
    """Delete ``dev``; missing is fine."""
    if await link_exists(settings, dev):
        await run(settings, ["ip", "link", "del", "dev", dev], check=False)


async def write_sysctl(settings: Any, key: str, value: str) -> None:
    """Set a (per-namespace) sysctl such as ``net.bridge.bridge-nf-call-iptables``;
    ``tee`` into /proc, since /proc/sys/net shows the writer's namespace."""
    await run(settings, ["tee", "/proc/sys/" + key.replace(".", "/")], input=value + "\n")


async def link_mac(settings: Any, dev: str) -> str | None:
    """The MAC address of ``dev``; None when it is missing."""
    try:
        text = await run(settings, ["ip", "-j", "link", "show", "dev", dev])
    except CommandError:
        return None
    found = json.loads(text or "[]")
    return str(found[0].get("address", "")).lower() or None if found else None


async def set_mac(settings: Any, dev: str, mac: str) -> None:
    """Give ``dev`` the MAC address ``mac`` (a bridge then keeps it)."""
    await run(settings, ["ip", "link", "set", "dev", dev, "address", mac])
