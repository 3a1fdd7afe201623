"""Deleting an instance on its host: destroy, deallocate, release, mark deleted."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.models import instance_group_members
from cirrus.compute.queries import info_caches
from cirrus.context import RequestContext
from cirrus.scheduler.claims import release

if TYPE_CHECKING:
    from cirrus.compute.manager import ComputeManager

LOG = logging.getLogger(__name__)
EVENT = "compute_terminate_instance"


async def terminate_instance(m: "ComputeManager", ctx: RequestContext, instance_uuid: str) -> None:
    """Delete ``instance_uuid``; a build still running for it is cancelled first."""
    build = m.builds.get(instance_uuid)
    if build is not None and not build.done():
        build.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.wait({build}, timeout=30)
    async with m.instance_lock(instance_uuid):
        try:
            instance = await m.db.read(inst.get, instance_uuid)
        except exc.InstanceNotFound:
            return
        event_id = await m.db.run(instance_actions.event_start, ctx, instance_uuid, EVENT, m.host)
        m.notifier.info(ctx, "compute.instance.delete.start", {"instance_id": instance_uuid})
        try:
            await _shutdown_instance(m, ctx, instance)
        except Exception as error:  # noqa: BLE001 - recorded as the fault
            LOG.exception("failed to delete %s", instance_uuid)
            await m.db.run(_record_failure, ctx, instance_uuid, error, m.host, event_id)
            return
        await m.db.run(_complete_deletion, ctx, instance_uuid, event_id)
        m.events.clear(instance_uuid)
        m.notifier.info(ctx, "compute.instance.delete.end", {"instance_id": instance_uuid})


async def _shutdown_instance(m: "ComputeManager", ctx: RequestContext, instance: dict) -> None:
    caches = await m.db.read(info_caches, [instance["uuid"]])
    network_info = caches.get(instance["uuid"], [])
    await m.driver.destroy(ctx, instance, network_info, None)
    await m.network_api.deallocate_for_instance(ctx, instance,
                                                requested_networks=instance.get("requested_networks"))


def _complete_deletion(conn: sa.Connection, ctx: RequestContext, uuid: str,
                       event_id: int | None) -> None:
    """The host's resources given back (as Nova's ``_complete_deletion`` updates the
    resource tracker) and the instance deleted, in one transaction: no moment
    where one is done and the other not."""
    release(conn, uuid)
    conn.execute(instance_group_members.delete().where(
        instance_group_members.c.instance_uuid == uuid))
    inst.soft_delete(conn, uuid)
    instance_actions.event_finish(conn, event_id)
    instance_actions.action_finish(conn, ctx, uuid)


def _record_failure(conn: sa.Connection, ctx: RequestContext, uuid: str, error: Exception,
                    host: str, event_id: int | None) -> None:
    inst.set_error(conn, uuid, error, host)
    instance_actions.event_finish(conn, event_id, exc=error)
    instance_actions.action_finish(conn, ctx, uuid, message="Error")
