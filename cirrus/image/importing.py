"""Interoperable image import (Glance 2.6+): stage the data, then import it.

``PUT /v2/images/{id}/stage`` keeps the data beside the store and marks the
image ``uploading``; ``POST /v2/images/{id}/import`` with the ``glance-direct``
method moves it into the store as a task (``GET /v2/images/{id}/tasks``) and
the image becomes ``active``. The move is a rename on the same disk, so the
task runs within the request (its 202 comes once it is done): no work is left
behind a response.

``glance-direct`` is the only method offered (``GET /v2/info/import``):
``web-download`` and ``glance-download`` fetch from a URL or another cloud,
which cirrus hosts cannot reach, and ``copy-image`` needs several stores, and
cirrus has one (``GET /v2/info/stores`` is a 404, as a single-store Glance's).
A method that is not offered is a 400.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.image import exception as exc
from cirrus.image import schema, tasks
from cirrus.image.actions import save_status, transition
from cirrus.image.api import ImageAPI
from cirrus.image.models import images
from cirrus.image.states import ImageStatus, TaskStatus
from cirrus.image.store import ImageStore, adopt

IMPORT_METHODS = ("glance-direct",)
KNOWN_METHODS = ("glance-direct", "web-download", "copy-image", "glance-download")


def import_info() -> dict[str, Any]:
    """``GET /v2/info/import``."""
    return {"import-methods": {"description": "Import methods available.", "type": "array",
                               "value": list(IMPORT_METHODS)}}


def check_import_body(body: Any) -> str:
    """The method an import body names; 400 as Glance's for anything else."""
    if not isinstance(body, dict) or not isinstance(body.get("method"), dict):
        raise exc.InvalidImage(reason="Import request requires a 'method' field.")
    name = body["method"].get("name")
    if name is None:
        raise exc.InvalidImage(reason="Import request requires a 'name' field.")
    if name not in IMPORT_METHODS:
        raise exc.InvalidImage(reason=f"Unknown import method name '{schema.shown(str(name))}'.")
    for flag in ("all_stores", "all_stores_must_succeed"):
        if not isinstance(body.get(flag, False), bool):
            raise exc.InvalidImage(reason=f"'{flag}' must be boolean value only")
    if body.get("all_stores_must_succeed", True) is False:
        raise exc.InvalidImage(reason="All_stores_must_succeed can only be set with "
                                      "enabled_backends")
    # One store: ``all_stores`` is it; naming stores asks for what is not here.
    if body.get("stores"):
        raise exc.InvalidImage(reason="Multi backend is not supported at this site.")
    return str(name)


class ImageImport:
    """Staging and ``glance-direct`` import, over the image service's records."""

    def __init__(self, images_api: ImageAPI) -> None:
        self.images = images_api
        self.staging: ImageStore = images_api.staging

    @property
    def db(self) -> Database:
        return self.images.db

    async def stage(self, ctx: RequestContext, image_id: str,
                    chunks: AsyncIterator[bytes]) -> None:
        """``PUT …/stage``: a queued image's data, kept until its import;
        409 for any other status, 413 past the cloud's image size limit."""
        row = await self.images.writable(ctx, image_id)
        if row["status"] != ImageStatus.QUEUED:
            raise exc.ImageConflict(reason=f"Image status transition from {row['status']} to "
                                           f"uploading is not allowed")
        await transition(self.db, image_id, ImageStatus.QUEUED,
                         {"status": ImageStatus.UPLOADING.value})
        try:
            await self.staging.write(image_id, chunks, self.images.settings.max_image_bytes)
        except BaseException:
            await self.db.run(save_status, image_id, ImageStatus.UPLOADING,
                              {"status": ImageStatus.QUEUED.value})
            raise

    async def start(self, ctx: RequestContext, image_id: str, body: Any) -> str:
        """``POST …/import``: the import task's id, once the task is over."""
        method = check_import_body(body)
        row = await self.images.writable(ctx, image_id)
        if row["status"] != ImageStatus.UPLOADING or not self.staging.path(image_id).exists():
            raise exc.ImageConflict(reason="Image needs to be staged before 'glance-direct' "
                                           "method can be used")
        for key in ("container_format", "disk_format"):
            if not row[key]:
                raise exc.ImageConflict(reason=f"'{key}' needs to be set before import")
        task = tasks.new_task(ctx, "api_image_import", image_id, {
            "image_id": image_id, "import_req": body, "backend": [None]})

        def begin(conn: sa.Connection) -> None:
            if not save_status(conn, image_id, ImageStatus.UPLOADING,
                               {"status": ImageStatus.IMPORTING.value}):
                raise exc.ImageConflict(reason=f"Image {image_id} is already being imported.")
            tasks.insert(conn, task)
        await self.db.run(begin)
        await self._run(image_id, task["id"], method)
        return str(task["id"])

    async def _run(self, image_id: str, task_id: str, method: str) -> None:
        try:
            size, md5, sha512 = await asyncio.to_thread(
                adopt, self.staging.path(image_id), self.images.store, image_id)
        except OSError as e:
            await self.db.run(self._fail, image_id, task_id, f"{method}: {e.strerror}")
            return
        values = {"status": ImageStatus.ACTIVE.value, "size": size, "virtual_size": size,
                  "checksum": md5, "os_hash_algo": "sha512", "os_hash_value": sha512}

        def succeed(conn: sa.Connection) -> bool:
            if save_status(conn, image_id, ImageStatus.IMPORTING, values):
                tasks.finish(conn, task_id, TaskStatus.SUCCESS, result={"image_id": image_id})
                return True
            tasks.finish(conn, task_id, TaskStatus.FAILURE, "The image was deleted.")
            return False
        if not await self.db.run(succeed):  # deleted during the import: no data left behind
            self.images.store.delete(image_id)

    @staticmethod
    def _fail(conn: sa.Connection, image_id: str, task_id: str, message: str) -> None:
        save_status(conn, image_id, ImageStatus.IMPORTING, {"status": ImageStatus.QUEUED.value})
        tasks.finish(conn, task_id, TaskStatus.FAILURE, message)

    async def usage(self, ctx: RequestContext) -> dict[str, Any]:
        """``GET /v2/info/usage``: the caller's project's image usage, as
        Glance's quota names; cirrus sets no per-project image limits (-1)."""
        project = ctx.project_id

        def count(conn: sa.Connection) -> dict[str, int]:
            mine = sa.and_(images.c.owner == project, images.c.deleted.is_(False))
            total, size = conn.execute(sa.select(sa.func.count(), sa.func.coalesce(
                sa.func.sum(images.c.size), 0)).where(mine)).one()
            uploading = conn.execute(sa.select(sa.func.count()).where(mine, images.c.status.in_(
                (ImageStatus.SAVING.value, ImageStatus.UPLOADING.value,
                 ImageStatus.IMPORTING.value)))).scalar_one()
            staged = conn.execute(sa.select(images.c.id).where(
                mine, images.c.status == ImageStatus.UPLOADING.value)).scalars().all()
            return {"image_size_total": int(size) >> 20, "image_count_total": int(total),
                    "image_count_uploading": int(uploading),
                    "image_stage_total": sum(self.staging.size(i) for i in staged) >> 20}
        used = await self.db.read(count)
        return {"usage": {name: {"limit": -1, "usage": value} for name, value in used.items()}}
