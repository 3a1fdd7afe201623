"""Rebuild on this host (Nova's ``rebuild_instance`` → ``_do_rebuild_instance``):
the guest destroyed with its disks, its ports kept, then spawned again from
the new image the API recorded on the instance.

REBUILDING (API) → REBUILD_BLOCK_DEVICE_MAPPING → REBUILD_SPAWNING → none;
a server that was stopped is stopped again afterwards, as Nova does.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.claims import ClaimsClient
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.models import block_device_mappings
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

# Nova's rebuild leaves a guest it could not rebuild in ERROR.
REBUILD = ActionSpec("compute_rebuild_instance", "rebuild", error_vm_state=VmState.ERROR)


@dataclass(frozen=True)
class RebuildArgs:
    """What the API casts with a rebuild."""

    image_ref: str
    orig_image_ref: str | None
    admin_password: str | None
    injected_files: list[list[str]]
    preserve_ephemeral: bool


@dataclass(frozen=True)
class Rebuild:
    """rebuild_instance of one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    images: Any  # cirrus.image.api.ImageAPI
    claims: ClaimsClient
    shutdown_timeout: float

    async def rebuild_instance(self, ctx: RequestContext, uuid: str, args: RebuildArgs) -> None:
        async def body(instance: Instance) -> None:
            was_stopped = instance["vm_state"] == VmState.STOPPED.value
            image_meta = await self.images.get(ctx.elevated(), args.image_ref)
            network_info = await self.network.get_instance_nw_info(ctx, instance)
            await self.store.save(uuid, {"task_state": TaskState.REBUILD_BLOCK_DEVICE_MAPPING},
                                  expected_task_state=TaskState.REBUILDING)
            # The ports stay: only the guest and its disks go.
            await self.driver.destroy(ctx, instance, network_info, destroy_disks=True)
            await self.store.run(_root_disk_from, uuid, args.image_ref)
            block_device_info = await self.store.block_device_info(uuid)
            instance = {**instance, **await self.store.save(
                uuid, {"task_state": TaskState.REBUILD_SPAWNING},
                expected_task_state=TaskState.REBUILD_BLOCK_DEVICE_MAPPING)}
            injected = [(path, base64.b64decode(data)) for path, data in args.injected_files]
            allocation = await self.claims.of(uuid)
            await self.driver.spawn(ctx, instance, image_meta, injected, args.admin_password,
                                    dict(allocation or {}), network_info, block_device_info)
            if was_stopped:  # Nova stops it again
                await self.driver.power_off(instance, timeout=self.shutdown_timeout,
                                            retry_interval=1)
            info = await self.driver.get_info(instance)
            await self.store.save(uuid, {
                "vm_state": VmState.STOPPED if was_stopped else VmState.ACTIVE,
                "task_state": None, "power_state": int(info.state), "launched_at": utcnow()},
                expected_task_state=TaskState.REBUILD_SPAWNING)
        await self.runner.run(ctx, uuid, REBUILD, body)


def _root_disk_from(conn: sa.Connection, uuid: str, image_id: str) -> None:
    """The root mapping names the new image (Nova updates the root BDM)."""
    b = block_device_mappings
    conn.execute(b.update().where(b.c.instance_uuid == uuid, b.c.boot_index == 0,
                                  b.c.source_type == "image").values(image_id=image_id))
