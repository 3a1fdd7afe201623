"""Image data from the image service to this host (Nova's ``virt/images.py`` ``fetch``).

The data is streamed to a temporary file beside its target, hashed on the
way, checked against what the image service recorded (``os_hash_algo`` /
``os_hash_value``, else the md5 ``checksum``, and the ``size``) and only then
renamed into place: a reader sees the whole, verified file or nothing, and a
failed, cancelled or corrupt download leaves nothing behind.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

from cirrus.compute import exception as cexc
from cirrus.compute.image_service import ImageMeta, ImageService

PARTIAL_SUFFIX = ".part"


# Looks at the verified temporary file before it is renamed into place
# (e.g. refuses a qcow2 with a backing file); raises to refuse it.
Check = Callable[[ImageMeta, Path], Awaitable[None]]


@dataclass
class Verifier:
    """The digest the image service recorded for the data, and the running one."""

    algorithm: str
    expected: str
    size: int | None
    hasher: Any = None
    received: int = 0

    @classmethod
    def of(cls, meta: ImageMeta) -> "Verifier | None":
        """The strongest check the record allows; None when it records no hash
        (an image registered without data checks, which Glance allows)."""
        size = meta.get("size")
        if meta.get("os_hash_algo") and meta.get("os_hash_value"):
            algorithm, expected = str(meta["os_hash_algo"]), str(meta["os_hash_value"])
        elif meta.get("checksum"):
            algorithm, expected = "md5", str(meta["checksum"])
        else:
            return None
        try:
            hasher = hashlib.new(algorithm, usedforsecurity=False)
        except ValueError as e:
            raise cexc.ImageUnacceptable(image_id=meta["id"],
                                         reason=f"unknown hash algorithm {algorithm}") from e
        return cls(algorithm, expected.lower(), size, hasher)

    def update(self, chunk: bytes) -> None:
        self.hasher.update(chunk)
        self.received += len(chunk)

    def verify(self, image_id: str) -> None:
        """Raises ImageChecksumMismatch unless the data is what was recorded."""
        if self.size is not None and self.received != self.size:
            raise cexc.ImageChecksumMismatch(
                image_href=image_id, algorithm="size", actual=f"{self.received} bytes",
                expected=f"{self.size} bytes")
        actual = self.hasher.hexdigest()
        if actual != self.expected:
            raise cexc.ImageChecksumMismatch(image_href=image_id, algorithm=self.algorithm,
                                             actual=f"{actual[:12]}…",
                                             expected=f"{self.expected[:12]}…")


def partial_path(target: Path) -> Path:
    """A fresh temporary name beside ``target`` (one per attempt: a crashed
    process's leftover never collides with a new download)."""
    return target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}{PARTIAL_SUFFIX}")


async def fetch_to_raw(images: ImageService, meta: ImageMeta, target: Path,
                       check: Check | None = None) -> None:
    """Download ``meta``'s data to ``target``: streamed, verified, renamed.

    Raises ImageChecksumMismatch (corrupt data, abort), ImageNotFound (gone),
    ImageDownloadFailed (the service or the stream failed, reschedule), or
    what ``check`` raises; on any failure (and on cancellation) neither
    ``target`` nor a temporary file is left.
    """
    image_id = meta["id"]
    verifier = Verifier.of(meta)
    tmp = partial_path(target)
    try:
        await _download(images, image_id, tmp, verifier)
        if verifier is not None:
            verifier.verify(image_id)
        if check is not None:
            await check(meta, tmp)
        await asyncio.to_thread(os.replace, tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


async def active_image(images: ImageService, image_id: str) -> ImageMeta:
    """The record of an image a host may boot: ImageNotFound, ImageNotActive,
    or ImageDownloadFailed when the service cannot say."""
    with _mapped(image_id):
        meta = await images.show(image_id)
    if meta.get("status") != "active":
        raise cexc.ImageNotActive(image_id=image_id)
    return meta


async def _download(images: ImageService, image_id: str, tmp: Path,
                    verifier: Verifier | None) -> None:
    """The data into ``tmp``, flushed to disk."""
    with _mapped(image_id):
        fh = await asyncio.to_thread(open, tmp, "wb")
        try:
            async with images.download(image_id) as chunks:
                async for chunk in chunks:
                    if verifier is not None:
                        verifier.update(chunk)
                    await asyncio.to_thread(fh.write, chunk)
            await asyncio.to_thread(_sync, fh)
        finally:
            fh.close()


@contextlib.contextmanager
def _mapped(image_id: str) -> Iterator[None]:
    """A service that failed to answer, or a host that failed to write (a full
    disk), as a failed download; ImageNotFound and the rest as they are."""
    try:
        yield
    except (cexc.GlanceConnectionFailed, OSError) as e:
        raise cexc.ImageDownloadFailed(image_href=image_id, reason=str(e)) from e


def _sync(fh: Any) -> None:
    fh.flush()
    os.fsync(fh.fileno())
