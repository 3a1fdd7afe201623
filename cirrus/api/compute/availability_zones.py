"""``/os-availability-zone``: zones of the compute services."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, reply
from cirrus.compute import hosts
from cirrus.db.base import isotime


async def index(request: Request) -> Response:
    context(request)
    settings = request.app.state.settings
    services = await request.app.state.db.read(hosts.list_services, None, "cirrus-compute")
    zones: dict[str, bool] = {}
    for svc in services:
        up = hosts.is_up(svc, settings.service_down_time) and not svc["disabled"]
        zones[svc["availability_zone"]] = zones.get(svc["availability_zone"], False) or up
    zones.setdefault(settings.default_availability_zone, False)
    return reply({"availabilityZoneInfo": [
        {"zoneName": name, "zoneState": {"available": up}, "hosts": None}
        for name, up in sorted(zones.items())]})


async def detail(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:services")
    settings = request.app.state.settings
    services = await request.app.state.db.read(hosts.list_services)
    zones: dict[str, dict] = {}
    for svc in services:
        zone = svc["availability_zone"] if svc["binary"] == "cirrus-compute" else "internal"
        up = hosts.is_up(svc, settings.service_down_time)
        entry = zones.setdefault(zone, {"zoneName": zone, "zoneState": {"available": False},
                                        "hosts": {}})
        entry["zoneState"]["available"] |= up and not svc["disabled"]
        entry["hosts"].setdefault(svc["host"], {})[hosts.PUBLIC_BINARY.get(svc["binary"], svc["binary"])] = {
            "available": up, "active": not svc["disabled"],
            "updated_at": isotime(svc["last_seen_up"])}
    return reply({"availabilityZoneInfo": list(zones.values())})


ROUTES = [
    Route("/v2.1/os-availability-zone", index, methods=["GET"]),
    Route("/v2.1/os-availability-zone/detail", detail, methods=["GET"]),
]
