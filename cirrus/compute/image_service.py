"""The image service as a compute host sees it: the record it reads
(:class:`ImageMeta`) and what it asks (:class:`ImageService`), implemented
over Glance's HTTP API by ``cirrus.image.client`` and used by the virt
drivers (``cirrus.virt.images``, ``cirrus.virt.imagecache``)."""
from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, AsyncIterator, Protocol, TypedDict


class ImageMeta(TypedDict, total=False):
    """An image record as compute sees it: Glance's core attributes, and the
    rest (``kernel_id``, ``os_command_line``, …) in ``properties`` (Nova's
    ``_translate_from_glance``)."""

    id: str
    name: str | None
    status: str
    disk_format: str | None
    container_format: str | None
    size: int | None
    checksum: str | None
    os_hash_algo: str | None
    os_hash_value: str | None
    properties: dict[str, Any]


class ImageService(Protocol):
    """What a compute host asks of the image service (``cirrus.image.client``).

    Each method raises ImageNotFound for an image it cannot see,
    ImageUnacceptable for one without data, GlanceConnectionFailed for any
    other failure (``cirrus.compute.exception``)."""

    async def show(self, image_id: str) -> ImageMeta:
        """The image's record."""

    def download(self, image_id: str) -> AbstractAsyncContextManager[AsyncIterator[bytes]]:
        """``async with download(id) as chunks``: the image's data, streamed."""

    async def upload(self, image_id: str, chunks: AsyncIterator[bytes], disk_format: str,
                     container_format: str) -> None:
        """Give the queued image ``image_id`` its formats, then its data."""
