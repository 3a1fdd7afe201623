"""The volumes of a build (Nova's ``_prep_block_device`` and
``nova/virt/block_device.py``: DriverVolumeBlockDevice, DriverImageBlockDevice,
DriverSnapshotBlockDevice, DriverBlankBlockDevice) and of a delete or a failed
build (``_cleanup_volumes``).

Each mapping to a volume is made ready in turn: a volume is created from the
image, the snapshot or nothing when the mapping has none yet, and waited for
(``block_device_allocate_retries`` checks); the API reserved an attachment
for a volume the request named, the build makes one for a volume it created.
``attachment_update`` with this host's connector gives the connection info
the driver plugs; ``attachment_complete`` after the spawn marks the volumes
in use.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from cirrus.compute import bdms as bdm_db
from cirrus.compute import exception as exc
from cirrus.compute.bdms import Bdm
from cirrus.compute.store import Instance, InstanceStore
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.exception import NotFound
from cirrus.virt.driver import ComputeDriver
from cirrus.volume.cinder import Connector, Volume, VolumeAPI

LOG = logging.getLogger(__name__)
# What a volume made for a build is named after (Nova's naming).
VOLUME_NAMES = {"image": "{uuid}-image-vol", "snapshot": "{uuid}-snap-vol",
                "blank": "{uuid}-blank-vol"}
# The image's own attributes in a volume's image metadata; the rest are its
# properties (Nova's ``utils.get_image_metadata_from_volume``).
IMAGE_CORE_KEYS = ("checksum", "container_format", "disk_format", "min_disk", "min_ram",
                   "size", "image_id", "image_name")


@dataclass(frozen=True)
class BootVolumes:
    """The volumes of one host's builds and deletes, handed what they use."""

    store: InstanceStore
    driver: ComputeDriver
    volume_api: VolumeAPI
    retries: int  # block_device_allocate_retries
    interval: float  # block_device_allocate_retries_interval

    async def image_meta(self, ctx: RequestContext, bdms: list[Bdm]) -> dict[str, Any]:
        """A volume-backed server's image, as its boot volume recorded it
        (``volume_image_metadata``: a kernel and ramdisk to boot by, its
        command line); no properties when the volume came from no image."""
        boot = [b for b in bdms if b.get("boot_index") == 0
                and b["destination_type"] == "volume" and b.get("volume_id")]
        if not boot:
            return {"properties": {}}
        meta = (await self.volume_api.get(ctx, boot[0]["volume_id"]))["volume_image_metadata"]
        out: dict[str, Any] = {k: meta[k] for k in ("disk_format", "container_format")
                               if k in meta}
        out["properties"] = {k: v for k, v in meta.items() if k not in IMAGE_CORE_KEYS}
        return out

    async def prep(self, ctx: RequestContext, instance: Instance,
                   bdms: list[Bdm]) -> list[Bdm]:
        """The mappings with each volume ready and its ``connection_info``
        (saved on the mapping too, for the later reboots and the delete)."""
        if not any(b["destination_type"] == "volume" for b in bdms):
            return bdms
        connector: Connector = self.driver.get_volume_connector(instance)  # type: ignore
        out = []
        for bdm in bdms:
            if bdm["destination_type"] == "volume":
                bdm = await self._prep_volume(ctx, instance, bdm, connector)
            out.append(bdm)
        return out

    async def _prep_volume(self, ctx: RequestContext, instance: Instance, bdm: Bdm,
                           connector: Connector) -> Bdm:
        values: Bdm = {}
        if not bdm.get("volume_id"):
            volume = await self._create_volume(ctx, instance, bdm)
            values["volume_id"] = volume["id"]
        if not bdm.get("attachment_id"):
            attachment = await self.volume_api.attachment_create(
                ctx, values.get("volume_id") or bdm["volume_id"], instance["uuid"])
            values["attachment_id"] = attachment["id"]
        if values:  # saved before the export: a failure after it still releases them
            await self.store.run(bdm_db.update, bdm["id"], values)
            bdm = {**bdm, **values}
        attachment = await self.volume_api.attachment_update(
            ctx, bdm["attachment_id"], connector, mountpoint=bdm["device_name"])
        info = attachment["connection_info"]
        await self.store.run(bdm_db.update, bdm["id"], {"connection_info": info})
        return {**bdm, "connection_info": info}

    async def _create_volume(self, ctx: RequestContext, instance: Instance,
                             bdm: Bdm) -> Volume:
        source = bdm["source_type"]
        volume = await self.volume_api.create(
            ctx, bdm["volume_size"], VOLUME_NAMES[source].format(uuid=instance["uuid"]), "",
            snapshot_id=bdm.get("snapshot_id"),
            image_id=bdm.get("image_id") if source == "image" else None,
            volume_type=bdm.get("volume_type"),
            availability_zone=instance.get("availability_zone"))
        # The id first: a volume that never becomes available is still the
        # instance's, deleted with it (delete_on_termination) or kept.
        await self.store.run(bdm_db.update, bdm["id"], {"volume_id": volume["id"]})
        return await self.await_volume_created(ctx, volume["id"])

    async def await_volume_created(self, ctx: RequestContext, volume_id: str) -> Volume:
        """The volume once ``available``; VolumeNotCreated if it went to
        ``error`` or is still creating after the last check."""
        attempts = max(1, self.retries + 1)
        volume = await self.volume_api.get(ctx, volume_id)
        for attempt in range(1, attempts + 1):
            if volume["status"] == "available":
                return volume
            if volume["status"] != "creating" or attempt == attempts:
                break
            await asyncio.sleep(self.interval)
            volume = await self.volume_api.get(ctx, volume_id)
        raise exc.VolumeNotCreated(volume_id=volume_id, seconds=int(self.interval * attempts),
                                   attempts=attempts, volume_status=volume["status"])

    async def complete(self, ctx: RequestContext, bdms: list[Bdm]) -> None:
        """After the spawn: each volume in use (``attachment_complete``)."""
        for bdm in bdms:
            if bdm["destination_type"] == "volume" and bdm.get("attachment_id"):
                await self.volume_api.attachment_complete(ctx, bdm["attachment_id"])

    async def cleanup_volumes(self, ctx: RequestContext, uuid: str,
                              bdms: list[bdm_db.Bdm] | None = None) -> None:
        """See :func:`cleanup_volumes`."""
        await cleanup_volumes(ctx, self.store.db, self.volume_api, uuid, bdms)


