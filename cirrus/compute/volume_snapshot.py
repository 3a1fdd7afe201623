"""The snapshot of a volume-backed server (Nova's ``compute/api.py``
``snapshot_volume_backed``): no disk of the host to upload; each volume is
snapshotted in block storage (``create_snapshot_force``, the server may be
running) and the image, of size 0, records the mappings to boot from them
(``block_device_mapping``, ``bdm_v2``, ``root_device_name`` properties)."""
from __future__ import annotations

import json
from typing import Any, AsyncIterator

from cirrus.compute import image_requests
from cirrus.compute.bdms import Bdm
from cirrus.compute.block_device import ROOT_DEVICE_NAME
from cirrus.context import RequestContext
from cirrus.volume.cinder import VolumeAPI

# The fields of a mapping an image keeps (Nova's ``get_image_mapping``: no ids
# of this server's records, the snapshot in place of the volume).
IMAGE_MAPPING_KEYS = ("boot_index", "device_name", "volume_size", "delete_on_termination",
                      "guest_format", "disk_bus", "device_type", "volume_type", "tag")


async def _no_data() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator with nothing in it


def image_mapping(bdm: Bdm, snapshot_id: str) -> dict[str, Any]:
    """The mapping a snapshot image records for the volume of ``bdm``."""
    mapping = {key: bdm.get(key) for key in IMAGE_MAPPING_KEYS}
    mapping.update(source_type="snapshot", destination_type="volume", snapshot_id=snapshot_id,
                   no_device=None, image_id=None, volume_id=None)
    return mapping


async def snapshot_volume_backed(ctx: RequestContext, row: dict[str, Any], bdms: list[Bdm],
                                 name: str, extra: dict[str, str], volume_api: VolumeAPI,
                                 images: Any) -> str:
    """Snapshot each volume of ``row`` and make the image naming them; its id."""
    mappings = []
    for bdm in bdms:
        if bdm["destination_type"] != "volume" or not bdm.get("volume_id"):
            continue
        snapshot = await volume_api.create_snapshot_force(
            ctx, bdm["volume_id"], f"snapshot for {name}", "")
        mappings.append(image_mapping(bdm, snapshot["id"]))
    body = image_requests.snapshot_image_body(ctx.project_id, ctx.user_id, row, name,
                                              "snapshot", extra)
    body.update({"block_device_mapping": json.dumps(mappings), "bdm_v2": "True",
                 "root_device_name": ROOT_DEVICE_NAME})
    image = await images.create(ctx, body)
    if body.get("visibility") == "shared":
        await images.add_member(ctx, image["id"], row["project_id"])
    # Nova's force_activate: an image of size 0, active with no data.
    await images.upload_snapshot(ctx, image["id"], _no_data(), "raw", "bare")
    return str(image["id"])
