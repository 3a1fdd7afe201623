"""The file backend: each volume a raw or qcow2 file under
``<state_dir>/volumes``, made and changed with ``qemu-img``.

For the all-in-one: the compute host is this host, so the file is the block
device (``driver_volume_type: local``) and needs no export. Snapshots are
full copies (``qemu-img convert``), so a volume and its snapshots never
depend on each other and either can be deleted first, as Cinder's API allows.
Every file is written under a temporary name and renamed into place: a
process killed mid-copy leaves no half volume behind a volume id.
"""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from cirrus.volume.backends.base import Capabilities, VolumeDriver
from cirrus.volume.cinder import ConnectionInfo, Connector
from cirrus.volume.exception import BackendError

FORMATS = ("raw", "qcow2")


async def qemu_img(*args: str) -> str:
    """Run ``qemu-img``; its stdout, or BackendError with its stderr."""
    proc = await asyncio.create_subprocess_exec(
        "qemu-img", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    if proc.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()[-1:] or ["failed"]
        raise BackendError(reason=f"qemu-img {args[0]}: {reason[0][:300]}")
    return out.decode()


class FileDriver(VolumeDriver):
    """Volumes as files in ``root``, in ``fmt`` (raw or qcow2)."""

    def __init__(self, root: Path, fmt: str = "raw") -> None:
        if fmt not in FORMATS:
            raise ValueError(f"volume_format must be one of {FORMATS}, not {fmt!r}")
        self.root = Path(root)
        self.fmt = fmt
        self.capabilities = Capabilities(volume_backend_name="file",
                                         storage_protocol="local", multiattach=False)

    def path(self, name: str) -> Path:
        return self.root / name

    def source(self, name: str) -> tuple[str, str]:
        """Where a copy reads volume or snapshot ``name`` from, and its
        format (given to qemu-img, never probed from guest-written data)."""
        return self.fmt, str(self.path(name))

    def _tmp(self, name: str) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root / f".{name}.part"

    async def _into_place(self, name: str, *args: str) -> None:
        """``qemu-img args… <tmp>``, then the temporary file renamed to ``name``."""
        tmp = self._tmp(name)
        try:
            await qemu_img(*args, str(tmp))
            os.replace(tmp, self.path(name))
        finally:
            tmp.unlink(missing_ok=True)

    async def _copy(self, name: str, source: tuple[str, str] | Path, size_gb: int) -> None:
        """A copy of ``source`` (a ``(format, location)`` from :meth:`source`,
        or an image file whose format qemu-img finds) grown to ``size_gb``."""
        args = ("-f", *source) if isinstance(source, tuple) else (str(source),)
        await self._into_place(name, "convert", "-O", self.fmt, *args)
        await self.extend_volume(name, size_gb)

    async def create_volume(self, volume_id: str, size_gb: int) -> None:
        # The size as an option: _into_place appends the file name last.
        await self._into_place(volume_id, "create", "-q", "-f", self.fmt,
                               "-o", f"size={size_gb}G")

    async def create_volume_from_image(self, volume_id: str, image_path: str,
                                       size_gb: int) -> None:
        info = await qemu_img("info", "--output=json", image_path)
        virtual = _virtual_size(info)
        if virtual > size_gb << 30:
            raise BackendError(reason=f"image of {virtual} bytes does not fit in {size_gb} GiB")
        await self._copy(volume_id, Path(image_path), size_gb)

    async def create_cloned_volume(self, volume_id: str, source_id: str, size_gb: int) -> None:
        await self._copy(volume_id, self.source(source_id), size_gb)

    async def create_snapshot(self, snapshot_id: str, volume_id: str) -> None:
        await self._into_place(snapshot_id, "convert", "-O", self.fmt,
                               "-f", *self.source(volume_id))

    async def create_volume_from_snapshot(self, volume_id: str, snapshot_id: str,
                                          size_gb: int) -> None:
        await self._copy(volume_id, self.source(snapshot_id), size_gb)

    async def extend_volume(self, volume_id: str, size_gb: int) -> None:
        info = await qemu_img("info", "--output=json", str(self.path(volume_id)))
        if _virtual_size(info) < size_gb << 30:
            await qemu_img("resize", "-q", "-f", self.fmt, str(self.path(volume_id)),
                           f"{size_gb}G")

    async def copy_volume_to_file(self, volume_id: str, dest: str, fmt: str) -> None:
        await qemu_img("convert", "-O", fmt, "-f", *self.source(volume_id), dest)

    async def delete_volume(self, volume_id: str) -> None:
        self.path(volume_id).unlink(missing_ok=True)

    async def delete_snapshot(self, snapshot_id: str) -> None:
        self.path(snapshot_id).unlink(missing_ok=True)

    def initialize_connection(self, volume_id: str, connector: Connector,
                              access_mode: str) -> ConnectionInfo:
        return {"driver_volume_type": "local",
                "data": {"device_path": str(self.path(volume_id)), "format": self.fmt,
                         "access_mode": access_mode}}


def _virtual_size(info_json: str) -> int:
    return int(json.loads(info_json)["virtual-size"])
