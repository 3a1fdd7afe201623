"""The compute API's server actions that touch images: rebuild, createImage,
createBackup, shelve, shelveOffload, unshelve (Nova's ``compute/api.py``
methods of those names). Each checks what Nova checks before it answers,
moves the instance into its task state with one guarded save (the action
recorded with it) and casts the work to the host, or for an offloaded
server's unshelve to the conductor, which schedules it again.

A mixin of :class:`cirrus.compute.api.API`, kept apart so that each verb
group owns its own module.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import exception as exc
from cirrus.compute import image_requests, keypairs, records
from cirrus.compute.admission import BuildAdmission
from cirrus.compute.image_requests import RebuildRequest, UnshelveRequest
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import VmState
from cirrus.compute.transitions import TRANSITIONS
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.exception import NotFound
from cirrus.image.exception import ImageLimitExceeded

MAX_METADATA_ITEMS = 128
Row = dict[str, Any]


class ImageActions:
    """rebuild, snapshot, backup, shelve, shelve_offload, unshelve."""

    # What the compute API (cirrus/compute/api.py) gives these methods.
    db: Database
    images: Any  # cirrus.image.api.ImageAPI
    admission: BuildAdmission
    compute_rpcapi: ComputeAPI
    compute_task_api: ComputeTaskAPI
    get: Callable[[RequestContext, str], Awaitable[Row]]
    _begin_action: Callable[..., Awaitable[Row]]
    _image: Callable[..., Row]  # (conn, ctx, image_id)
    _checked_image: Callable[[Row | Exception | None, Row], Row | None]
    _check_user_data: Callable[[str | None], None]
    _check_zone_and_host: Callable[[sa.Connection, str | None, str | None], None]
    _check_unshelve_target: Callable[[sa.Connection, str | None, str | None, str | None], None]
    _snapshot_volume_backed: Callable[[RequestContext, Row, str, dict[str, str]],
                                      Awaitable[str | None]]
    _check_rebuild_volume_backed: Callable[[Row, str], Awaitable[None]]

    # -- rebuild -----------------------------------------------------------------------
    async def rebuild(self, ctx: RequestContext, uuid: str, req: RebuildRequest) -> dict[str, Any]:
        """Start rebuilding ``uuid`` from ``req.image_ref``; the instance as the
        transition left it. 400 for an image the flavor cannot boot, a missing
        key pair or bad user data; 409 from a state rebuild does not take."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        self.admission.check_open()
        await self._check_rebuild_volume_backed(row, req.image_ref)  # api_volumes.py
        if len(req.changes.get("metadata") or {}) > MAX_METADATA_ITEMS:
            raise exc.MetadataLimitExceeded(allowed=MAX_METADATA_ITEMS)
        self._check_user_data(req.changes.get("user_data"))
        image, key_data = await self.db.read(self._rebuild_lookups, ctx, row, req)
        values = image_requests.rebuild_values(row, image, req, key_data)
        await self._begin_action(ctx, uuid, TRANSITIONS["rebuild"], values, row=row)
        await self.compute_rpcapi.rebuild_instance(
            ctx, row["host"], uuid, image_ref=image["id"], orig_image_ref=row["image_ref"],
            admin_password=req.admin_password, injected_files=[list(f) for f in req.injected_files],
            preserve_ephemeral=req.preserve_ephemeral)
        return row

    def _rebuild_lookups(self, conn: sa.Connection, ctx: RequestContext, row: dict[str, Any],
                         req: RebuildRequest) -> tuple[dict[str, Any], str | None]:
        """The new image (checked against the instance's flavor, as at boot)
        and the public key of the caller's key pair (Nova looks it up for the
        caller, not the owner)."""
        image = self._checked_image(self._image(conn, ctx, req.image_ref), row["flavor"])
        assert image is not None
        key_data = None
        if req.key_name_given and req.key_name is not None:
            try:
                key_data = keypairs.get(conn, ctx.user_id or "", req.key_name)["public_key"]
            except exc.KeyPairMissing:
                raise exc.KeypairNotFound() from None
        return image, key_data

    # -- createImage / createBackup ----------------------------------------------------
    async def snapshot(self, ctx: RequestContext, uuid: str, name: str,
                       metadata: dict[str, str]) -> str:
        """Create the snapshot image (queued) and start uploading the guest's
        disk to it; the image's id. A volume-backed server's volumes are
        snapshotted instead (``api_volumes``)."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        image_id = await self._snapshot_volume_backed(ctx, row, name, dict(metadata))
        if image_id is not None:
            return image_id
        return await self._image_action(ctx, uuid, "snapshot", name, dict(metadata))

    async def backup(self, ctx: RequestContext, uuid: str, name: str, backup_type: str,
                     rotation: int, metadata: dict[str, str]) -> str:
        """A snapshot of type backup, then the oldest backups of the same
        instance and type beyond ``rotation`` deleted; the new image's id."""
        extra = {**metadata, "backup_type": backup_type}
        return await self._image_action(ctx, uuid, "backup", name, extra, backup_type, rotation)

    async def _image_action(self, ctx: RequestContext, uuid: str, kind: str, name: str,
                            extra: dict[str, str], backup_type: str | None = None,
                            rotation: int | None = None) -> str:
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        image_id = await self._create_snapshot_image(ctx, row, name, kind, extra)
        try:
            await self._begin_action(ctx, uuid, TRANSITIONS[kind], row=row)
        except BaseException:
            await self._delete_image_quietly(ctx, image_id)
            raise
        if kind == "backup":
            await self.compute_rpcapi.backup_instance(ctx, row["host"], uuid, image_id,
                                                      backup_type or "", rotation or 0)
        else:
            await self.compute_rpcapi.snapshot_instance(ctx, row["host"], uuid, image_id)
        return image_id

    async def _create_snapshot_image(self, ctx: RequestContext, row: dict[str, Any],
                                     name: str, kind: str, extra: dict[str, str]) -> str:
        """Nova's ``compute_utils.create_image``: a queued image with the
        instance's properties; the instance's project a member when another
        project's caller (an admin) made it."""
        image_type = "backup" if kind == "backup" else "snapshot"
        body = image_requests.snapshot_image_body(ctx.project_id, ctx.user_id, row, name,
                                                  image_type, extra)
        try:
            image = await self.images.create(ctx, body)
        except ImageLimitExceeded as error:  # Nova answers the image service's 413 with 403
            raise exc.ImageQuotaExceeded(reason=error.format_message()) from None
        if body.get("visibility") == "shared":
            await self.images.add_member(ctx, image["id"], row["project_id"])
        return str(image["id"])

    async def _delete_image_quietly(self, ctx: RequestContext, image_id: str) -> None:
        try:
            await self.images.delete(ctx.elevated(), image_id)
        except NotFound:
            pass

    # -- shelve ------------------------------------------------------------------------
    async def shelve(self, ctx: RequestContext, uuid: str, clean_shutdown: bool = True) -> None:
        """Snapshot the server to ``<name>-shelved`` and stop it; offloaded
        at once when ``shelved_offload_time`` is 0."""
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        image_id = await self._create_snapshot_image(
            ctx, row, f"{row['display_name']}-shelved", "shelve", {})
        try:
            await self._begin_action(ctx, uuid, TRANSITIONS["shelve"], row=row)
        except BaseException:
            await self._delete_image_quietly(ctx, image_id)
            raise
        await self.compute_rpcapi.shelve_instance(ctx, row["host"], uuid, image_id,
                                                  clean_shutdown)

    async def shelve_offload(self, ctx: RequestContext, uuid: str,
                             clean_shutdown: bool = True) -> None:
        """Remove a shelved server from its host (admin)."""
        row = await self._begin_action(ctx, uuid, TRANSITIONS["shelve_offload"])
        await self.compute_rpcapi.shelve_offload_instance(ctx, row["host"], uuid, clean_shutdown)

    async def unshelve(self, ctx: RequestContext, uuid: str,
                       req: UnshelveRequest | None = None) -> None:
        """Start a shelved server again: on its host if it is still there,
        else scheduled anew — in the zone asked for (2.77; None: any, 2.91),
        on the host an admin asked for (2.91), which must be in that zone."""
        req = req or UnshelveRequest()
        row = await self.get(ctx, uuid)
        policy.enforce(ctx, "compute:server:action", row)
        self.admission.check_open()
        offloaded = row["vm_state"] == VmState.SHELVED_OFFLOADED.value
        if (req.zone_given or req.host) and not offloaded:
            # Nova: only an offloaded server may change its zone or host
            raise exc.UnshelveInstanceInvalidState(instance_uuid=uuid, state=row["vm_state"])
        if req.host:
            policy.enforce(ctx, "compute:server:unshelve_to_host", row)
        zone = req.zone if req.zone_given else row["availability_zone"]
        await self.db.read(self._check_unshelve_target, zone if req.zone_given else None,
                           req.host, zone)
        await self._begin_action(ctx, uuid, TRANSITIONS["unshelve"], row=row,
                                 on_host=not offloaded)
        image_id = (row["system_metadata"] or {}).get("shelved_image_id")
        if not offloaded:
            await self.compute_rpcapi.unshelve_instance(ctx, row["host"], uuid, image_id, None)
            return
        image = await self._shelved_image(ctx, image_id)
        destination = {"host": req.host, "node": None} if req.host else None
        spec = records.request_spec(ctx, [row], row["flavor"], image, zone, None, None, {}, None,
                                    destination)
        spec.update(project_id=row["project_id"], user_id=row["user_id"])
        await self.compute_task_api.unshelve_instance(ctx, instance_uuid=uuid, image_id=image_id,
                                                      request_spec=spec,
                                                      availability_zone=zone if req.zone_given
                                                      else None)

    async def _delete_shelved_image(self, ctx: RequestContext, row: Row) -> None:
        """A shelved server's snapshot goes with it (Nova's delete does this)."""
        image_id = (row["system_metadata"] or {}).get("shelved_image_id")
        if image_id and row["vm_state"] in (VmState.SHELVED.value,
                                            VmState.SHELVED_OFFLOADED.value):
            await self._delete_image_quietly(ctx, image_id)

    async def _shelved_image(self, ctx: RequestContext, image_id: str | None) -> dict[str, Any] | None:
        if not image_id:
            return None
        try:
            image: dict[str, Any] = await self.images.get(ctx.elevated(), image_id)
        except NotFound:
            return None
        return image
