"""``_create_image``: the base image cached once per host, a qcow2 overlay per guest.

Base images live in ``<instances_path>/_base/<image id>``; each instance gets
``<instances_path>/<uuid>/disk``, a qcow2 overlay of the flavor's root size
backed by the base, plus its own copies of kernel and ramdisk.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

from cirrus.compute import exception as cexc
from cirrus.utils import KeyedLocks
from cirrus.virt import exception as vexc

# qemu-img's name for a Glance disk_format we can back an overlay with.
FORMATS = {"qcow2": "qcow2", "raw": "raw", "ami": "raw", "aki": "raw", "ari": "raw"}


async def qemu_img(*args: str) -> str:
    """Run ``qemu-img``; raises ProcessError with its stderr."""
    proc = await asyncio.create_subprocess_exec(
        "qemu-img", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise ProcessError(err.decode(errors="replace").strip())
    return out.decode()


class ProcessError(RuntimeError):
    pass


class ImageCache:
    """Base images on this host, fetched once each."""

    def __init__(self, instances_path: Path) -> None:
        self.base_dir = instances_path / "_base"
        self._locks = KeyedLocks()  # per image

    async def fetch(self, image: dict[str, Any], source: Path) -> Path:
        """The cached base of ``image`` (copied from ``source`` on first use).

        Raises ImageUnacceptable when the data is not what the image says it is.
        """
        image_id: str = image["id"]
        target = self.base_dir / image_id
        async with self._locks(image_id):
            if target.exists():
                return target
            if not source.exists():
                raise cexc.ImageUnacceptable(image_id=image["id"], reason="the image has no data")
            self.base_dir.mkdir(parents=True, exist_ok=True)
            tmp = target.with_suffix(".part")
            await asyncio.to_thread(shutil.copyfile, source, tmp)
            declared = image.get("disk_format") or "raw"
            if declared == "qcow2":
                try:
                    info = json.loads(await qemu_img("info", "--output=json", "-f", "qcow2",
                                                     str(tmp)))
                except (ProcessError, ValueError) as e:
                    tmp.unlink(missing_ok=True)
                    raise cexc.ImageUnacceptable(
                        image_id=image["id"], reason=f"not a valid qcow2 image: {e}") from e
                if info.get("backing-filename"):
                    tmp.unlink(missing_ok=True)
                    raise cexc.ImageUnacceptable(image_id=image["id"],
                                                 reason="images with a backing file are refused")
            os.replace(tmp, target)
            return target


async def create_root_disk(base: Path, base_format: str, disk: Path, root_gb: int,
                           instance_uuid: str) -> None:
    """A qcow2 overlay of ``base`` of ``root_gb`` GiB (the image's size when 0)."""
    args = ["create", "-q", "-f", "qcow2", "-b", str(base), "-F", base_format, str(disk)]
    if root_gb > 0:
        args.append(f"{root_gb}G")
    try:
        await qemu_img(*args)
    except ProcessError as e:
        raise vexc.InstanceSpawnError(instance_uuid=instance_uuid,
                                      reason=f"qemu-img create failed: {e}") from e
