"""Rescue and unrescue on this host (Nova's ``rescue_instance``/``unrescue_instance``):
the guest stopped and booted from a rescue image with its own disk attached
second; later the original guest booted again."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cirrus.compute import exception as exc
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.guest_state import save_guest_state
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

RESCUE = ActionSpec("compute_rescue_instance", "rescue")
# Nova's unrescue reverts only its task state: the guest is still rescued.
UNRESCUE = ActionSpec("compute_unrescue_instance", "unrescue")


@dataclass(frozen=True)
class RescueRequest:
    """What the API hands the host for one rescue."""

    rescue_password: str
    rescue_image_ref: str | None = None
    clean_shutdown: bool = True


@dataclass(frozen=True)
class Rescue:
    """rescue/unrescue of instances on one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    images: Any  # cirrus.image.api.ImageAPI: ``get(ctx, image_id)``
    shutdown_timeout: float

    async def rescue_instance(self, ctx: RequestContext, uuid: str, req: RescueRequest) -> None:
        async def body(instance: Instance) -> None:
            network_info = await self.network.get_instance_nw_info(ctx, instance)
            image_meta = await self._get_rescue_image(ctx, instance, req.rescue_image_ref)
            block_device_info = dict(await self.store.block_device_info(uuid))
            try:
                timeout = self.shutdown_timeout if req.clean_shutdown else 0
                await self.driver.power_off(instance, timeout=timeout, retry_interval=1)
                await self.driver.rescue(ctx, instance, network_info, image_meta,
                                         req.rescue_password, block_device_info)
            except Exception as error:
                # Nova: a guest the driver failed to rescue is in ERROR (the
                # image lookup above fails before anything changed: not so).
                await self.store.save(uuid, {"vm_state": VmState.ERROR})
                raise exc.InstanceNotRescuable(instance_id=uuid,
                                               reason=f"Driver Error: {error}") from error
            await save_guest_state(self.driver, self.store, instance, VmState.RESCUED,
                                   TaskState.RESCUING, launched_at=utcnow())
        await self.runner.run(ctx, uuid, RESCUE, body)

    async def _get_rescue_image(self, ctx: RequestContext, instance: Instance,
                                rescue_image_ref: str | None) -> dict[str, Any]:
        """The image asked for, else the one the instance was booted from."""
        system_metadata = instance.get("system_metadata") or {}
        image_id = (rescue_image_ref or system_metadata.get("image_base_image_ref")
                    or instance["image_ref"])
        return await self.images.get(ctx.elevated(), image_id)  # type: ignore[no-any-return]

    async def unrescue_instance(self, ctx: RequestContext, uuid: str) -> None:
        async def body(instance: Instance) -> None:
            await self.driver.unrescue(ctx, instance)
            await save_guest_state(self.driver, self.store, instance, VmState.ACTIVE,
                                   TaskState.UNRESCUING)
        await self.runner.run(ctx, uuid, UNRESCUE, body)
