"""changePassword on this host (Nova's ``set_admin_password``): the driver sets
the guest's admin password; nothing stores it. The API waits for the answer
(an RPC call), so the error comes back to it as well as being recorded."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.compute import exception as exc
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.states import PowerState, TaskState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.virt import exception as vexc
from cirrus.virt.driver import ComputeDriver

SET_ADMIN_PASSWORD = ActionSpec("compute_set_admin_password", "change_password")
# Errors the caller is told as they are; any other becomes "error setting admin
# password", so that nothing of the password can leak into an answer.
TOLD_AS_IS = (vexc.DriverNotImplemented, vexc.InstanceAgentNotEnabled,
              exc.InstancePasswordSetFailed, exc.UnexpectedTaskStateError, exc.InstanceNotFound)


@dataclass(frozen=True)
class Password:
    """set_admin_password of instances on one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver

    async def set_admin_password(self, ctx: RequestContext, uuid: str, new_pass: str) -> None:
        """Raises what failed, after the runner recorded it and cleared the task."""
        failed: list[Exception] = []

        async def body(instance: Instance) -> None:
            try:
                await self._set(instance, new_pass)
            except Exception as error:
                failed.append(error if isinstance(error, TOLD_AS_IS) else
                              exc.InstancePasswordSetFailed(instance=uuid,
                                                            reason="error setting admin password"))
                raise
        await self.runner.run(ctx, uuid, SET_ADMIN_PASSWORD, body)
        if failed:
            raise failed[0]

    async def _set(self, instance: Instance, new_pass: str) -> None:
        uuid = instance["uuid"]
        if (await self.driver.get_info(instance)).state != PowerState.RUNNING:
            raise exc.InstancePasswordSetFailed(instance=uuid,
                                                reason=f"instance {uuid} is not running")
        await self.driver.set_admin_password(instance, new_pass)
        await self.store.save(uuid, {"task_state": None},
                              expected_task_state=TaskState.UPDATING_PASSWORD)
