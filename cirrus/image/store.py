"""Image data on disk: streamed in, hashed on the way, renamed into place."""
from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import AsyncIterator

from cirrus.image.exception import ImageTooLarge

CHUNK = 1 << 20


class ImageStore:
    """Files under ``root``, one per image id."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, image_id: str) -> Path:
        return self.root / image_id

    async def write(self, image_id: str, chunks: AsyncIterator[bytes], limit: int
                    ) -> tuple[int, str, str]:
        """Stream ``chunks`` to the image's file; (size, md5, sha512).

        Nothing is left behind if the stream fails or exceeds ``limit``.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f".{image_id}.part"
        md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
        fh = await asyncio.to_thread(open, tmp, "wb")
        try:
            async for chunk in chunks:
                if not chunk:
                    continue
                size += len(chunk)
                if size > limit:
                    raise ImageTooLarge(limit=limit)
                md5.update(chunk)
                sha512.update(chunk)
                await asyncio.to_thread(fh.write, chunk)
            await asyncio.to_thread(fh.close)
            os.replace(tmp, self.path(image_id))
        except BaseException:
            fh.close()
            tmp.unlink(missing_ok=True)
            raise
        return size, md5.hexdigest(), sha512.hexdigest()

    async def read(self, image_id: str) -> AsyncIterator[bytes]:
        fh = await asyncio.to_thread(open, self.path(image_id), "rb")
        try:
            while True:
                chunk = await asyncio.to_thread(fh.read, CHUNK)
                if not chunk:
                    return
                yield chunk
        finally:
            fh.close()

    def size(self, image_id: str) -> int:
        """The bytes kept for ``image_id`` (0 for none)."""
        try:
            return self.path(image_id).stat().st_size
        except FileNotFoundError:
            return 0

    def delete(self, image_id: str) -> None:
        self.path(image_id).unlink(missing_ok=True)


def adopt(source: Path, store: ImageStore, image_id: str) -> tuple[int, str, str]:
    """Move a staged file into ``store`` as ``image_id``'s data, hashing it on
    the way (blocking: run it in a thread); (size, md5, sha512)."""
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    with open(source, "rb") as fh:
        while chunk := fh.read(CHUNK):
            size += len(chunk)
            md5.update(chunk)
            sha512.update(chunk)
    store.root.mkdir(parents=True, exist_ok=True)
    os.replace(source, store.path(image_id))
    return size, md5.hexdigest(), sha512.hexdigest()
