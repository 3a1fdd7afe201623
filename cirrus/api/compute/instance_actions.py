"""``/servers/{id}/os-instance-actions``: every action on a server and its events."""
from __future__ import annotations

from typing import Any, Mapping

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, query_int, reply
from cirrus.compute.models import instance_actions, instance_actions_events
from cirrus.compute.timeline import step_events
from cirrus.db.base import isotime
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import NotFound


class InstanceActionNotFound(NotFound):
    msg_fmt = "Action for request_id %(request_id)s on instance %(instance_uuid)s not found"


async def _instance(request: Request) -> dict[str, Any]:
    """The server of the path if the caller may see it; a deleted one too
    from 2.21 (Nova reads deleted instances for their actions from there)."""
    return await request.app.state.compute_api.get(
        context(request), request.path_params["server_id"],
        read_deleted=api_version(request) >= (2, 21))


def _action_view(row: dict[str, Any], version: tuple[int, int]) -> dict[str, Any]:
    out = {"action": row["action"], "instance_uuid": row["instance_uuid"],
           "request_id": row["request_id"], "user_id": row["user_id"],
           "project_id": row["project_id"], "start_time": isotime(row["start_time"]),
           "message": row["message"]}
    if version >= (2, 58):
        out["updated_at"] = isotime(row["updated_at"] or row["start_time"])
    return out


def _event_view(row: Mapping[str, Any], version: tuple[int, int], is_admin: bool,
                project_id: str) -> dict[str, Any]:
    from cirrus.api.compute.views import host_id

    out: dict[str, Any] = {"event": row["event"], "start_time": isotime(row["start_time"]),
                           "finish_time": isotime(row["finish_time"]), "result": row["result"]}
    if is_admin:
        out["traceback"] = row["traceback"]
    if version >= (2, 62):
        out["hostId"] = host_id(project_id, row["host"])
        if is_admin:
            out["host"] = row["host"]
    if version >= (2, 84):
        out["details"] = row["details"]
    return out


async def index(request: Request) -> Response:
    instance = await _instance(request)
    version = api_version(request)
    limit = query_int(request, "limit", None)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        q = sa.select(instance_actions).where(
            instance_actions.c.instance_uuid == instance["uuid"]).order_by(
            instance_actions.c.start_time.desc(), instance_actions.c.id.desc())
        return fetch_all(conn, q)
    rows = await request.app.state.db.read(load)
    marker = request.query_params.get("marker")
    if marker and version >= (2, 58):
        ids = [r["request_id"] for r in rows]
        rows = rows[ids.index(marker) + 1:] if marker in ids else []
    if limit is not None and version >= (2, 58):
        rows = rows[:limit]
    return reply({"instanceActions": [_action_view(r, version) for r in rows]})


async def show(request: Request) -> Response:
    ctx = context(request)
    instance = await _instance(request)
    version = api_version(request)
    request_id = request.path_params["request_id"]

    def load(conn: sa.Connection) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        action = fetch_one(conn, sa.select(instance_actions).where(
            instance_actions.c.instance_uuid == instance["uuid"],
            instance_actions.c.request_id == request_id).order_by(instance_actions.c.id.desc()))
        if action is None:
            return None, []
        return action, fetch_all(conn, sa.select(instance_actions_events).where(
            instance_actions_events.c.action_id == action["id"]).order_by(
            instance_actions_events.c.id))
    action, events = await request.app.state.db.read(load)
    if action is None:
        raise InstanceActionNotFound(request_id=request_id, instance_uuid=instance["uuid"])
    body = _action_view(action, version)
    # A build event's steps (its boot timeline) follow it as events of their own.
    rows = [row for e in events for row in (e, *step_events(e["steps"], e["host"]))]
    body["events"] = [_event_view(e, version, ctx.is_admin, instance["project_id"]) for e in rows]
    return reply({"instanceAction": body})


ROUTES = [
    Route("/v2.1/servers/{server_id}/os-instance-actions", index, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/os-instance-actions/{request_id}", show, methods=["GET"]),
]
