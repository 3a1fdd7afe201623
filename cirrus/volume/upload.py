"""``os-volume_upload_image``: a volume's data as a new image (Cinder's
``copy_volume_to_image``). The volume is ``uploading`` meanwhile and goes
back to the state it was in; the image is made in the caller's project and
is ``active`` once the data is in, or deleted (with a user message on the
volume) if the copy fails."""
from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.exception import CirrusException
from cirrus.volume import db, messages
from cirrus.volume import exception as exc
from cirrus.volume.service import Storage
from cirrus.volume.states import VolumeStatus as V

Row = dict[str, Any]
FORMATS = ("raw", "qcow2")
CHUNK = 1 << 20


async def _chunks(path: Path) -> AsyncIterator[bytes]:
    with open(path, "rb") as fh:
        while chunk := await asyncio.to_thread(fh.read, CHUNK):
            yield chunk


class Uploads:
    def __init__(self, storage: Storage) -> None:
        self.s = storage

    async def upload_to_image(self, ctx: RequestContext, volume_id: str, image: Row,
                              force: bool) -> tuple[Row, Row]:
        """(volume, image record): the image is ``active`` on return."""
        if image["disk_format"] not in FORMATS:
            raise exc.InvalidInput(reason=f"Disk format {image['disk_format']} is not one of "
                                          f"{', '.join(FORMATS)}.")

        def begin(conn: sa.Connection) -> Row:
            volume = db.get_volume(conn, ctx, volume_id)
            db.check_volume(volume, "upload_to_image_force" if force else "upload_to_image")
            db.save_volume(conn, volume_id, {"status": V.UPLOADING}, [volume["status"]],
                           "upload to an image")
            return volume
        volume = await self.s.db.run(begin)
        try:
            record = await self.s.images.create(ctx, {**image, **{
                k: v for k, v in (volume["image_metadata"] or {}).items()
                if k in ("os_distro", "hw_disk_bus")}})
            await self._copy(ctx, volume_id, record, image["disk_format"])
        except CirrusException as err:
            await self.s.db.run(self._failed, volume, err.format_message())
            raise
        finally:
            await self.s.db.run(db.save_volume, volume_id, {"status": volume["status"]},
                                [V.UPLOADING], "finish an upload")
        return volume, record

    async def _copy(self, ctx: RequestContext, volume_id: str, record: Row, fmt: str) -> None:
        with tempfile.TemporaryDirectory(dir=self.s.settings.state_dir) as tmp:
            dest = Path(tmp) / "image"
            try:
                await self.s.driver.copy_volume_to_file(volume_id, str(dest), fmt)
                await self.s.images.upload(ctx, record["id"], _chunks(dest))
            except CirrusException:
                await self.s.images.delete(ctx, record["id"])
                raise

    @staticmethod
    def _failed(conn: sa.Connection, volume: Row, why: str) -> None:
        messages.record(conn, volume["project_id"], "VOLUME", volume["id"], "VOLUME_000003",
                        f"upload to image: {why}")
