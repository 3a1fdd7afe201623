"""Suspend and resume on this host (Nova's ``suspend_instance``/``resume_instance``):
the guest's memory saved to disk and the guest stopped; brought back with its
VIFs plugged again."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.guest_state import save_guest_state
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

# Nova's _error_out_instance_on_exception: a guest whose memory may be half
# saved (or half restored) is in ERROR after a driver failure.
SUSPEND = ActionSpec("compute_suspend_instance", "suspend", error_vm_state=VmState.ERROR)
RESUME = ActionSpec("compute_resume_instance", "resume", error_vm_state=VmState.ERROR)


@dataclass(frozen=True)
class Suspend:
    """suspend/resume of instances on one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI

    async def suspend_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            await self.driver.suspend(ctx, instance)
            await save_guest_state(self.driver, self.store, instance, VmState.SUSPENDED,
                                   TaskState.SUSPENDING)
        await self.runner.run(ctx, uuid, SUSPEND, body)

    async def resume_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            network_info = await self.network.get_instance_nw_info(ctx, instance)
            block_device_info = await self.store.block_device_info(uuid)
            await self.driver.resume(ctx, instance, network_info, dict(block_device_info))
            await save_guest_state(self.driver, self.store, instance, VmState.ACTIVE,
                                   TaskState.RESUMING)
        await self.runner.run(ctx, uuid, RESUME, body)
