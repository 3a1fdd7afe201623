"""Power actions on this host: start (seed 003), stop, reboot, console."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

SOFT_TASKS = (TaskState.REBOOTING, TaskState.REBOOT_PENDING, TaskState.REBOOT_STARTED)
HARD_TASKS = (TaskState.REBOOTING_HARD, TaskState.REBOOT_PENDING_HARD, TaskState.REBOOT_STARTED_HARD)
START = ActionSpec("compute_start_instance", "power_on")
STOP = ActionSpec("compute_stop_instance", "power_off")
# Nova's reboot_instance leaves a guest it could not reboot in ERROR.
REBOOT = ActionSpec("compute_reboot_instance", "reboot", error_vm_state=VmState.ERROR)


@dataclass(frozen=True)
class PowerActions:
    """start/stop/reboot of instances on one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    shutdown_timeout: float

    # -- start (seed 003: start_instance → _power_on → driver.power_on) -------------
    async def start_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            await self._power_on(ctx, instance)
            await self._saved_power_state(instance, VmState.ACTIVE, TaskState.POWERING_ON)
        await self.runner.run(ctx, uuid, START, body)

    async def _power_on(self, ctx: RequestContext, instance: Instance) -> None:
        network_info = await self.network.get_instance_nw_info(ctx, instance)
        block_device_info = await self.store.block_device_info(instance["uuid"])
        await self.driver.power_on(ctx, instance, network_info,
                                   cast(dict[str, Any], block_device_info))

    async def _saved_power_state(self, instance: Instance, vm_state: VmState,
                                 expected: TaskState) -> None:
        """The hypervisor's power state and ``vm_state`` saved, the task done."""
        info = await self.driver.get_info(instance)
        await self.store.save(instance["uuid"], {"power_state": int(info.state),
                                                 "vm_state": vm_state, "task_state": None},
                              expected_task_state=expected)

    # -- stop --------------------------------------------------------------------------
    async def stop_instance(self, ctx: RequestContext, uuid: str, clean_shutdown: bool) -> None:
        async def body(instance: Instance) -> None:
            timeout = self.shutdown_timeout if clean_shutdown else 0
            await self.driver.power_off(instance, timeout=timeout, retry_interval=1)
            await self._saved_power_state(instance, VmState.STOPPED, TaskState.POWERING_OFF)
        await self.runner.run(ctx, uuid, STOP, body)

    # -- reboot ------------------------------------------------------------------------
    async def reboot_instance(self, ctx: RequestContext, uuid: str, reboot_type: str) -> None:
        hard = reboot_type.upper() == "HARD"
        started = TaskState.REBOOT_STARTED_HARD if hard else TaskState.REBOOT_STARTED

        async def body(instance: Instance) -> None:
            await self.store.save(uuid, {"task_state": started},
                                  expected_task_state=HARD_TASKS if hard else SOFT_TASKS)
            network_info = await self.network.get_instance_nw_info(ctx, instance)
            await self.driver.reboot(ctx, instance, network_info, "HARD" if hard else "SOFT")
            await self._saved_power_state(instance, VmState.ACTIVE, started)
        await self.runner.run(ctx, uuid, REBOOT, body)

    async def get_console_output(self, ctx: RequestContext, uuid: str,
                                 tail_length: int | None) -> str:
        instance = await self.store.get(uuid)
        output = await self.driver.get_console_output(ctx, instance)
        if tail_length is not None:
            lines = output.splitlines()
            output = "\n".join(lines[-tail_length:] if tail_length else [])
        return output
