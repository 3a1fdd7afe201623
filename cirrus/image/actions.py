"""Glance's image actions: ``deactivate`` and ``reactivate``.

A deactivated image keeps its record and data, but only admins may download
the data (``GET …/file`` is 403 for anyone else), and nothing boots or makes a
volume from it (compute and volume take only ``active`` images). Both actions
are idempotent; from any status but ``active`` or ``deactivated`` they are a
400, as Glance's ``InvalidImageStatusTransition``.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.image import exception as exc
from cirrus.image.api import ImageAPI
from cirrus.image.models import images
from cirrus.image.states import DEACTIVATE_FROM, REACTIVATE_FROM, ImageStatus


def save_status(conn: sa.Connection, image_id: str, expected: ImageStatus,
                values: dict[str, Any]) -> bool:
    """``UPDATE images … WHERE status = expected``: whether this call made the change."""
    return conn.execute(images.update().where(
        images.c.id == image_id, images.c.status == expected.value,
        images.c.deleted.is_(False)).values(updated_at=utcnow(), **values)).rowcount == 1


async def transition(db: Database, image_id: str, expected: ImageStatus,
                     values: dict[str, Any]) -> None:
    """A guarded status change; ImageConflict (409) when another request
    changed the image first."""
    if not await db.run(save_status, image_id, expected, values):
        raise exc.ImageConflict(reason=f"Image {image_id} changed status during the request; "
                                       "try again.")


async def _set_status(images_api: ImageAPI, ctx: RequestContext, image_id: str,
                      allowed: tuple[ImageStatus, ...], target: ImageStatus, verb: str) -> None:
    row = await images_api.writable(ctx, image_id)
    status = ImageStatus(row["status"])
    if status not in allowed:
        raise exc.InvalidImage(reason=f"Not allowed to {verb} image in status '{status.value}'")
    if status != target:
        await transition(images_api.db, image_id, status, {"status": target.value})


async def deactivate(images_api: ImageAPI, ctx: RequestContext, image_id: str) -> None:
    """``POST /v2/images/{id}/actions/deactivate``: its owner's members or an admin."""
    await _set_status(images_api, ctx, image_id, DEACTIVATE_FROM, ImageStatus.DEACTIVATED,
                      "deactivate")


async def reactivate(images_api: ImageAPI, ctx: RequestContext, image_id: str) -> None:
    """``POST /v2/images/{id}/actions/reactivate``: back to ``active``."""
    await _set_status(images_api, ctx, image_id, REACTIVATE_FROM, ImageStatus.ACTIVE,
                      "reactivate")
