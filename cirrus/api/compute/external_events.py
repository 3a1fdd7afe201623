"""``os-server-external-events``: the network service tells compute a VIF is plugged."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.parameters import text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import ValidationError

EVENT_NAMES = {"network-changed", "network-vif-plugged", "network-vif-unplugged",
               "network-vif-deleted", "volume-extended", "power-update", "accelerator-request-bound"}
EVENT_STATUSES = ("failed", "completed", "in-progress")
EVENT_KEYS = frozenset({"name", "server_uuid", "status", "tag"})


async def create(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:external_events")
    body = await json_body(request)
    events = body.get("events") if isinstance(body, dict) else None
    if not isinstance(events, list) or not events:
        raise ValidationError(field="events", reason="must be a non-empty list")
    for i, event in enumerate(events):
        _check_event(event, f"events/{i}")
        event.setdefault("status", "completed")
    results = await request.app.state.compute_api.external_instance_event(ctx, events)
    accepted = [r for r in results if r["code"] == 200]
    status = 200 if len(accepted) == len(results) else 207 if accepted else 404
    return reply({"events": results}, status=status)


def _check_event(event: Any, field: str) -> None:
    """One event of Nova's server_external_events ``create`` schema."""
    if not isinstance(event, dict) or set(event) - EVENT_KEYS:
        raise ValidationError(field=field, reason=f"an object with only {sorted(EVENT_KEYS)}")
    text(event.get("server_uuid"), f"{field}/server_uuid", min_len=1, max_len=36)
    if event.get("name") not in EVENT_NAMES:
        raise ValidationError(field=f"{field}/name", reason="is not a known event name")
    if "status" in event and event["status"] not in EVENT_STATUSES:
        raise ValidationError(field=f"{field}/status", reason=f"must be one of {EVENT_STATUSES}")
    if event.get("tag") is not None:
        text(event["tag"], f"{field}/tag", max_len=255)


ROUTES = [Route("/v2.1/os-server-external-events", create, methods=["POST"])]
