"""``GET /servers/{id}/diagnostics`` (admin): what the hypervisor measures of
a running guest; from 2.48 in Nova's standard format
(:mod:`cirrus.virt.diagnostics`), before it the driver's own counters."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, reply

STANDARD = (2, 48)


async def index(request: Request) -> Response:
    ctx = context(request)
    api = request.app.state.compute_api
    uuid = request.path_params["server_id"]
    if api_version(request) >= STANDARD:
        return reply(await api.get_instance_diagnostics(ctx, uuid))
    return reply(await api.get_diagnostics(ctx, uuid))


ROUTES = [Route("/v2.1/servers/{server_id}/diagnostics", index, methods=["GET"])]
