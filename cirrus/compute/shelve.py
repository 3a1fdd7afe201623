"""Shelve, shelve offload and unshelve on this host (Nova's
``shelve_instance``, ``shelve_offload_instance``, ``unshelve_instance``).

shelve: the guest stopped and its disk snapshotted to the image the API
created (SHELVING → SHELVING_IMAGE_PENDING_UPLOAD → SHELVING_IMAGE_UPLOADING),
then SHELVED, the image named in the system metadata; offloaded at once when
``shelved_offload_time`` is 0. Offload: the guest and its disks gone, the
ports unbound (kept), the claim released, no host: SHELVED_OFFLOADED.
Unshelve: on the host the conductor chose (a new claim, made by the
scheduler), the ports bound here, the guest spawned from the shelved image,
which is then deleted; ACTIVE. A server still on its host is powered on.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from cirrus.claims import ClaimsClient
from cirrus.compute import exception as exc
from cirrus.compute import image_requests
from cirrus.compute.models import instances
from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.snapshot import delete_image_quietly, task_state_saver
from cirrus.compute.states import PowerState, TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext, admin_context
from cirrus.db.base import isotime, utcnow
from cirrus.db.rows import json_loads
from cirrus.network.api import API as NetworkAPI
from cirrus.notifications import Notifier
from cirrus.virt.driver import ComputeDriver

SHELVE = ActionSpec("compute_shelve_instance", "shelve")
SHELVE_OFFLOAD = ActionSpec("compute_shelve_offload_instance", "shelve_offload")
UNSHELVE = ActionSpec("compute_unshelve_instance", "unshelve")
# The snapshot's steps under shelve's own names (Nova's shelve update_task_state).
SHELVE_STEPS = {TaskState.IMAGE_SNAPSHOT: TaskState.SHELVING,
                TaskState.IMAGE_PENDING_UPLOAD: TaskState.SHELVING_IMAGE_PENDING_UPLOAD,
                TaskState.IMAGE_UPLOADING: TaskState.SHELVING_IMAGE_UPLOADING}


@dataclass(frozen=True)
class Shelving:
    """shelve, shelve_offload and unshelve of one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    images: Any  # cirrus.image.api.ImageAPI
    claims: ClaimsClient
    notifier: Notifier
    shutdown_timeout: float
    shelved_offload_time: int

    # -- shelve ------------------------------------------------------------------------
    async def shelve_instance(self, ctx: RequestContext, uuid: str, image_id: str,
                              clean_shutdown: bool) -> None:
        async def body(instance: Instance) -> None:
            # Guarded first: a repeated delivery must not stop the guest again.
            await self.store.save(uuid, {}, expected_task_state=TaskState.SHELVING)
            try:
                await self._power_off(instance, clean_shutdown)
                await self.driver.snapshot(ctx, instance, image_id,
                                           task_state_saver(self.store, uuid, SHELVE_STEPS))
            except BaseException:
                await delete_image_quietly(self.images, ctx, image_id)
                raise
            offload = self.shelved_offload_time == 0
            info = await self.driver.get_info(instance)
            system_metadata = {**(instance["system_metadata"] or {}),
                               "shelved_at": isotime(utcnow()), "shelved_image_id": image_id,
                               "shelved_host": self.store.host}
            instance = {**instance, **await self.store.save(uuid, {
                "vm_state": VmState.SHELVED, "power_state": int(info.state),
                "task_state": TaskState.SHELVING_OFFLOADING if offload else None,
                "system_metadata": system_metadata},
                expected_task_state=TaskState.SHELVING_IMAGE_UPLOADING)}
            if offload:
                await self._offload(ctx, instance)
        await self.runner.run(ctx, uuid, SHELVE, body)

    async def _power_off(self, instance: Instance, clean_shutdown: bool) -> None:
        timeout = self.shutdown_timeout if clean_shutdown else 0
        await self.driver.power_off(instance, timeout=timeout, retry_interval=1)

    # -- shelve offload --------------------------------------------------------------
    async def shelve_offload_instance(self, ctx: RequestContext, uuid: str,
                                      clean_shutdown: bool) -> None:
        async def body(instance: Instance) -> None:
            await self.store.save(uuid, {}, expected_task_state=TaskState.SHELVING_OFFLOADING)
            await self._power_off(instance, clean_shutdown)
            await self._offload(ctx, instance, notify=False)
        await self.runner.run(ctx, uuid, SHELVE_OFFLOAD, body)

    async def _offload(self, ctx: RequestContext, instance: Instance, notify: bool = True) -> None:
        """Guest and disks destroyed, ports unbound, claim released, no host."""
        uuid = instance["uuid"]
        payload = {"instance_id": uuid, "host": self.store.host}
        if notify:  # within shelve: its own start/end, as Nova sends them
            self.notifier.info(ctx, "compute.instance.shelve_offload.start", payload)
        network_info = await self.store.cached_network_info(uuid)
        block_device_info = await self.store.block_device_info(uuid)
        await self.driver.destroy(ctx, instance, network_info, block_device_info)
        await self.network.cleanup_instance_network_on_host(ctx, instance)
        # The guest is gone: its claim goes before the state says so, so that
        # whoever sees SHELVED_OFFLOADED sees no claim on the host either.
        await self.claims.release(uuid)
        await self.store.save(uuid, {"vm_state": VmState.SHELVED_OFFLOADED, "task_state": None,
                                     "power_state": int(PowerState.NOSTATE), "host": None,
                                     "node": None},
                              expected_task_state=TaskState.SHELVING_OFFLOADING)
        if notify:
            self.notifier.info(ctx, "compute.instance.shelve_offload.end", payload)

    async def poll_shelved_instances(self) -> None:
        """Offload this host's servers shelved longer than ``shelved_offload_time``
        (> 0; Nova's ``_poll_shelved_instances``)."""
        if self.shelved_offload_time <= 0:
            return
        deadline = utcnow() - timedelta(seconds=self.shelved_offload_time)
        for uuid in await self.store.read(_shelved_before, self.store.host, deadline):
            try:
                await self.store.save(uuid, {"task_state": TaskState.SHELVING_OFFLOADING},
                                      expected_task_state=None,
                                      expected_vm_state=VmState.SHELVED)
            except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
                continue  # unshelved or deleted meanwhile
            await self.shelve_offload_instance(admin_context(), uuid, clean_shutdown=False)

    # -- unshelve --------------------------------------------------------------------
    async def unshelve_instance(self, ctx: RequestContext, uuid: str, image_id: str | None,
                                node: str | None) -> None:
        async def body(instance: Instance) -> None:
            # Guarded first: a repeated delivery must not power the guest on again.
            await self.store.save(uuid, {}, expected_task_state=TaskState.UNSHELVING)
            if instance["host"] is None:
                expected = TaskState.SPAWNING
                await self._spawn_here(ctx, instance, image_id, node)
            else:  # shelved, not offloaded: the guest is still here, stopped
                expected = TaskState.UNSHELVING
                network_info = await self.network.get_instance_nw_info(ctx, instance)
                await self.driver.power_on(ctx, instance, network_info,
                                           await self.store.block_device_info(uuid))
            info = await self.driver.get_info(instance)
            await self.store.save(uuid, {
                "vm_state": VmState.ACTIVE, "task_state": None, "power_state": int(info.state),
                "system_metadata": image_requests.without_shelved_keys(instance["system_metadata"])},
                expected_task_state=expected)
            if image_id:
                await delete_image_quietly(self.images, ctx, image_id)
        await self.runner.run(ctx, uuid, UNSHELVE, body)

    async def _spawn_here(self, ctx: RequestContext, instance: Instance, image_id: str | None,
                          node: str | None) -> None:
        """Spawn an offloaded instance on this host from its shelved image; on
        failure it is offloaded again (no guest, no binding, no claim)."""
        uuid = instance["uuid"]
        instance.update(await self.store.save(
            uuid, {"host": self.store.host, "node": node or self.store.host,
                   "launched_on": self.store.host, "task_state": TaskState.SPAWNING},
            expected_task_state=TaskState.UNSHELVING, expected_host=None))
        network_info: Any = []
        try:
            image_meta = await self.images.get(ctx.elevated(), image_id or instance["image_ref"])
            network_info = await self.network.setup_instance_network_on_host(
                ctx, instance, self.store.host)
            allocation = await self.claims.of(uuid)
            await self.driver.spawn(ctx, instance, image_meta, [], None, dict(allocation or {}),
                                    network_info, await self.store.block_device_info(uuid))
        except BaseException:
            await self._undo_spawn(ctx, instance, network_info)
            raise

    async def _undo_spawn(self, ctx: RequestContext, instance: Instance,
                          network_info: Any) -> None:
        uuid = instance["uuid"]
        try:
            await self.driver.destroy(ctx, instance, network_info)
        finally:
            await self.network.cleanup_instance_network_on_host(ctx, instance)
            await self.claims.release(uuid)
            await self.store.save(uuid, {"vm_state": VmState.SHELVED_OFFLOADED, "host": None,
                                         "node": None, "power_state": int(PowerState.NOSTATE)})


def _shelved_before(conn: sa.Connection, host: str, deadline: datetime) -> list[str]:
    """This host's idle SHELVED servers shelved before ``deadline``."""
    i = instances
    rows = conn.execute(sa.select(i.c.uuid, i.c.system_metadata).where(
        i.c.host == host, i.c.deleted.is_(False), i.c.vm_state == VmState.SHELVED.value,
        i.c.task_state.is_(None))).all()
    out = []
    for uuid, system_metadata in rows:
        if isinstance(system_metadata, (str, bytes)):
            system_metadata = json_loads(system_metadata)
        shelved_at = (system_metadata or {}).get("shelved_at")
        if shelved_at and datetime.fromisoformat(shelved_at.rstrip("Z")) <= deadline:
            out.append(uuid)
    return out
