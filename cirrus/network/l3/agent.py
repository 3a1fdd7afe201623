"""The L3 agent: this host's routers as ``qrouter-<id>`` namespaces (Neutron's
``agent/l3/agent.py``).

:meth:`L3Agent.sync` is the whole interface (:class:`RouterDriver`): given
every router this host serves, it creates, changes and deletes namespaces
until the host matches. It is diff-based: a router whose spec equals the one
last applied (and whose namespace still exists) costs no command at all, so
the sync can run on every port change and every few seconds.

Which namespaces are this host's is recorded in ``<state_dir>/l3/<router
id>.nft`` (the NAT script last loaded there): after a restart the agent
removes the namespaces of routers it no longer serves, and leaves alone any
``qrouter-`` namespace it never made (another agent's, on a shared machine).
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Sequence

from cirrus.network.l3 import namespaces
from cirrus.network.l3.router_info import RouterInfo
from cirrus.network.l3.spec import RouterSpec, namespace_name
from cirrus.network.linux import ip

LOG = logging.getLogger(__name__)


class L3Agent:
    """The :class:`~cirrus.network.l3.spec.RouterDriver` of the linuxbridge
    host backend. Bridges (``RouterPort.bridge``) live in
    ``settings.host_netns`` and must exist: the agent plugs into them and
    creates nothing else there."""

    # Seconds after which a sync re-reads every namespace instead of trusting
    # what it applied last (someone deleted a device, a bridge was re-made):
    # reads only, changes only where the host drifted.
    RESYNC_INTERVAL = 60.0

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self.records = Path(settings.state_dir) / "l3"
        self.routers: dict[str, RouterInfo] = {}
        self._lock = asyncio.Lock()
        self._loaded = False
        self._read_at = -float("inf")  # loop time of the last full re-read

    async def sync(self, specs: Sequence[RouterSpec]) -> None:
        """Make this host's routers exactly ``specs``.

        A router that fails (a command error) does not hold back the others;
        the first error is raised once all were tried, and the failed router
        is redone from what is there on the next sync.
        """
        async with self._lock:
            self._load_records()
            self._expire()
            errors: list[Exception] = []
            wanted = {spec.router_id: spec for spec in specs}
            for spec in wanted.values():
                try:
                    await self._process(spec)
                except (ip.CommandError, OSError) as e:
                    LOG.error("router %s: %s", spec.router_id, e)
                    errors.append(e)
            for router_id in sorted(set(self.routers) - set(wanted)):
                try:
                    await self._remove(router_id)
                except (ip.CommandError, OSError) as e:
                    LOG.error("removing router %s: %s", router_id, e)
                    errors.append(e)
        if errors:
            raise errors[0]

    def _expire(self) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._read_at >= self.RESYNC_INTERVAL:
            self._read_at = now
            for info in self.routers.values():
                info.spec = None  # the next process reads what is there

    async def _process(self, spec: RouterSpec) -> None:
        info = self.routers.setdefault(spec.router_id, RouterInfo(spec.router_id))
        if info.spec == spec and namespaces.exists(spec.namespace):
            return
        try:
            await info.process(self.settings, spec)
        finally:
            # Recorded even half-made, so a restarted agent knows it is ours.
            if namespaces.exists(spec.namespace):
                self._record(spec.router_id, info.nat or "")

    async def _remove(self, router_id: str) -> None:
        await namespaces.delete(namespace_name(router_id))
        self.routers.pop(router_id, None)
        (self.records / f"{router_id}.nft").unlink(missing_ok=True)

    def _record(self, router_id: str, script: str) -> None:
        """``script``: the NAT script loaded ("" when none is known to be)."""
        path = self.records / f"{router_id}.nft"
        if path.exists() and path.read_text() == script:
            return
        self.records.mkdir(parents=True, exist_ok=True)
        path.write_text(script)

    def _load_records(self) -> None:
        """Once: the routers this host made before a restart, with the NAT
        script each has loaded (so an unchanged one is not reloaded)."""
        if self._loaded:
            return
        self._loaded = True
        if not self.records.is_dir():
            return
        for path in self.records.glob("*.nft"):
            router_id = path.stem
            if namespaces.exists(namespace_name(router_id)):
                self.routers[router_id] = RouterInfo(router_id, nat=path.read_text() or None)
            else:
                path.unlink(missing_ok=True)
