"""The compute API's deletes: ``delete`` (soft with ``reclaim_instance_interval``)
and ``forceDelete`` (Nova's ``compute/api.py`` ``delete``, ``soft_delete``,
``force_delete``, ``_delete`` and ``_local_delete``).

A mixin of :class:`cirrus.compute.api.API`, kept apart so that each verb
group owns its own module. A server on a live host is deleted there (a cast);
one on no host, or on a host that is down, is deleted here, as Nova's local
delete does: its ports and claim released, its record soft-deleted.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus.claims import release
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.hosts import compute_is_up
from cirrus.compute.move_api import MoveAPI
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import TaskState, VmState
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.db.rows import read_here

Row = dict[str, Any]


class DeleteActions:
    """delete, force_delete."""

    # What the compute API (cirrus/compute/api.py) gives these methods.
    settings: Settings
    db: Database
    network: Any  # cirrus.network.api.API
    compute_rpcapi: ComputeAPI
    moves: MoveAPI
    _get_for_change: Callable[[RequestContext, str, str], Awaitable[Row]]
    _delete_shelved_image: Callable[[RequestContext, Row], Awaitable[None]]  # api_images.py
    _local_cleanup_bdm_volumes: Callable[[RequestContext, str], Awaitable[None]]  # api_volumes

    async def delete(self, ctx: RequestContext, uuid: str) -> None:
        """Delete a server in any state, including one that is still building;
        with ``reclaim_instance_interval``, soft-delete one that ran."""
        row = await self._get_for_change(ctx, uuid, "compute:server:delete")
        if row["vm_state"] == VmState.RESIZED.value:
            await self.moves.confirm_on_delete(ctx, row)  # Nova's _confirm_resize_on_deleting
        if self._soft_deletable(row):
            await self._soft_delete(ctx, row)
            return
        await self._delete(ctx, row)

    async def force_delete(self, ctx: RequestContext, uuid: str) -> None:
        """Delete now, soft delete or not (Nova's ``force_delete``)."""
        await self._delete(ctx, await self._get_for_change(ctx, uuid, "compute:server:delete"))

    def _soft_deletable(self, row: Row) -> bool:
        return (self.settings.reclaim_instance_interval > 0 and bool(row["host"])
                and row["launched_at"] is not None
                and row["vm_state"] != VmState.SOFT_DELETED.value)

    async def _soft_delete(self, ctx: RequestContext, row: Row) -> None:
        """Nova's ``soft_delete``: on the host (powered off there), or here if
        the host is down."""
        local = not await self._host_is_up(row["host"])
        await self.db.run(_start_soft_delete, ctx, row["uuid"], local)
        if not local:
            await self.compute_rpcapi.soft_delete_instance(ctx, row["host"], row["uuid"])

    async def _delete(self, ctx: RequestContext, row: Row) -> None:
        uuid = row["uuid"]
        host_is_up = await self.db.run(_start_delete, ctx, uuid, row["host"],
                                       self.settings.service_down_time)
        await self._delete_shelved_image(ctx, row)
        if host_is_up:
            await self.compute_rpcapi.terminate_instance(ctx, row["host"], uuid)
            return
        # Not on a host yet (the conductor's build will find it gone), or its
        # host is down: delete here, as Nova's local delete does.
        await self.network.deallocate_for_instance(
            ctx, row, requested_networks=row.get("requested_networks"))
        await self._local_cleanup_bdm_volumes(ctx, uuid)  # api_volumes.py
        await self.db.run(release, uuid)
        await self.db.run(_local_delete, ctx, uuid)

    async def _host_is_up(self, host: str) -> bool:
        return await read_here(self.db, compute_is_up, host, self.settings.service_down_time)


def _start_delete(conn: sa.Connection, ctx: RequestContext, uuid: str, host: str | None,
                  down_time: float) -> bool:
    """DELETING, the delete action recorded; whether the server's host is up
    (read here rather than in a unit of its own: one hand-off less a delete)."""
    inst.save(conn, uuid, {"task_state": TaskState.DELETING})
    instance_actions.action_start(conn, ctx, uuid, "delete")
    if not host:
        return False
    return compute_is_up(conn, host, down_time)


def _local_delete(conn: sa.Connection, ctx: RequestContext, uuid: str) -> None:
    inst.leave_groups(conn, uuid)
    inst.soft_delete(conn, uuid)
    instance_actions.action_finish(conn, ctx, uuid)


def _start_soft_delete(conn: sa.Connection, ctx: RequestContext, uuid: str, local: bool) -> None:
    """SOFT_DELETING for the host to finish (or SOFT_DELETED at once, its host
    down), the delete action recorded; ``deleted_at`` starts the reclaim clock."""
    now = utcnow()
    values: dict[str, Any] = {"task_state": TaskState.SOFT_DELETING, "deleted_at": now}
    if local:
        values.update(vm_state=VmState.SOFT_DELETED, task_state=None, terminated_at=now)
    inst.save(conn, uuid, values)
    instance_actions.action_start(conn, ctx, uuid, "delete")
    if local:
        instance_actions.action_finish(conn, ctx, uuid)
