"""Glance's tasks: the record of each image import, and ``/v2/tasks``.

An interoperable import (``POST /v2/images/{id}/import``) runs as a task whose
``input`` is the import request; ``GET /v2/images/{id}/tasks`` shows them.
``POST /v2/tasks`` (Glance's deprecated, admin-only tasks API) takes only the
``import`` type, whose ``import_from`` is a URL to fetch: cirrus hosts reach
no outside network, so it is refused at create (400), as current Glance
refuses a URI it may not fetch.
"""
from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from typing import Any, NoReturn

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import isotime, utcnow
from cirrus.db.engine import Database, fetch_all, fetch_one
from cirrus.image import exception as exc
from cirrus.image import schema
from cirrus.image.models import image_tasks
from cirrus.image.states import TaskStatus

TASK_TYPES = ("import", "api_image_import", "location_import")
TIME_TO_LIVE = dt.timedelta(hours=48)  # Glance's task_time_to_live


def new_task(ctx: RequestContext, task_type: str, image_id: str | None,
             task_input: dict[str, Any]) -> dict[str, Any]:
    """The values of a new ``processing`` task started by ``ctx``'s request."""
    return {"id": str(uuidlib.uuid4()), "type": task_type, "status": TaskStatus.PROCESSING.value,
            "owner": ctx.project_id, "image_id": image_id, "request_id": ctx.request_id,
            "user_id": ctx.user_id, "input": task_input, "result": None, "message": "",
            "created_at": utcnow()}


def insert(conn: sa.Connection, values: dict[str, Any]) -> None:
    conn.execute(image_tasks.insert().values(**values))


def finish(conn: sa.Connection, task_id: str, status: TaskStatus, message: str = "",
           result: dict[str, Any] | None = None) -> None:
    """End a processing task; it expires (may be purged) after TIME_TO_LIVE."""
    now = utcnow()
    conn.execute(image_tasks.update().where(
        image_tasks.c.id == task_id,
        image_tasks.c.status == TaskStatus.PROCESSING.value).values(
        status=status.value, message=message, result=result, updated_at=now,
        expires_at=now + TIME_TO_LIVE))


def task_view(row: dict[str, Any], full: bool = True) -> dict[str, Any]:
    """A task as Glance shows it; a listing leaves out input, result and message."""
    out: dict[str, Any] = {
        "id": row["id"], "type": row["type"], "status": row["status"], "owner": row["owner"],
        "expires_at": isotime(row["expires_at"]), "created_at": isotime(row["created_at"]),
        "updated_at": isotime(row["updated_at"] or row["created_at"]),
        "image_id": row["image_id"], "request_id": row["request_id"], "user_id": row["user_id"],
        "self": f"/v2/tasks/{row['id']}", "schema": "/v2/schemas/task",
    }
    if full:
        out.update(input=row["input"], result=row["result"], message=row["message"])
    return out


class TaskAPI:
    """Reading tasks, and refusing the legacy ones that would fetch a URL."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def for_image(self, image_id: str) -> list[dict[str, Any]]:
        """An image's tasks, newest first (the caller has checked it may see the image)."""
        return await self.db.read(lambda conn: fetch_all(conn, sa.select(image_tasks).where(
            image_tasks.c.image_id == image_id).order_by(image_tasks.c.created_at.desc())))

    async def list(self, ctx: RequestContext) -> list[dict[str, Any]]:
        """Every task (the route is admin-only, as Glance's ``tasks_api_access``)."""
        return await self.db.read(lambda conn: fetch_all(conn, sa.select(image_tasks).order_by(
            image_tasks.c.created_at.desc())))

    async def get(self, ctx: RequestContext, task_id: str) -> dict[str, Any]:
        row = None
        if schema.is_image_id(task_id):
            row = await self.db.read(lambda conn: fetch_one(conn, sa.select(image_tasks).where(
                image_tasks.c.id == task_id)))
        if row is None:
            raise exc.TaskNotFound(task_id=schema.shown(task_id))
        return row

    async def create(self, ctx: RequestContext, body: Any) -> NoReturn:
        """``POST /v2/tasks``: the body checked as Glance does, then refused —
        an ``import`` task's data is at a URL, which no cirrus host may fetch."""
        if not isinstance(body, dict):
            raise exc.InvalidImage(reason="The request body must be a JSON object.")
        for key in ("type", "input"):
            if key not in body:
                raise exc.InvalidImage(reason=f"Task '{key}' is required")
        if body["type"] not in TASK_TYPES:
            raise exc.InvalidImage(reason=f"Invalid type value: {schema.shown(str(body['type']))}")
        if not isinstance(body["input"], dict):
            raise exc.InvalidImage(reason="Invalid value for 'input': expected an object.")
        if body["type"] != "import":
            raise exc.InvalidImage(reason=f"Task type {body['type']} is internal to image import.")
        source = body["input"].get("import_from")
        raise exc.InvalidImage(reason=f"Cannot import from {schema.shown(str(source))}: this "
                                      "cloud does not fetch image data from URLs. Upload the "
                                      "data (PUT /v2/images/{id}/file) or stage and import it "
                                      "(glance-direct).")
