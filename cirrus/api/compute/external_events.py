"""``os-server-external-events``: the network service tells compute a VIF is plugged."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import ValidationError

EVENT_NAMES = {"network-changed", "network-vif-plugged", "network-vif-unplugged",
               "network-vif-deleted", "volume-extended", "power-update", "accelerator-request-bound"}


async def create(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:external_events")
    body = await json_body(request)
    events = body.get("events") if isinstance(body, dict) else None
    if not isinstance(events, list) or not events:
        raise ValidationError(field="events", reason="must be a non-empty list")
    for i, event in enumerate(events):
        if not isinstance(event, dict) or not isinstance(event.get("server_uuid"), str):
            raise ValidationError(field=f"events/{i}", reason="server_uuid is required")
        if event.get("name") not in EVENT_NAMES:
            raise ValidationError(field=f"events/{i}/name", reason=f"{event.get('name')!r} is not valid")
        event.setdefault("status", "completed")
    results = await request.app.state.compute_api.external_instance_event(ctx, events)
    accepted = [r for r in results if r["code"] == 200]
    status = 200 if len(accepted) == len(results) else 207 if accepted else 404
    return reply({"events": results}, status=status)


ROUTES = [Route("/v2.1/os-server-external-events", create, methods=["POST"])]
