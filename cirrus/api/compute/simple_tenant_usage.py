"""``/os-simple-tenant-usage``: every project's usage (admin) or one's own.

Query parameters as Nova's: ``start`` and ``end`` (default now; the end is
never past now), ``detailed=1`` for the listing's server usages, and from
2.40 ``limit``/``marker`` paging over instances with a ``next`` link; from
2.75 an unknown parameter is a 400.
"""
from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import bad
from cirrus.api.wsgi import context, reply
from cirrus.compute import usage
from cirrus.db.base import nova_time, utcnow

MAX_LIMIT = 1000  # Nova's [api] max_limit
FORMATS = ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%d %H:%M:%S.%f")
KNOWN = {"start", "end", "detailed"}
PAGING = {"limit", "marker"}


def _first(request: Request, name: str) -> str | None:
    """The first value given (Nova reads ``parse_qs(...)[name][0]``)."""
    values = request.query_params.getlist(name)
    return values[0] if values else None


def parse_time(raw: str | None, now: dt.datetime) -> dt.datetime:
    """A time in one of Nova's three forms (naive UTC); ``now`` when absent."""
    if not raw:
        return now
    for fmt in FORMATS:
        try:
            return dt.datetime.strptime(raw, fmt)
        except ValueError:
            continue
    raise bad("start/end", "Invalid datetime string: Datetime is in invalid format")


def _window(request: Request, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    raw_start, raw_end = _first(request, "start"), _first(request, "end")
    start, stop = parse_time(raw_start, now), parse_time(raw_end, now)
    # Nova reads "now" once for each missing end: two readings, never equal.
    if not start < stop and (raw_start or raw_end):
        raise bad("start", "Invalid start time. The start time cannot occur after the end time.")
    return start, min(stop, now)


def _paging(request: Request, show: bool) -> tuple[int, str | None]:
    """(limit, marker) as the microversion takes them; unknown parameters
    refused from 2.75."""
    version = api_version(request)
    allowed = (KNOWN - ({"detailed"} if show else set())) | PAGING
    if version >= (2, 75) and set(request.query_params) - allowed:
        raise bad("query", f"additional properties are not allowed: "
                           f"{sorted(set(request.query_params) - allowed)[:5]}")
    if version < (2, 40):
        return MAX_LIMIT, None
    raw = _first(request, "limit")
    if raw is not None and (not raw.isascii() or not raw.isdigit()):
        raise bad("limit", f"{raw[:32]!r} is not a non-negative integer")
    digits = raw.lstrip("0") if raw is not None else None
    # Any number of more digits than MAX_LIMIT has is above it (and int() of
    # thousands of digits would raise).
    limit = MAX_LIMIT if digits is None or len(digits) > 6 else min(int(digits or "0"), MAX_LIMIT)
    return limit, _first(request, "marker")


def server_view(s: usage.ServerUsage) -> dict[str, Any]:
    return {"hours": s.hours, "flavor": s.flavor, "instance_id": s.instance_id, "name": s.name,
            "tenant_id": s.tenant_id, "memory_mb": s.memory_mb, "local_gb": s.local_gb,
            "vcpus": s.vcpus, "started_at": nova_time(s.started_at),
            "ended_at": nova_time(s.ended_at), "state": s.state, "uptime": s.uptime}


def tenant_view(t: usage.TenantUsage, detailed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"tenant_id": t.tenant_id}
    if detailed:
        out["server_usages"] = [server_view(s) for s in t.server_usages]
    out.update({"total_local_gb_usage": t.total_local_gb_usage,
                "total_vcpus_usage": t.total_vcpus_usage,
                "total_memory_mb_usage": t.total_memory_mb_usage,
                "total_hours": t.total_hours, "start": nova_time(t.start),
                "stop": nova_time(t.stop)})
    return out


def _links(request: Request, servers: list[usage.ServerUsage], limit: int, path: str
           ) -> list[dict[str, str]]:
    """Nova's next link: when the page is full, the same query after its last server."""
    if not limit or len(servers) != limit:
        return []
    params = dict(sorted(request.query_params.items()))
    params["marker"] = servers[-1].instance_id
    base = request.app.state.settings.public_url.rstrip("/")
    return [{"rel": "next", "href": f"{base}/compute/v2.1/{path}?{urlencode(params)}"}]


async def _usages(request: Request, project_id: str | None, show: bool
                  ) -> tuple[list[usage.TenantUsage], list[usage.ServerUsage], int]:
    now = utcnow()
    start, stop = _window(request, now)
    limit, marker = _paging(request, show)
    found, servers = await request.app.state.db.read(usage.tenant_usages, start, stop, project_id,
                                                      limit, marker, now)
    return found, servers, limit


async def index(request: Request) -> Response:
    policy.enforce(context(request), "compute:usage:list")
    found, servers, limit = await _usages(request, None, show=False)
    detailed = _first(request, "detailed") == "1"
    body: dict[str, Any] = {"tenant_usages": [tenant_view(t, detailed) for t in found]}
    if api_version(request) >= (2, 40):
        links = _links(request, servers, limit, "os-simple-tenant-usage")
        if links:
            body["tenant_usages_links"] = links
    return reply(body)


async def show(request: Request) -> Response:
    tenant_id = request.path_params["tenant_id"]
    policy.enforce(context(request), "compute:usage:show", {"project_id": tenant_id})
    found, servers, limit = await _usages(request, tenant_id, show=True)
    body: dict[str, Any] = {"tenant_usage": tenant_view(found[0], True) if found else {}}
    if api_version(request) >= (2, 40):
        links = _links(request, servers, limit, f"os-simple-tenant-usage/{tenant_id}")
        if links:
            body["tenant_usage_links"] = links
    return reply(body)


ROUTES = [
    Route("/v2.1/os-simple-tenant-usage", index, methods=["GET"]),
    Route("/v2.1/os-simple-tenant-usage/{tenant_id}", show, methods=["GET"]),
]