async def cleanup_volumes(ctx: RequestContext, db: Database, volume_api: VolumeAPI,
                          uuid: str, bdms: list[bdm_db.Bdm] | None = None) -> None:
    """Nova's ``_cleanup_volumes`` (on the host) and ``_local_cleanup_bdm_volumes``
    (in the API, for a server on no host or a host that is down): each volume
    detached from the instance (its attachment deleted) and those with
    ``delete_on_termination`` deleted. Errors are logged and the rest goes
    on: a delete must finish. ``bdms``: the instance's volume mappings
    (:func:`bdm_db.volume_bdms`) if the caller read them already."""
    if bdms is None:
        bdms = await db.read(bdm_db.volume_bdms, uuid)
    for bdm in bdms:
        try:
            if bdm.get("attachment_id"):
                await _ignore_missing(volume_api.attachment_delete(ctx, bdm["attachment_id"]))
                await db.run(bdm_db.update, bdm["id"],
                             {"attachment_id": None, "connection_info": None})
            if bdm.get("volume_id") and bdm["delete_on_termination"]:
                await _ignore_missing(volume_api.delete(ctx, bdm["volume_id"]))
        except Exception:  # noqa: BLE001 - logged; the volume service's sweep finds it
            LOG.exception("failed to release volume %s of %s", bdm.get("volume_id"), uuid)


async def _ignore_missing(call: Any) -> None:
    """Await ``call``; what is gone already needs no release."""
    try:
        await call
    except NotFound:
        pass
