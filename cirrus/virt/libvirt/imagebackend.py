"""``_create_image``: the base image cached once per host, a qcow2 overlay per guest.

Base images live in ``<instances_path>/_base/<image id>`` (downloaded and
aged out by :mod:`cirrus.virt.imagecache`); each instance gets
``<instances_path>/<uuid>/disk``, a qcow2 overlay of the flavor's root size
backed by the base, plus its own copies of kernel and ramdisk.
"""
from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path

from cirrus.compute import exception as cexc
from cirrus.virt import exception as vexc
from cirrus.compute.image_service import ImageMeta

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


async def check_base(meta: ImageMeta, path: Path) -> None:
    """Refuse downloaded data that is not what its ``disk_format`` says, or a
    qcow2 that would make QEMU read another file (a backing file)."""
    if (meta.get("disk_format") or "raw") != "qcow2":
        return
    try:
        info = json.loads(await qemu_img("info", "--output=json", "-f", "qcow2", str(path)))
    except (ProcessError, ValueError) as e:
        raise cexc.ImageUnacceptable(image_id=meta["id"],
                                     reason=f"not a valid qcow2 image: {e}") from e
    if info.get("backing-filename"):
        raise cexc.ImageUnacceptable(image_id=meta["id"],
                                     reason="images with a backing file are refused")


QCOW2_MAGIC = b"QFI\xfb"
_QCOW2_HEADER = struct.Struct(">4sIQI")  # magic, version, backing file offset and size


def qcow2_backing_file(path: Path) -> str | None:
    """The backing file a qcow2 file names (read from its header), None for
    any other file or one without."""
    try:
        with path.open("rb") as f:
            head = f.read(_QCOW2_HEADER.size)
            if len(head) < _QCOW2_HEADER.size:
                return None
            magic, _, offset, size = _QCOW2_HEADER.unpack(head)
            if magic != QCOW2_MAGIC or not offset or not 0 < size <= 4096:
                return None
            f.seek(offset)
            return f.read(size).decode(errors="replace")
    except OSError:
        return None


def bases_in_use(instances_path: Path, base_dir: Path) -> set[str]:
    """The names of the bases that a disk under ``instances_path`` is backed
    by: every guest on this storage, whichever host's (Nova's
    ``_list_backing_images``)."""
    used: set[str] = set()
    for inst_dir in instances_path.iterdir():
        if not inst_dir.is_dir() or inst_dir == base_dir:
            continue
        for disk in inst_dir.iterdir():
            backing = qcow2_backing_file(disk) if disk.is_file() else None
            if backing and Path(backing).parent == base_dir:
                used.add(Path(backing).name)
    return used


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
