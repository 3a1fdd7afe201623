"""A volume-backed server boots by its boot volume's image metadata (the
tiny image's kernel and ramdisk): Nova's ``get_image_metadata_from_volume``."""
from __future__ import annotations

from typing import Any

import pytest

from cirrus.compute.boot_volumes import BootVolumes

FROM_IMAGE = {"image_id": "img-1", "image_name": "cirrus-tiny", "disk_format": "qcow2",
              "container_format": "bare", "size": "123", "min_disk": "0", "min_ram": "0",
              "checksum": "abc", "kernel_id": "k-1", "ramdisk_id": "r-1",
              "os_command_line": "console=ttyS0 quiet"}


class Volumes:
    """Just ``get``: each volume's image metadata."""

    def __init__(self, metadata: dict[str, dict[str, str]]) -> None:
        self.metadata = metadata

    async def get(self, ctx: Any, volume_id: str) -> dict[str, Any]:
        return {"id": volume_id, "volume_image_metadata": self.metadata[volume_id]}


def _bdm(volume_id: str | None, boot_index: int | None, dest: str = "volume") -> dict[str, Any]:
    return {"volume_id": volume_id, "boot_index": boot_index, "destination_type": dest}


@pytest.mark.parametrize("bdms, expected", [
    ([_bdm("v-root", 0), _bdm("v-data", None)],
     {"disk_format": "qcow2", "container_format": "bare",
      "properties": {"kernel_id": "k-1", "ramdisk_id": "r-1",
                     "os_command_line": "console=ttyS0 quiet"}}),
    ([_bdm("v-blank", 0)], {"properties": {}}),  # a volume made from nothing
    ([_bdm(None, 0, "local"), _bdm("v-data", 1)], {"properties": {}}),  # no boot volume
    ([], {"properties": {}}),
], ids=["from-image", "blank", "local-root", "none"])
async def test_the_boot_volume_gives_the_image(bdms: list[dict[str, Any]],
                                               expected: dict[str, Any]) -> None:
    volumes = BootVolumes(store=None, driver=None, retries=0, interval=0,  # type: ignore[arg-type]
                          volume_api=Volumes({"v-root": FROM_IMAGE, "v-blank": {},  # type: ignore
                                              "v-data": {}}))
    assert await volumes.image_meta(None, bdms) == expected  # type: ignore[arg-type]
