"""Instance actions and their events: how every boot explains itself.

An action (``create``, ``stop``…) is recorded when the API accepts a request;
each pipeline step adds an event with its timing, host, result and details
(the scheduler's filter decisions go in ``details``).
"""
from __future__ import annotations

import datetime as dt
import json
import traceback as tb
from typing import Any, Callable

import sqlalchemy as sa

from cirrus.compute.models import instance_actions, instance_actions_events
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.onestatement import one_statement
from cirrus.db.prepared import Cursor, Prepared, PreparedCache

SUCCESS, ERROR = "Success", "Error"
act, ev = instance_actions, instance_actions_events
Binds = tuple[tuple[str, str], ...]  # (column, parameter) pairs of a statement's shape


def event_binds(values: dict[str, Any], prefix: str = "v_") -> tuple[Binds, dict[str, Any]]:
    """Columns → parameters (``prefix`` and the column's name), and the
    parameters' values. Columns given the very same timestamp (start,
    created, finished, updated: one ``utcnow()``) share one parameter: each
    timestamp costs a bind conversion on SQLite."""
    pairs, params = [], {}
    shared: dict[int, str] = {}  # id of a timestamp value → its parameter
    for column in sorted(values):
        value = values[column]
        name = f"{prefix}{column}"
        if isinstance(value, dt.datetime):
            name = shared.setdefault(id(value), name)
        pairs.append((column, name))
        params[name] = value
    return tuple(pairs), params


def event_insert(binds: Binds, *only_if: sa.ColumnElement[bool]) -> sa.Insert:
    """An event with ``binds`` under the request's action (its latest), found
    and inserted in one statement: nothing inserted when there is none (or
    when a condition of ``only_if`` does not hold)."""
    # Typed parameters: in a SELECT list PostgreSQL cannot infer their types.
    given = (sa.bindparam(name, type_=ev.c[column].type) for column, name in binds)
    action = sa.select(act.c.id, *given).where(
        act.c.instance_uuid == sa.bindparam("w_uuid"), act.c.request_id == sa.bindparam("w_request"),
        *only_if).order_by(act.c.id.desc()).limit(1)
    return ev.insert().from_select(["action_id", *(c for c, _ in binds)], action).returning(
        ev.c.id)


# Every pipeline step records an event: statements built once (cirrus/db/prepared.py).
_EVENT_INSERTS = PreparedCache(event_insert)
_EVENT_FINISHES = PreparedCache(lambda key: ev.update().where(
    ev.c.id == sa.bindparam("w_id"), *([ev.c.finish_time.is_(None)] if key[1] else []))
    .values({column: sa.bindparam(name) for column, name in key[0]}))
_ACTION_START = Prepared(act.insert().values(
    instance_uuid=sa.bindparam("v_uuid"), action=sa.bindparam("v_action"),
    request_id=sa.bindparam("v_request"), user_id=sa.bindparam("v_user"),
    project_id=sa.bindparam("v_project"), start_time=sa.bindparam("v_now"),
    created_at=sa.bindparam("v_now")).returning(act.c.id))
_ACTION_FINISH = Prepared(act.update().where(
    act.c.instance_uuid == sa.bindparam("w_uuid"), act.c.request_id == sa.bindparam("w_request"))
    .values(finish_time=sa.bindparam("v_now"), message=sa.bindparam("v_message"),
            updated_at=sa.bindparam("v_now")))


def action_start(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                 action: str) -> int:
    """Record ``action`` on the instance for the request in ``ctx``."""
    action_id: int = send_action_start(conn, ctx, instance_uuid, action).fetchone()[0]
    return action_id


def _send_event(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                values: dict[str, Any]) -> Callable[[], int | None]:
    """The event's insert sent; the function returned reads the new event's
    id, None (nothing inserted) if the request has no action."""
    binds, params = event_binds(values)
    cursor = _EVENT_INSERTS[binds].execute(conn, w_uuid=instance_uuid, w_request=ctx.request_id,
                                           **params)

    def new_id() -> int | None:
        row = cursor.fetchone()
        return int(row[0]) if row is not None else None
    return new_id


