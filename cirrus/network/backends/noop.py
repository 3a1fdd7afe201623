"""The no-op host backend: a bound port is up at once (fake and simulated hosts)."""
from __future__ import annotations

from typing import Any

from cirrus.network.backends.base import HostBackend


class NoopBackend(HostBackend):
    up_on_bind = True
    unbind_needs_network = False

    def __init__(self, settings: Any = None, host: str | None = None) -> None:
        self.host = host

    async def port_bound(self, port: dict[str, Any], network: dict[str, Any],
                         subnets: list[dict[str, Any]]) -> None:
        callback = getattr(self, "_port_up", None)
        if callback is not None:
            await callback(port["id"])

    async def port_unbound(self, port: dict[str, Any], network: dict[str, Any]) -> None:
        return None
