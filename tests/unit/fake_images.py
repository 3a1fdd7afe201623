"""A fake image service (``cirrus.compute.image_service.ImageService``) with real data in
memory and faults as data, for the image cache's tests."""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
from dataclasses import dataclass, field
from typing import AsyncIterator

from cirrus.compute import exception as cexc
from cirrus.compute.image_service import ImageMeta

IMAGE = "0e7a3c1b-5d0f-4c1e-9a9b-3f1d2e4c5a6b"
OTHER = "7c1d9e2a-8b3f-4a5c-b6d7-e8f9a0b1c2d3"


def meta_of(image_id: str, data: bytes, **overrides: object) -> ImageMeta:
    """The record the image service keeps for ``data`` (sha512, md5, size)."""
    meta = ImageMeta(id=image_id, status="active", disk_format="raw", container_format="bare",
                     size=len(data), checksum=hashlib.md5(data).hexdigest(),
                     os_hash_algo="sha512", os_hash_value=hashlib.sha512(data).hexdigest(),
                     properties={})
    meta.update(overrides)  # type: ignore[typeddict-item]
    return meta


@dataclass
class FakeImages:
    """Images by id, streamed in ``chunk`` byte pieces.

    ``break_after``: chunks sent before the stream fails; ``gate``: when set,
    every download waits for it after its first chunk (so tests can hold
    several downloads open at once); ``downloads`` counts them."""

    data: dict[str, bytes] = field(default_factory=dict)
    chunk: int = 4
    break_after: int | None = None
    gate: asyncio.Event | None = None
    downloads: int = 0
    uploads: dict[str, tuple[bytes, str, str]] = field(default_factory=dict)

    def add(self, image_id: str, data: bytes, **overrides: object) -> ImageMeta:
        self.data[image_id] = data
        return meta_of(image_id, data, **overrides)

    async def show(self, image_id: str) -> ImageMeta:
        if image_id not in self.data:
            raise cexc.ImageNotFound()
        return meta_of(image_id, self.data[image_id])

    @contextlib.asynccontextmanager
    async def download(self, image_id: str) -> AsyncIterator[AsyncIterator[bytes]]:
        if image_id not in self.data:
            raise cexc.ImageNotFound()
        self.downloads += 1
        yield self._chunks(self.data[image_id])

    async def _chunks(self, data: bytes) -> AsyncIterator[bytes]:
        for n, start in enumerate(range(0, len(data), self.chunk)):
            if self.break_after is not None and n >= self.break_after:
                raise cexc.GlanceConnectionFailed(server="glance", reason="connection reset")
            yield data[start:start + self.chunk]
            if n == 0 and self.gate is not None:
                await self.gate.wait()

    async def upload(self, image_id: str, chunks: AsyncIterator[bytes], disk_format: str,
                     container_format: str) -> None:
        self.uploads[image_id] = (b"".join([c async for c in chunks]), disk_format,
                                  container_format)
