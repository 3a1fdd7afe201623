"""``os-instance-usage-audit-log`` (admin): the usage audit of the last
completed period, before now or before a given timestamp."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import reply
from cirrus.compute import hosts, usage_audit
from cirrus.db.base import utcnow
from cirrus.exception import Invalid


class InvalidTimestamp(Invalid):
    msg_fmt = "Invalid timestamp for date %(value)s"


async def _compute_hosts(request: Request) -> list[str]:
    """Every compute host, disabled ones too (they may hold instances: Nova)."""
    rows = await request.app.state.db.read(hosts.list_services, None, "cirrus-compute")
    return [r["host"] for r in rows]


async def index(request: Request) -> Response:
    log = usage_audit.audit_log(await _compute_hosts(request), utcnow())
    return reply({"instance_usage_audit_logs": log})


async def show(request: Request) -> Response:
    text = request.path_params["before_timestamp"]
    before = usage_audit.parse_before(text)
    if before is None:
        raise InvalidTimestamp(value=text[:64])
    log = usage_audit.audit_log(await _compute_hosts(request), before)
    return reply({"instance_usage_audit_log": log})


ROUTES = [
    Route("/v2.1/os-instance_usage_audit_log", index, methods=["GET"]),
    Route("/v2.1/os-instance_usage_audit_log/{before_timestamp}", show, methods=["GET"]),
]
