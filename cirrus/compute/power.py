"""Power actions on this host: start (seed 003), stop, reboot, console."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.states import TaskState, VmState
from cirrus.context import RequestContext

if TYPE_CHECKING:
    from cirrus.compute.manager import ComputeManager

LOG = logging.getLogger(__name__)
SOFT_TASKS = (TaskState.REBOOTING, TaskState.REBOOT_PENDING, TaskState.REBOOT_STARTED)
HARD_TASKS = (TaskState.REBOOTING_HARD, TaskState.REBOOT_PENDING_HARD, TaskState.REBOOT_STARTED_HARD)


class PowerActions:
    """start/stop/reboot of instances on one host, each under the instance lock."""

    def __init__(self, manager: "ComputeManager") -> None:
        self.m = manager

    async def _run(self, ctx: RequestContext, uuid: str, event: str, action: Any) -> None:
        """Run ``action(instance)`` under the lock, recording the action event;
        a failure leaves a fault and clears the task state."""
        async with self.m.instance_lock(uuid):
            try:
                instance = await self.m.db.read(inst.get, uuid)
            except exc.InstanceNotFound:
                return
            event_id = await self.m.db.run(instance_actions.event_start, ctx, uuid, event, self.m.host)
            try:
                await action(instance)
            except (exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError):
                await self.m.db.run(instance_actions.event_finish, event_id)
                return
            except Exception as error:  # noqa: BLE001 - recorded as fault + event
                LOG.exception("%s of %s failed", event, uuid)
                await self.m.db.run(_failed, ctx, uuid, error, self.m.host, event_id)
                return
            await self.m.db.run(_succeeded, ctx, uuid, event_id)

    # -- start (seed 003: start_instance → _power_on → driver.power_on) -------------
    async def start_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def action(instance: dict[str, Any]) -> None:
            self.m.notifier.info(ctx, "compute.instance.power_on.start", {"instance_id": uuid})
            await self._power_on(ctx, instance)
            info = await self.m.driver.get_info(instance)
            await self.m.db.run(inst.save, uuid, {"power_state": int(info.state),
                                                  "vm_state": VmState.ACTIVE, "task_state": None},
                                expected_task_state=TaskState.POWERING_ON)
            self.m.notifier.info(ctx, "compute.instance.power_on.end", {"instance_id": uuid})
        await self._run(ctx, uuid, "compute_start_instance", action)

    async def _power_on(self, ctx: RequestContext, instance: dict[str, Any]) -> None:
        network_info = await self.m.network_api.get_instance_nw_info(ctx, instance)
        block_device_info = {"block_device_mapping": await self.m.db.read(inst.bdms, instance["uuid"]),
                             "root_device_name": "/dev/vda"}
        await self.m.driver.power_on(ctx, instance, network_info, block_device_info)

    # -- stop --------------------------------------------------------------------------
    async def stop_instance(self, ctx: RequestContext, uuid: str, clean_shutdown: bool) -> None:
        async def action(instance: dict[str, Any]) -> None:
            self.m.notifier.info(ctx, "compute.instance.power_off.start", {"instance_id": uuid})
            timeout = self.m.settings.shutdown_timeout if clean_shutdown else 0
            await self.m.driver.power_off(instance, timeout=timeout, retry_interval=1)
            info = await self.m.driver.get_info(instance)
            await self.m.db.run(inst.save, uuid, {"power_state": int(info.state),
                                                  "vm_state": VmState.STOPPED, "task_state": None},
                                expected_task_state=TaskState.POWERING_OFF)
            self.m.notifier.info(ctx, "compute.instance.power_off.end", {"instance_id": uuid})
        await self._run(ctx, uuid, "compute_stop_instance", action)

    # -- reboot ------------------------------------------------------------------------
    async def reboot_instance(self, ctx: RequestContext, uuid: str, reboot_type: str) -> None:
        hard = reboot_type.upper() == "HARD"

        async def action(instance: dict[str, Any]) -> None:
            started = TaskState.REBOOT_STARTED_HARD if hard else TaskState.REBOOT_STARTED
            await self.m.db.run(inst.save, uuid, {"task_state": started},
                                expected_task_state=HARD_TASKS if hard else SOFT_TASKS)
            self.m.notifier.info(ctx, "compute.instance.reboot.start", {"instance_id": uuid})
            network_info = await self.m.network_api.get_instance_nw_info(ctx, instance)
            await self.m.driver.reboot(ctx, instance, network_info, "HARD" if hard else "SOFT")
            info = await self.m.driver.get_info(instance)
            await self.m.db.run(inst.save, uuid, {"power_state": int(info.state),
                                                  "vm_state": VmState.ACTIVE, "task_state": None},
                                expected_task_state=started)
            self.m.notifier.info(ctx, "compute.instance.reboot.end", {"instance_id": uuid})
        await self._run(ctx, uuid, "compute_reboot_instance", action)

    async def get_console_output(self, ctx: RequestContext, uuid: str,
                                 tail_length: int | None) -> str:
        instance = await self.m.db.read(inst.get, uuid)
        output = await self.m.driver.get_console_output(ctx, instance)
        if tail_length is not None:
            lines = output.splitlines()
            output = "\n".join(lines[-tail_length:] if tail_length else [])
        return output


def _succeeded(conn: sa.Connection, ctx: RequestContext, uuid: str, event_id: int | None) -> None:
    instance_actions.event_finish(conn, event_id)
    instance_actions.action_finish(conn, ctx, uuid)


def _failed(conn: sa.Connection, ctx: RequestContext, uuid: str, error: Exception, host: str,
            event_id: int | None) -> None:
    try:
        inst.save(conn, uuid, {"task_state": None})
        inst.add_fault(conn, uuid, error, host)
    except exc.InstanceNotFound:
        pass
    instance_actions.event_finish(conn, event_id, exc=error)
    instance_actions.action_finish(conn, ctx, uuid, message="Error")