def send_action_start(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                      action: str) -> Cursor:
    """:func:`action_start`'s insert, sent (in a pipeline, nothing waits for
    it); its cursor gives the action's id."""
    return _ACTION_START.execute(conn, v_uuid=instance_uuid, v_action=action,
                                 v_request=ctx.request_id, v_user=ctx.user_id,
                                 v_project=ctx.project_id, v_now=utcnow())


def _insert_event(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                  values: dict[str, Any]) -> int | None:
    """The new event's id; None (nothing inserted) if the request has no action."""
    return _send_event(conn, ctx, instance_uuid, values)()


def format_traceback(exc: BaseException) -> str:
    """An Error event's traceback (its last 10,000 characters)."""
    return "".join(tb.format_exception(type(exc), exc, exc.__traceback__))[-10000:]


def _outcome(exc: BaseException | None, details: Any) -> dict[str, Any]:
    """An event's closing values: Success, or Error with the exception's traceback."""
    now = utcnow()
    values: dict[str, Any] = {"finish_time": now, "result": SUCCESS if exc is None else ERROR,
                              "updated_at": now}
    if exc is not None:
        values["traceback"] = format_traceback(exc)
    if details is not None:
        values["details"] = details if isinstance(details, str) else json.dumps(details)
    return values


@one_statement  # an INSERT … SELECT
def event_start(conn: sa.Connection, ctx: RequestContext, instance_uuid: str, event: str,
                host: str | None = None, start: dt.datetime | None = None) -> int | None:
    """Open ``event`` (at ``start``, default now) under the action of this
    request; its id, or None."""
    return send_event_start(conn, ctx, instance_uuid, event, host, start)()


def send_event_start(conn: sa.Connection, ctx: RequestContext, instance_uuid: str, event: str,
                     host: str | None = None, start: dt.datetime | None = None
                     ) -> Callable[[], int | None]:
    """:func:`event_start` sent (e.g. inside ``prepared.pipelined``); the
    function returned reads its id."""
    now = start or utcnow()
    return _send_event(conn, ctx, instance_uuid, {"event": event, "start_time": now,
                                                  "host": host, "created_at": now})


def event_finish(conn: sa.Connection, event_id: int | None, *, exc: BaseException | None = None,
                 details: Any = None, if_open: bool = False, steps: str | None = None) -> bool:
    """Close an event: Success, or Error with the exception's traceback.
    Whether it was closed now (sent inside ``prepared.pipelined``: not known
    before the pipeline is read, False).

    ``if_open``: only if nobody closed it yet (a finished event keeps its outcome).
    ``steps``: a build's boot timeline (``timeline.BootTimeline.steps_json``)."""
    if event_id is None:
        return False
    values = _outcome(exc, details)
    if steps is not None:
        values["steps"] = steps
    binds, params = event_binds(values)
    return _EVENT_FINISHES[binds, if_open].execute(conn, w_id=event_id, **params).rowcount == 1


def record_event(conn: sa.Connection, ctx: RequestContext, instance_uuid: str, event: str, *,
                 host: str | None = None, exc: BaseException | None = None,
                 details: Any = None, start: dt.datetime | None = None) -> None:
    """A finished event (e.g. a scheduling decision, ``start`` when it began;
    default: it starts and finishes now): one insert with its outcome."""
    _insert_event(conn, ctx, instance_uuid,
                  finished_event(event, host=host, exc=exc, details=details, start=start))


def finished_event(event: str, *, host: str | None = None, exc: BaseException | None = None,
                   details: Any = None, start: dt.datetime | None = None) -> dict[str, Any]:
    """The columns of :func:`record_event`'s finished event."""
    values = _outcome(exc, details)
    return {"event": event, "start_time": start or values["finish_time"], "host": host,
            "created_at": values["finish_time"], **values}


def action_finish(conn: sa.Connection, ctx: RequestContext, instance_uuid: str,
                  message: str | None = None) -> None:
    """Mark the request's action finished (``message`` set on failure)."""
    _ACTION_FINISH.execute(conn, w_uuid=instance_uuid, w_request=ctx.request_id,
                           v_now=utcnow(), v_message=message)
