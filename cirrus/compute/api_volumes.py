"""The compute API's volume paths (Nova's ``compute/api.py``: ``_validate_bdm``
and ``_check_attach_and_reserve_volume`` at create, ``attach_volume``,
``detach_volume``, the attachment update of 2.85).

Volumes are reserved here, before anything is cast: ``attachment_create``
for each volume a create names (once the instance records exist) and for a
volume being attached; the host then exports and plugs them. Every failure
of a reservation gives back what was reserved before it.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import sqlalchemy as sa

from cirrus.compute import bdms as bdm_db
from cirrus.compute import block_device
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import offloaded_volumes
from cirrus.compute.bdms import Bdm
from cirrus.compute.boot_volumes import cleanup_volumes
from cirrus.compute.block_device import BdmRequest
from cirrus.compute.records import CreateRequest
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.states import VmState
from cirrus.compute.transitions import IMAGING, TRANSITIONS, Transition
from cirrus.compute.volume_snapshot import snapshot_volume_backed
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.exception import CirrusException, Conflict, Invalid, NotFound
from cirrus.volume.cinder import Volume, VolumeAPI

LOG = logging.getLogger(__name__)
Row = dict[str, Any]
# The compute drivers that can plug an encrypted volume (an encryptor on the
# host, a key manager): none yet, so such a volume is refused here, not on a host.
ENCRYPTED_VOLUME_DRIVERS: frozenset[str] = frozenset()


def _on_host(row: Row) -> bool:
    """Whether the server's volumes are plugged on a host (not shelved-offloaded)."""
    return bool(row["vm_state"] != VmState.SHELVED_OFFLOADED.value)


def _invalid_volume(error: CirrusException) -> exc.InvalidVolume:
    return exc.InvalidVolume(reason=error.format_message())


