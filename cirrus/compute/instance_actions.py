"""Instance actions and their events: how every boot explains itself.

An action (``create``, ``stop``…) is recorded when the API accepts a request;
each pipeline step adds an event with its timing, host, result and details
(the scheduler's filter decisions go in ``details``).
"""
from __future__ import annotations

import json
import traceback as tb
from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instance_actions, instance_actions_events
from cirrus.context import RequestContext
from cirrus.db.base import utcnow

SUCCESS, ERROR = "Success", "Error"


def action_start(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                 action: str) -> int:
    """Record ``action`` on the instance for the request in ``ctx``."""
    now = utcnow()
    return conn.execute(instance_actions.insert().values(
        instance_uuid=instance_uuid, action=action, request_id=ctx.request_id,
        user_id=ctx.user_id, project_id=ctx.project_id, start_time=now,
        created_at=now)).inserted_primary_key[0]


def _action_id(conn: sa.Connection, instance_uuid: str, request_id: str) -> int | None:
    return conn.execute(sa.select(instance_actions.c.id).where(
        instance_actions.c.instance_uuid == instance_uuid,
        instance_actions.c.request_id == request_id).order_by(
        instance_actions.c.id.desc()).limit(1)).scalar()


def event_start(conn: sa.Connection, ctx: RequestContext, instance_uuid: str, event: str,
                host: str | None = None) -> int | None:
    """Open ``event`` under the action of this request; its id, or None."""
    action_id = _action_id(conn, instance_uuid, ctx.request_id)
    if action_id is None:
        return None
    now = utcnow()
    return conn.execute(instance_actions_events.insert().values(
        action_id=action_id, event=event, start_time=now, host=host,
        created_at=now)).inserted_primary_key[0]


def event_finish(conn: sa.Connection, event_id: int | None, *, exc: BaseException | None = None,
                 details: Any = None) -> None:
    """Close an event: Success, or Error with the exception's traceback."""
    if event_id is None:
        return
    values: dict[str, Any] = {"finish_time": utcnow(), "result": SUCCESS if exc is None else ERROR,
                              "updated_at": utcnow()}
    if exc is not None:
        values["traceback"] = "".join(tb.format_exception(type(exc), exc, exc.__traceback__))[-10000:]
    if details is not None:
        values["details"] = details if isinstance(details, str) else json.dumps(details)
    conn.execute(instance_actions_events.update().where(
        instance_actions_events.c.id == event_id).values(**values))


def record_event(conn: sa.Connection, ctx: RequestContext, instance_uuid: str, event: str, *,
                 host: str | None = None, exc: BaseException | None = None,
                 details: Any = None) -> None:
    """An event that starts and finishes at once (e.g. a scheduling decision)."""
    event_finish(conn, event_start(conn, ctx, instance_uuid, event, host), exc=exc, details=details)


def action_finish(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                  message: str | None = None) -> None:
    """Mark the request's action finished (``message`` set on failure)."""
    conn.execute(instance_actions.update().where(
        instance_actions.c.instance_uuid == instance_uuid,
        instance_actions.c.request_id == ctx.request_id).values(
        finish_time=utcnow(), message=message, updated_at=utcnow()))
