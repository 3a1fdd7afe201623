"""A running guest's diagnostics, on its host (Nova's ``get_diagnostics`` and
``get_instance_diagnostics``): the driver measures; a guest that is not
running has none to give (409, as Nova)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cirrus.compute import exception as exc
from cirrus.compute.states import PowerState
from cirrus.compute.store import InstanceStore
from cirrus.context import RequestContext
from cirrus.virt import exception as vexc
from cirrus.virt.diagnostics import STATE_NAMES
from cirrus.virt.driver import ComputeDriver


@dataclass(frozen=True)
class ServerDiagnostics:
    """The diagnostics of one host's guests."""

    store: InstanceStore
    driver: ComputeDriver

    async def _running(self, uuid: str) -> dict[str, Any]:
        """The instance, if its guest runs; InstanceInvalidState (409) if not."""
        instance = await self.store.get(uuid)
        try:
            state = (await self.driver.get_info(instance)).state
        except vexc.InstanceNotFound:  # no guest: Nova's NOSTATE
            state = PowerState.NOSTATE
        if state != PowerState.RUNNING:
            # Nova names the state the database holds, as the caller saw it.
            recorded = PowerState(instance.get("power_state") or PowerState.NOSTATE)
            raise exc.InstanceInvalidState(attr="power state", instance_uuid=uuid,
                                           state=STATE_NAMES[recorded], method="get_diagnostics")
        return instance

    async def get_diagnostics(self, ctx: RequestContext, uuid: str) -> dict[str, int]:
        """The hypervisor's own counters (the body before 2.48)."""
        return await self.driver.get_diagnostics(await self._running(uuid))

    async def get_instance_diagnostics(self, ctx: RequestContext, uuid: str) -> dict[str, Any]:
        """The standard diagnostics (the body from 2.48)."""
        diags = await self.driver.get_instance_diagnostics(await self._running(uuid))
        return diags.to_dict()