class VolumeActions:
    """Mixin: needs the API's db, settings, volume_api and compute_rpcapi, and
    its instance reads and action start (stubs below)."""

    db: Database
    settings: Settings
    volume_api: VolumeAPI
    compute_rpcapi: ComputeAPI
    images: Any  # cirrus.image.api.ImageAPI

    async def get(self, ctx: RequestContext, uuid: str) -> Row:
        raise NotImplementedError

    async def _get_for_change(self, ctx: RequestContext, uuid: str, rule: str) -> Row:
        raise NotImplementedError

    async def _begin_action(self, ctx: RequestContext, uuid: str, t: Transition,
                            values: dict[str, Any] | None = None, *,
                            row: Row | None = None, on_host: bool = True) -> Row:
        raise NotImplementedError

    # The create's (cirrus/compute/api_lookups.py, api_create.py).
    _image: Callable[..., Row]  # (conn, ctx, image_id)
    _destroy_records: Callable[[sa.Connection, list[str]], None]

    # -- create ---------------------------------------------------------------------
    async def _validate_bdm(self, ctx: RequestContext, req: CreateRequest,
                            flavor: dict[str, Any], image: dict[str, Any] | None,
                            az: str | None) -> dict[str, Any] | None:
        """Check the requested mappings (400s) and fill in the sizes volumes
        and snapshots have; the image the instance records keep (None for a
        volume-backed server: its root is the volume)."""
        bdms = req.block_device_mapping
        if not bdms:
            return image
        root_given = any(b.get("boot_index") == 0 for b in bdms)
        block_device.check_boot_sequence(bdms, None if root_given else req.image_href)
        block_device.check_bdm_rules(bdms, flavor, req.max_count)
        for bdm in bdms:
            await self._validate_one_bdm(ctx, bdm, image, az)
        return None if block_device.is_volume_backed(bdms) else image

    async def _validate_one_bdm(self, ctx: RequestContext, bdm: BdmRequest,
                                image: dict[str, Any] | None, az: str | None) -> None:
        source, uuid = bdm["source_type"], bdm.get("uuid") or ""
        if source == "image" and bdm["destination_type"] == "volume":
            source_image = image if image and image["id"] == uuid else \
                await self._bdm_image(ctx, uuid)
            block_device.check_image_size(bdm, source_image)
        elif source == "volume":
            volume = await self._bdm_volume(ctx, uuid)
            self._check_attachable(volume, az)
            if bdm.get("boot_index") == 0 and not volume["bootable"]:
                raise exc.InvalidBDMVolumeNotBootable(id=uuid)
            bdm["volume_size"] = volume["size"]
        elif source == "snapshot":
            try:
                snapshot = await self.volume_api.get_snapshot(ctx, uuid)
            except (NotFound, Invalid):
                raise exc.InvalidBDMSnapshot(id=uuid) from None
            bdm["volume_size"] = bdm.get("volume_size") or snapshot["size"]
        if source != "volume" and bdm["destination_type"] == "volume" and \
                bdm.get("volume_type") is not None and not bdm["volume_type"]:
            raise exc.InvalidBDM(message="volume_type must not be empty")

    async def _bdm_image(self, ctx: RequestContext, image_id: str) -> dict[str, Any]:
        try:
            image: dict[str, Any] = await self.db.read(self._image, ctx, image_id)
        except CirrusException:
            raise exc.InvalidBDMImage(id=image_id) from None
        if image.get("status") != "active":
            raise exc.InvalidBDMImage(id=image_id)
        return image

    async def _bdm_volume(self, ctx: RequestContext, volume_id: str) -> Volume:
        try:
            return await self.volume_api.get(ctx, volume_id)
        except (NotFound, Invalid):
            raise exc.InvalidBDMVolume(id=volume_id) from None

    def _check_attachable(self, volume: Volume, az: str | None) -> None:
        """Available (or multiattach) and, without ``cross_az_attach``, in the
        instance's zone (Nova's ``check_availability_zone``)."""
        if volume["status"] not in ("available", "in-use", "reserved") or \
                (volume["status"] != "available" and not volume["multiattach"]):
            raise exc.InvalidVolume(reason=f"volume {volume['id']} status must be 'available' "
                                           f"(it is '{volume['status']}')")
        if volume.get("encrypted") and \
                self.settings.compute_driver not in ENCRYPTED_VOLUME_DRIVERS:
            raise exc.InvalidVolume(reason=f"volume {volume['id']} is encrypted, and the "
                                           f"{self.settings.compute_driver} compute driver "
                                           f"cannot attach encrypted volumes")
        if not self.settings.cross_az_attach and az and volume["availability_zone"] != az:
            raise exc.InvalidVolume(reason=f"Instance and volume not in same "
                                           f"availability_zone ({az} vs "
                                           f"{volume['availability_zone']})")

    async def _reserve_volumes(self, ctx: RequestContext, req: CreateRequest,
                               rows: list[dict[str, Any]]) -> None:
        """``attachment_create`` for each volume the new instances map; on a
        failure, those made are deleted and the records destroyed. (A request
        naming no volume reads nothing: a create of many servers stays fast.)"""
        if not any(b["source_type"] == "volume" for b in req.block_device_mapping):
            return
        made: list[str] = []
        try:
            for row in rows:
                for bdm in await self.db.read(bdm_db.volume_bdms, row["uuid"]):
                    if bdm["source_type"] != "volume":
                        continue  # made by the build from its source
                    attachment = await self.volume_api.attachment_create(
                        ctx, bdm["volume_id"], row["uuid"])
                    made.append(attachment["id"])
                    await self.db.run(bdm_db.update, bdm["id"],
                                      {"attachment_id": attachment["id"]})
        except CirrusException as error:
            await self._release_attachments(ctx, made)
            await self.db.run(self._destroy_records, [r["uuid"] for r in rows])
            if isinstance(error, (Invalid, Conflict, NotFound)):
                raise _invalid_volume(error) from error
            raise

    async def _release_attachments(self, ctx: RequestContext,
                                   attachment_ids: list[str]) -> None:
        for attachment_id in attachment_ids:
            try:
                await self.volume_api.attachment_delete(ctx, attachment_id)
            except Exception:  # noqa: BLE001 - logged; the volume sweep finds it
                LOG.exception("could not release attachment %s", attachment_id)

    # -- os-volume_attachments --------------------------------------------------------
    async def volume_attachments(self, ctx: RequestContext, uuid: str) -> list[Bdm]:
        """The server's volume mappings (404 for another project's server)."""
        row = await self.get(ctx, uuid)
        return await self.db.read(bdm_db.volume_bdms, row["uuid"])

    async def volume_attachment(self, ctx: RequestContext, uuid: str,
                                volume_id: str) -> Bdm:
        row = await self.get(ctx, uuid)
        return await self.db.read(bdm_db.by_volume, row["uuid"], volume_id)

    async def attach_volume(self, ctx: RequestContext, uuid: str, volume_id: str,
                            device: str | None = None, tag: str | None = None,
                            delete_on_termination: bool = False) -> Bdm:
        """Reserve the volume for the server and cast the attach to its host;
        the new mapping (its device name chosen here when not given)."""
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        try:
            volume = await self.volume_api.get(ctx, volume_id)
        except NotFound:
            raise exc.VolumeNotFound(volume_id=volume_id) from None
        existing = await self.db.read(bdm_db.volume_bdms, uuid)
        if any(b["volume_id"] == volume_id for b in existing):
            raise exc.InvalidVolume(reason=f"volume {volume_id} is already attached to "
                                           f"server {uuid}")
        self._check_attachable(volume, row["availability_zone"])
        taken = await self.db.read(bdm_db.device_names, uuid)
        if device in taken:
            raise exc.DevicePathInUse(path=device)
        device = device or block_device.next_device_name(taken)
        await self._begin_action(ctx, uuid, TRANSITIONS["attach_volume"], row=row,
                                 on_host=_on_host(row))
        try:
            attachment = await self.volume_api.attachment_create(ctx, volume_id, uuid)
        except (Invalid, Conflict) as error:
            raise _invalid_volume(error) from error
        bdm = await self.db.run(bdm_db.create, uuid, {
            "source_type": "volume", "destination_type": "volume", "volume_id": volume_id,
            "attachment_id": attachment["id"], "device_name": device, "boot_index": None,
            "volume_size": volume["size"], "delete_on_termination": delete_on_termination,
            "device_type": "disk", "tag": tag})
        if not _on_host(row):
            await offloaded_volumes.attach(ctx, self.db, self.volume_api, bdm)
            return bdm
        await self.compute_rpcapi.attach_volume(ctx, row["host"], uuid, volume_id)
        return bdm

    async def detach_volume(self, ctx: RequestContext, uuid: str,
                            volume_id: str) -> None:
        """Cast the detach to the server's host; 400 for its root volume."""
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        bdm = await self.db.read(bdm_db.by_volume, uuid, volume_id)
        if bdm["boot_index"] == 0:
            raise exc.InvalidVolume(reason="Cannot detach a root device volume")
        await self._begin_action(ctx, uuid, TRANSITIONS["detach_volume"], row=row,
                                 on_host=_on_host(row))
        if not _on_host(row):
            await offloaded_volumes.detach(ctx, self.db, self.volume_api, bdm)
            return
        await self.compute_rpcapi.detach_volume(ctx, row["host"], uuid, volume_id)

    async def update_volume_attachment(self, ctx: RequestContext, uuid: str,
                                       volume_id: str,
                                       delete_on_termination: bool | None) -> Bdm:
        """2.85: change ``delete_on_termination`` of an attached volume."""
        await self._get_for_change(ctx, uuid, "compute:server:action")
        bdm = await self.db.read(bdm_db.by_volume, uuid, volume_id)
        if delete_on_termination is not None:
            await self.db.run(bdm_db.update, bdm["id"],
                              {"delete_on_termination": delete_on_termination})
            bdm["delete_on_termination"] = delete_on_termination
        return bdm

    # -- createImage of a volume-backed server ------------------------------------------
    async def _snapshot_volume_backed(self, ctx: RequestContext, row: Row, name: str,
                                      extra: dict[str, str]) -> str | None:
        """The image of a volume-backed server's snapshot (Nova's
        ``snapshot_volume_backed``); None when its root is a local disk."""
        bdms = await self.db.read(inst.bdms, row["uuid"])
        if not block_device.is_volume_backed(bdms):
            return None
        if row["vm_state"] not in [s.value for s in IMAGING] or row["task_state"] is not None:
            raise exc.InstanceInvalidState(method="snapshot", instance_uuid=row["uuid"],
                                           attr="vm_state", state=row["vm_state"])
        return await snapshot_volume_backed(ctx, row, bdms, name, extra, self.volume_api,
                                            self.images)

    async def _local_cleanup_bdm_volumes(self, ctx: RequestContext, uuid: str) -> None:
        """A delete done here (no host, or a host that is down) releases the
        server's volumes as the host would (Nova's ``_local_cleanup_bdm_volumes``)."""
        await cleanup_volumes(ctx, self.db, self.volume_api, uuid)

    async def _check_rebuild_volume_backed(self, row: Row, image_ref: str) -> None:
        """Nova before 2.93: a volume-backed server is rebuilt only with the
        image it has (its root volume is not reimaged)."""
        bdms = await self.db.read(inst.bdms, row["uuid"])
        if block_device.is_volume_backed(bdms) and image_ref != (row["image_ref"] or None):
            raise exc.ImageUnacceptable(image_id=image_ref, reason="Unable to rebuild with a "
                                        "different image for a volume-backed server.")

    async def swap_volume(self, ctx: RequestContext, uuid: str, old_volume_id: str,
                          new_volume_id: str) -> None:
        """Replace an attached volume by an available one (Nova's ``swap_volume``,
        an admin's call): the new one reserved here, the copy done on the host."""
        row = await self._get_for_change(ctx, uuid, "compute:server:action")
        await self.db.read(bdm_db.by_volume, uuid, old_volume_id)  # 404 if not attached
        try:
            new = await self.volume_api.get(ctx, new_volume_id)
        except NotFound:
            raise exc.VolumeNotFound(volume_id=new_volume_id) from None
        if new["status"] != "available":
            raise exc.InvalidVolume(reason=f"volume {new_volume_id} status must be "
                                           f"'available' (it is '{new['status']}')")
        await self._begin_action(ctx, uuid, TRANSITIONS["swap_volume"], row=row)
        try:
            attachment = await self.volume_api.attachment_create(ctx, new_volume_id, uuid)
        except (Invalid, Conflict) as error:
            raise _invalid_volume(error) from error
        await self.compute_rpcapi.swap_volume(ctx, row["host"], uuid, old_volume_id,
                                              new_volume_id, attachment["id"])
