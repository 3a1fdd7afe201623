"""Snapshots and backups on this host (Nova's ``snapshot_instance``,
``backup_instance`` → ``_snapshot_instance``, ``_rotate_backups``).

The API created the image (queued) and set IMAGE_SNAPSHOT_PENDING (or
IMAGE_BACKUP); here: IMAGE_SNAPSHOT → IMAGE_PENDING_UPLOAD → IMAGE_UPLOADING
(the driver's ``update_task_state``) → none, the image active. A failed
snapshot deletes the image it did not fill.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from cirrus.compute.action import ActionRunner, ActionSpec
from cirrus.compute.states import TaskState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.exception import NotFound
from cirrus.image.query import ListQuery
from cirrus.virt.driver import ComputeDriver, UpdateTaskState

LOG = logging.getLogger(__name__)
SNAPSHOT = ActionSpec("compute_snapshot_instance", "snapshot")
BACKUP = ActionSpec("compute_backup_instance", "snapshot")


def task_state_saver(store: InstanceStore, uuid: str,
                     renamed: dict[TaskState, TaskState] | None = None) -> UpdateTaskState:
    """The driver's ``update_task_state``: a guarded save of each step;
    ``renamed`` maps the snapshot's states to the caller's (shelve's own)."""
    names = renamed or {}

    async def update(task_state: TaskState, expected_state: TaskState) -> None:
        await store.save(uuid, {"task_state": names.get(task_state, task_state)},
                         expected_task_state=names.get(expected_state, expected_state))
    return update


async def delete_image_quietly(images: Any, ctx: RequestContext, image_id: str) -> None:
    """Delete ``image_id`` unless it is gone already; logged, never raised."""
    try:
        await images.delete(ctx.elevated(), image_id)
    except NotFound:
        pass
    except Exception:  # noqa: BLE001 - a leftover image is not worth failing the action
        LOG.warning("could not delete image %s", image_id, exc_info=True)


@dataclass(frozen=True)
class Snapshots:
    """snapshot_instance and backup_instance of one host."""

    runner: ActionRunner
    store: InstanceStore
    driver: ComputeDriver
    images: Any  # cirrus.image.api.ImageAPI

    async def snapshot_instance(self, ctx: RequestContext, uuid: str, image_id: str) -> None:
        await self.runner.run(ctx, uuid, SNAPSHOT, self._snapshot_body(
            ctx, uuid, image_id, TaskState.IMAGE_SNAPSHOT_PENDING))

    async def backup_instance(self, ctx: RequestContext, uuid: str, image_id: str,
                              backup_type: str, rotation: int) -> None:
        snapshot = self._snapshot_body(ctx, uuid, image_id, TaskState.IMAGE_BACKUP)

        async def body(instance: Instance) -> None:
            await snapshot(instance)
            await self._rotate_backups(ctx, uuid, backup_type, rotation)
        await self.runner.run(ctx, uuid, BACKUP, body)

    def _snapshot_body(self, ctx: RequestContext, uuid: str, image_id: str,
                       expected: TaskState) -> Callable[[Instance], Awaitable[None]]:
        async def body(instance: Instance) -> None:
            try:
                await self.store.save(uuid, {"task_state": TaskState.IMAGE_SNAPSHOT},
                                      expected_task_state=expected)
                await self.driver.snapshot(ctx, instance, image_id,
                                           task_state_saver(self.store, uuid))
                await self.store.save(uuid, {"task_state": None},
                                      expected_task_state=TaskState.IMAGE_UPLOADING)
            except BaseException:
                await self._delete_unfinished(ctx, image_id)
                raise
        return body

    async def _delete_unfinished(self, ctx: RequestContext, image_id: str) -> None:
        """Nova deletes the image of a failed snapshot unless it became active."""
        try:
            image = await self.images.get(ctx.elevated(), image_id)
        except NotFound:
            return
        if image["status"] != "active":
            await delete_image_quietly(self.images, ctx, image_id)

    async def _rotate_backups(self, ctx: RequestContext, uuid: str, backup_type: str,
                              rotation: int) -> None:
        """Delete the oldest backups of ``uuid`` and ``backup_type`` beyond
        ``rotation`` (all of them for 0), newest kept."""
        admin = ctx.elevated()
        images = await self.images.list(admin, ListQuery(
            filters={"visibility": "all"}, sort=[("created_at", "desc")], limit=1 << 30))
        backups = [i for i in images if (i.get("properties") or {}).get("instance_uuid") == uuid
                   and (i.get("properties") or {}).get("image_type") == "backup"
                   and (i.get("properties") or {}).get("backup_type") == backup_type]
        for image in backups[rotation:]:
            LOG.info("rotating out backup %s of %s", image["id"], uuid)
            await delete_image_quietly(self.images, ctx, image["id"])
