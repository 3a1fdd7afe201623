"""``os-hosts`` (admin, 2.1–2.42): the cloud's service hosts, a compute host's
resources, and enabling or disabling one (the power actions and maintenance
mode exist in no cirrus driver, as in Nova's libvirt: 501)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import VersionNotFoundForAPIMethod, api_version
from cirrus.api.wsgi import json_body, reply
from cirrus.compute import exception as exc
from cirrus.compute import hosts
from cirrus.exception import ValidationError

# Nova's schema: each field one of these spellings; either or both present.
SWITCH = ("enable", "disable", "Enable", "Disable", "ENABLE", "DISABLE")


def _until_2_42(request: Request) -> None:
    """The API was removed in 2.43: a plain 404 from then on."""
    if api_version(request) > (2, 42):
        raise VersionNotFoundForAPIMethod()


async def index(request: Request) -> Response:
    """Every enabled service as ``{host_name, service, zone}``, in ``zone`` if given."""
    _until_2_42(request)
    zone = request.query_params.get("zone")
    rows = await request.app.state.db.read(hosts.list_services)
    return reply({"hosts": [
        {"host_name": r["host"], "service": r["topic"], "zone": hosts.zone_of(r)}
        for r in rows if not r["disabled"] and (not zone or hosts.zone_of(r) == zone)]})


async def show(request: Request) -> Response:
    _until_2_42(request)
    name = request.path_params["host_name"]
    resources = await request.app.state.db.read(hosts.host_resources, name)
    return reply({"host": [{"resource": r} for r in resources]})


def _switches(body: Any) -> dict[str, bool]:
    """``{"status"|"maintenance_mode": enabled?}`` from a body Nova's schema accepts."""
    if not isinstance(body, dict) or set(body) - {"status", "maintenance_mode"}:
        raise ValidationError(field="body", reason="only status and maintenance_mode")
    if not body:
        raise ValidationError(field="body", reason="status or maintenance_mode is required")
    for key, value in body.items():
        if value not in SWITCH:
            raise ValidationError(field=key, reason=f"must be one of {', '.join(SWITCH)}")
    return {key: value.lower() == "enable" for key, value in body.items()}


async def update(request: Request) -> Response:
    """Enable or disable the host's compute service; maintenance mode is 501
    (checked before any change, so a refused request changes nothing)."""
    _until_2_42(request)
    switches = _switches(await json_body(request))
    name = request.path_params["host_name"]
    db = request.app.state.db
    service = await db.read(hosts.compute_service, name)
    if "maintenance_mode" in switches:
        raise exc.FeatureNotSupported()
    enabled = switches["status"]
    await db.run(hosts.update_service, service["id"],
                 {"disabled": not enabled, "disabled_reason": None})
    return reply({"host": name, "status": "enabled" if enabled else "disabled"})


async def power_action(request: Request) -> Response:
    """``reboot``, ``shutdown``, ``startup``: 404 for an unknown host, else 501."""
    _until_2_42(request)
    await request.app.state.db.read(hosts.compute_service, request.path_params["host_name"])
    raise exc.FeatureNotSupported()


ROUTES = [
    Route("/v2.1/os-hosts", index, methods=["GET"]),
    Route("/v2.1/os-hosts/{host_name}", show, methods=["GET"]),
    Route("/v2.1/os-hosts/{host_name}", update, methods=["PUT"]),
    *(Route(f"/v2.1/os-hosts/{{host_name}}/{action}", power_action, methods=["GET"])
      for action in ("reboot", "shutdown", "startup")),
]
