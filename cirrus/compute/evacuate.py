"""Evacuation on the hosts: the destination rebuilds an instance whose host
is down (Nova's ``rebuild_instance`` with ``recreate``: same image, same
ports bound here), and the old host, when it starts again, destroys the
guests evacuated away from it (Nova's ``_destroy_evacuated_instances``).

The scheduler moved the claim to the destination already (an evacuation
releases the source's at once), so the returning host only cleans its
hypervisor.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import migrations as mig
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.migrations import Status
from cirrus.compute.resize import failing_migration
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.network.api import API as NetworkAPI
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
# Nova records an evacuation's rebuild as compute_rebuild_instance.
REBUILD = ActionSpec("compute_rebuild_instance", "rebuild", error_vm_state=VmState.ERROR)
ImageGetter = Callable[[RequestContext, str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Evacuation:
    """Both ends of an evacuation, on one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    image: ImageGetter  # the image record of an id

    async def evacuate_instance(self, ctx: RequestContext, uuid: str, migration_uuid: str,
                                admin_password: str | None) -> None:
        """Rebuild the instance here from its image, with its ports."""
        async def body(instance: Instance) -> None:
            migration = await self.store.read(mig.get, migration_uuid)
            await self.store.save(uuid, {"host": self.store.host,
                                         "node": migration["dest_node"],
                                         "task_state": TaskState.REBUILD_SPAWNING},
                                  expected_task_state=TaskState.REBUILDING)
            instance = await self.store.get(uuid)
            network_info = await self.network.migrate_instance_finish(ctx, instance,
                                                                      self.store.host)
            image_meta = await self._image_meta(ctx, instance)
            await self.driver.spawn(ctx, instance, image_meta, [], admin_password, {},
                                    network_info, dict(await self.store.block_device_info(uuid)))
            stopped = instance["vm_state"] == VmState.STOPPED.value
            if stopped:  # Nova keeps a stopped instance stopped
                await self.driver.power_off(instance)
            info = await self.driver.get_info(instance)
            await self.store.run(_rebuilt, uuid, migration_uuid,
                                 VmState.STOPPED if stopped else VmState.ACTIVE,
                                 int(info.state))
        await self.runner.run(ctx, uuid, REBUILD,
                              failing_migration(self.store, migration_uuid, body,
                                                Status.FAILED))

    async def _image_meta(self, ctx: RequestContext, instance: Instance) -> dict[str, Any]:
        if not instance.get("image_ref"):
            return {"properties": {}}
        return await self.image(ctx.elevated(), instance["image_ref"])

    async def destroy_evacuated_instances(self, ctx: RequestContext) -> list[str]:
        """At start: the guests still here of instances evacuated to another
        host are destroyed; their finished evacuations are completed."""
        destroyed = []
        known = set(await self.driver.list_instance_uuids())
        for migration in await self.store.read(mig.evacuated_from, self.store.host):
            uuid = migration["instance_uuid"]
            try:
                instance = await self.store.get(uuid, read_deleted=True)
            except exc.InstanceNotFound:
                instance = None
            if instance is not None and instance["host"] == self.store.host:
                continue  # the evacuation failed before it moved the instance
            if uuid in known and instance is not None:
                network_info = await self.store.cached_network_info(uuid)
                # The disks go too (no shared storage between cirrus hosts).
                await self.driver.destroy(ctx, instance, network_info, destroy_disks=True)
                destroyed.append(uuid)
            if migration["status"] == Status.DONE.value:
                await self.store.run(mig.save, migration["uuid"], {"status": Status.COMPLETED})
        return destroyed


def _rebuilt(conn: sa.Connection, uuid: str, migration_uuid: str, vm_state: VmState,
             power_state: int) -> None:
    inst.save(conn, uuid, {"vm_state": vm_state, "task_state": None,
                           "power_state": power_state},
              expected_task_state=TaskState.REBUILD_SPAWNING)
    mig.save(conn, migration_uuid, {"status": Status.DONE})
