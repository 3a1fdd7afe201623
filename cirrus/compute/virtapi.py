"""What a virt driver may ask of compute: wait for ``network-vif-plugged``, and
reach the image service (records, data, snapshot uploads) over its API.

Seed 003's ``_create_domain_and_network``: prepare the waiters, plug the VIFs
and start the guest paused inside the ``async with``; on leaving it, wait up
to ``vif_plugging_timeout`` for every VIF that is not active yet. A timeout is
VirtualInterfaceCreateException when ``vif_plugging_is_fatal``, else a warning.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any, AsyncIterator

from cirrus.compute.events import InstanceEvents
from cirrus.compute.exception import VirtualInterfaceCreateException
from cirrus.compute import timeline
from cirrus.compute.image_service import ImageService
from cirrus.observe import BootStep

LOG = logging.getLogger(__name__)


class VirtAPI:
    def __init__(self, events: InstanceEvents, timeout: float, fatal: bool,
                 image_service: ImageService | None = None) -> None:
        self.events = events
        self.timeout = timeout
        self.fatal = fatal
        self._image_service = image_service

    @property
    def image_service(self) -> ImageService:
        """The image service's HTTP API (cirrus.image.client): drivers download
        images and upload snapshots through it, never through a shared disk."""
        if self._image_service is None:
            raise RuntimeError("this VirtAPI was made without an image service")
        return self._image_service

    async def upload_image(self, context: Any, image_id: str, path: Path, disk_format: str,
                           container_format: str = "bare") -> None:
        """Upload the file ``path`` as the data of the queued image ``image_id``
        (a snapshot), in ``disk_format``; the image is active on return."""
        await self.image_service.upload(image_id, _chunks(path), disk_format, container_format)

    @contextlib.asynccontextmanager
    async def wait_for_vif_plugged(self, instance: dict[str, Any],
                                   network_info: list[dict[str, Any]]) -> AsyncIterator[None]:
        keys = [f"network-vif-plugged-{vif['id']}" for vif in network_info or []
                if not vif.get("active")]
        if not keys or self.timeout <= 0:
            yield
            with timeline.current_step(BootStep.VIF_PLUGGED):
                pass  # nothing to wait for: the timeline shows a step of no length
            return

        def on_missing(missing: list[str]) -> None:
            if self.fatal:
                raise VirtualInterfaceCreateException(
                    f"Timeout waiting for {', '.join(missing)} for instance {instance['uuid']}")
            LOG.warning("timeout waiting for %s for %s; continuing (vif_plugging_is_fatal "
                        "is off)", missing, instance["uuid"])
        async with self.events.wait_for_instance_event(instance["uuid"], keys,
                                                       deadline=self.timeout, error_cb=on_missing,
                                                       timed=timeline.current_step(
                                                           BootStep.VIF_PLUGGED)):
            yield


CHUNK = 1 << 20


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    """The file's bytes, a chunk at a time, read off the event loop."""
    with path.open("rb") as f:
        while chunk := await asyncio.to_thread(f.read, CHUNK):
            yield chunk
