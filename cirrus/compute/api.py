"""The compute API (seed 000: ``compute/api.py``), used by the HTTP handlers.

Runs in the API process. The create lives in :mod:`cirrus.compute.api_create`
(its lookups in :mod:`cirrus.compute.api_lookups`, its records in
:mod:`cirrus.compute.provision`); the other verb groups in the ``api_*``
mixins; here the reads, updates, metadata, interfaces and the state-guarded
actions that are cast to the host.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import exception as exc
from cirrus.compute.admission import BuildAdmission
from cirrus.compute.catalog_cache import CatalogCache, uncached
from cirrus.compute.api_admin import AdminActions
from cirrus.compute.api_create import CreateActions
from cirrus.compute.api_delete import DeleteActions
from cirrus.compute.api_images import ImageActions
from cirrus.compute.api_assisted_snapshots import AssistedSnapshotActions
from cirrus.compute.api_lookups import MAX_METADATA_ITEMS, parse_availability_zone
from cirrus.compute.api_volumes import VolumeActions
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions, records
from cirrus.compute.move_api import MoveAPI
from cirrus.compute.records import CreateRequest
from cirrus.compute.scope import require_project
from cirrus.compute.state_api import StateActions
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.transitions import TRANSITIONS, Transition
from cirrus.compute.volume_service import make_volume_api
from cirrus.compute.states import VmState
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.db.rows import read_here
from cirrus.notifications import Notifier
from cirrus.network.exception import PortLimitExceeded
from cirrus.rpc import Transport
from cirrus.volume.cinder import VolumeAPI

__all__ = ["API", "CreateRequest", "make_compute_api", "parse_availability_zone"]


class API(VolumeActions, AssistedSnapshotActions, StateActions, ImageActions, AdminActions,
          DeleteActions, CreateActions):
    """The compute API used by the HTTP handlers (the create in
    :class:`~cirrus.compute.api_create.CreateActions`, the guest-state actions in
    :class:`~cirrus.compute.state_api.StateActions`, the image ones in
    :class:`~cirrus.compute.api_images.ImageActions`, the consoles and admin
    actions in :class:`~cirrus.compute.api_admin.AdminActions`, the deletes in
    :class:`~cirrus.compute.api_delete.DeleteActions`, the volumes in
    :class:`~cirrus.compute.api_volumes.VolumeActions`, assisted volume snapshots in
    :class:`~cirrus.compute.api_assisted_snapshots.AssistedSnapshotActions`)."""

    def __init__(self, settings: Settings, db: Database, transport: Transport,
                 images: Any, network: Any, volume_api: VolumeAPI | None = None,
                 catalog: Callable[[], int | None] = uncached) -> None:
        """``catalog``: the catalog generation this process's token checks read
        (:class:`~cirrus.compute.catalog_cache.CatalogCache`); by default none,
        and every create reads its flavor and image."""
        self.settings = settings
        self.db = db
        self.transport = transport
        self.images = images
        self.network = network
        self.catalog = CatalogCache(catalog)
        self.volume_api = volume_api or make_volume_api(settings, db)
        self.compute_task_api = ComputeTaskAPI(transport)
        self.compute_rpcapi = ComputeAPI(transport)
        self.notifier = Notifier("compute-api")  # the actions done here (lock, unlock)
        self.admission = BuildAdmission(db, settings.build_backlog_limit,
                                        settings.build_backlog_wait)
        self.moves = MoveAPI(settings, db, self.get, self.compute_task_api, self.compute_rpcapi,
                             self.admission)

    # -- read ----------------------------------------------------------------------
    async def lookup(self, ctx: RequestContext, uuid: str, *,
                     read_deleted: bool = False) -> dict[str, Any]:
        """The instance, looked up within the caller's project (an admin's:
        anywhere), whatever the caller's roles: :class:`InstanceNotFound` for
        another project's, as Nova's project-scoped read. Whether the caller
        may then act on it is a 403 that comes after this 404, for every
        route on a server (``cirrus/api/compute/routes.py``)."""
        # A point read: on SQLite right on the loop (no DB thread hand-off).
        row = await read_here(self.db, partial(inst.get, read_deleted=read_deleted), uuid)
        if not ctx.is_admin and row["project_id"] != require_project(ctx):
            raise exc.InstanceNotFound(instance_id=uuid)
        return row

    async def get(self, ctx: RequestContext, uuid: str, *,
                  read_deleted: bool = False) -> dict[str, Any]:
        """The instance if the caller may see it; 404 otherwise (deleted ones
        too with ``read_deleted``)."""
        row = await self.lookup(ctx, uuid, read_deleted=read_deleted)
        if not policy.check(ctx, "compute:server:get", row):
            raise exc.InstanceNotFound(instance_id=uuid)
        return row

    async def _get_for_change(self, ctx: RequestContext, uuid: str, rule: str) -> dict[str, Any]:
        """The instance, if the caller may ``rule`` it and it is not locked
        (Nova's check_instance_lock: admins act on locked servers too). Every
        path that changes a server goes through here."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, rule, row)
        if row["locked"] and not ctx.is_admin:
            raise exc.InstanceIsLocked(instance_uuid=uuid)
        return row

    # -- update ------------------------------------------------------------------
    async def update_instance(self, ctx: RequestContext, uuid: str,
                              updates: dict[str, Any]) -> None:
        """Change the server's name, description, access IPs, hostname or
        disk config (``PUT /servers/{id}``); in any state but deleted."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        if "auto_disk_config" in updates:
            records.check_disk_config(row, updates["auto_disk_config"])
        if updates:
            await self.db.run(inst.save, uuid, updates)

    # -- metadata ----------------------------------------------------------------
    async def update_metadata(self, ctx: RequestContext, uuid: str, metadata: dict[str, str],
                              *, replace: bool = False, delete_key: str | None = None
                              ) -> dict[str, str]:
        """Merge (or replace) the server's metadata, or delete one key; the result."""
        await self._get_for_change(ctx, uuid, "compute:server:action")

        def apply(conn: sa.Connection) -> dict[str, str]:
            current = dict(inst.get(conn, uuid)["metadata"] or {})
            if delete_key is not None:
                if delete_key not in current:
                    raise exc.MetadataNotFound(key=delete_key)
                current.pop(delete_key)
            else:
                current = dict(metadata) if replace else {**current, **metadata}
            if len(current) > MAX_METADATA_ITEMS:
                raise exc.MetadataLimitExceeded(allowed=MAX_METADATA_ITEMS)
            inst.save(conn, uuid, {"metadata": current})
            return current
        return await self.db.run(apply)

    # -- interfaces ------------------------------------------------------------------
    async def attach_interface(self, ctx: RequestContext, uuid: str,
                               request: dict[str, Any]) -> str:
        """Attach a port (given, or new on a network) to an ACTIVE or STOPPED server."""
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        if not row["host"] or row["task_state"] is not None or \
                row["vm_state"] not in (VmState.ACTIVE.value, VmState.STOPPED.value):
            raise exc.InstanceInvalidState(method="attach_interface", instance_uuid=uuid,
                                           attr="vm_state", state=row["vm_state"])
        if not await self.network.validate_networks(ctx, [request], 1):
            raise PortLimitExceeded()
        return await self.compute_rpcapi.attach_interface(ctx, row["host"], uuid, request)

    async def detach_interface(self, ctx: RequestContext, uuid: str, port_id: str) -> None:
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        if not row["host"] or row["task_state"] is not None:
            raise exc.InstanceInvalidState(method="detach_interface", instance_uuid=uuid,
                                           attr="task_state", state=row["task_state"])
        await self.compute_rpcapi.detach_interface(ctx, row["host"], uuid, port_id)

    # -- actions (state-guarded, then cast to the host) -----------------------------
    async def _begin_action(self, ctx: RequestContext, uuid: str, t: Transition,
                            values: dict[str, Any] | None = None, *,
                            row: dict[str, Any] | None = None,
                            on_host: bool = True) -> dict[str, Any]:
        """Move the instance into ``t``'s task state if it is in an accepted
        state, else 409 saying which state it is in (Nova's check_instance_state);
        the action is recorded in the same transaction. ``values``: saved with
        the transition; ``row``: the instance as the caller read it already;
        ``on_host``: the action needs a host (all but unshelving an offloaded
        server)."""
        if row is None:
            row = await self._get_for_change(ctx, uuid, "compute:server:action")
        elif row["locked"] and not ctx.is_admin:
            raise exc.InstanceIsLocked(instance_uuid=uuid)
        if on_host and not row["host"]:
            raise exc.InstanceInvalidState(method=t.method, instance_uuid=uuid,
                                           attr="vm_state", state=row["vm_state"])
        await self.db.run(_begin, ctx, uuid, t, values)
        return row

    async def start(self, ctx: RequestContext, uuid: str) -> None:
        row = await self._begin_action(ctx, uuid, TRANSITIONS["start"])
        await self.compute_rpcapi.start_instance(ctx, row["host"], uuid)

    async def stop(self, ctx: RequestContext, uuid: str, clean_shutdown: bool = True) -> None:
        row = await self._begin_action(ctx, uuid, TRANSITIONS["stop"])
        await self.compute_rpcapi.stop_instance(ctx, row["host"], uuid, clean_shutdown)

    async def reboot(self, ctx: RequestContext, uuid: str, reboot_type: str) -> None:
        t = TRANSITIONS["reboot_hard" if reboot_type == "HARD" else "reboot_soft"]
        row = await self._begin_action(ctx, uuid, t)
        await self.compute_rpcapi.reboot_instance(ctx, row["host"], uuid, reboot_type)


def _begin(conn: sa.Connection, ctx: RequestContext, uuid: str, t: Transition,
           extra: dict[str, Any] | None = None) -> None:
    values = {} if t.task_state is None else {"task_state": t.task_state}
    values.update(extra or {})
    try:
        inst.save(conn, uuid, values, expected_vm_state=t.vm_states,
                  expected_task_state=t.task_states)
    except exc.UnexpectedTaskStateError:
        current = inst.get(conn, uuid)
        if current["vm_state"] not in [v.value for v in t.vm_states]:
            attr, state = "vm_state", current["vm_state"]
        else:
            attr, state = "task_state", current["task_state"]
        raise exc.InstanceInvalidState(method=t.method, instance_uuid=uuid, attr=attr,
                                       state=state) from None
    instance_actions.action_start(conn, ctx, uuid, t.action)


def make_compute_api(settings: Settings, db: Database, transport: Transport,
                     volume_api: VolumeAPI | None = None,
                     catalog: Callable[[], int | None] | None = None) -> API:
    """The compute API for ``app.state.compute_api`` (``volume_api``: block
    storage as the composition root gives it; None: the configured one;
    ``catalog``: the identity service's catalog generation, None: no lookups kept)."""
    from cirrus.image.api import make_image_api
    from cirrus.network.api import make_network_api

    return API(settings, db, transport, make_image_api(settings, db, transport),
               make_network_api(settings, db, None, None), volume_api, catalog or uncached)
