"""User messages (Cinder's ``/messages``, 3.3): why an asynchronous
operation failed, readable by the volume's project."""
from __future__ import annotations

import uuid

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.volume.exception import MessageNotFound
from cirrus.volume.models import volume_messages

Row = dict[str, object]


def record(conn: sa.Connection, project_id: str, resource_type: str, resource_uuid: str,
           event_id: str, user_message: str) -> None:
    conn.execute(volume_messages.insert().values(
        id=str(uuid.uuid4()), project_id=project_id, resource_type=resource_type,
        resource_uuid=resource_uuid, event_id=event_id, message_level="ERROR",
        user_message=user_message[:1024], created_at=utcnow()))


def _scope(ctx: RequestContext) -> sa.ColumnElement[bool]:
    return sa.true() if ctx.is_admin else volume_messages.c.project_id == ctx.project_id


def list_messages(conn: sa.Connection, ctx: RequestContext) -> list[Row]:
    return fetch_all(conn, sa.select(volume_messages).where(_scope(ctx))
                     .order_by(volume_messages.c.created_at.desc()))


def get(conn: sa.Connection, ctx: RequestContext, message_id: str) -> Row:
    row = fetch_one(conn, sa.select(volume_messages).where(
        volume_messages.c.id == message_id[:64], _scope(ctx)))
    if row is None:
        raise MessageNotFound(message_id=message_id[:64])
    return row


def delete(conn: sa.Connection, ctx: RequestContext, message_id: str) -> None:
    get(conn, ctx, message_id)
    conn.execute(volume_messages.delete().where(volume_messages.c.id == message_id))
