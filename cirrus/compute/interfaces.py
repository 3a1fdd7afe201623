"""Attaching and detaching a VIF of an instance on this host (``os-interface``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cirrus.compute.store import InstanceStore
from cirrus.context import RequestContext
from cirrus.network.api import API as NetworkAPI
from cirrus.utils import KeyedLocks
from cirrus.virt.driver import ComputeDriver


@dataclass(frozen=True)
class Interfaces:
    """``attach_interface`` / ``detach_interface`` of one host."""

    store: InstanceStore
    locks: KeyedLocks
    driver: ComputeDriver
    network: NetworkAPI

    async def attach_interface(self, ctx: RequestContext, uuid: str,
                               request: dict[str, Any]) -> str:
        """Allocate and plug one more VIF; the new port's id."""
        async with self.locks(uuid):
            instance = await self.store.get(uuid)
            before = {vif["id"] for vif in await self.network.get_instance_nw_info(ctx, instance)}
            info = await self.network.allocate_for_instance(
                ctx, instance, requested_networks=[request], bind_host_id=self.store.host)
            new = [vif for vif in info if vif["id"] not in before]
            await self.driver.plug_vifs(instance, new)
            return new[0]["id"] if new else (request.get("port_id") or "")

    async def detach_interface(self, ctx: RequestContext, uuid: str, port_id: str) -> None:
        """Unplug the port's VIF and release the port."""
        async with self.locks(uuid):
            instance = await self.store.get(uuid)
            cache = await self.network.get_instance_nw_info(ctx, instance)
            await self.driver.unplug_vifs(instance, [v for v in cache if v["id"] == port_id])
            await self.network.deallocate_port_for_instance(ctx, instance, port_id)
