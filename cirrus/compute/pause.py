"""Pause and unpause on this host (Nova's ``pause_instance``/``unpause_instance``):
the guest frozen in memory, and running again."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.guest_state import save_guest_state
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.virt.driver import ComputeDriver

# Nova reverts only the task state of a pause that failed: the guest is as it was.
PAUSE = ActionSpec("compute_pause_instance", "pause")
UNPAUSE = ActionSpec("compute_unpause_instance", "unpause")


@dataclass(frozen=True)
class Pause:
    """pause/unpause of instances on one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver

    async def pause_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            await self.driver.pause(instance)
            await save_guest_state(self.driver, self.store, instance, VmState.PAUSED,
                                   TaskState.PAUSING)
        await self.runner.run(ctx, uuid, PAUSE, body)

    async def unpause_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            await self.driver.unpause(instance)
            await save_guest_state(self.driver, self.store, instance, VmState.ACTIVE,
                                   TaskState.UNPAUSING)
        await self.runner.run(ctx, uuid, UNPAUSE, body)
