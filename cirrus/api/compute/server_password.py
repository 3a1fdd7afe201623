"""``/servers/{id}/os-server-password``: the password the guest left
(encrypted with the server's key), and clearing it."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, no_content, reply
from cirrus.compute import password


async def index(request: Request) -> Response:
    row = await request.app.state.compute_api.get(context(request),
                                                  request.path_params["server_id"])
    return reply({"password": password.extract_password(row["system_metadata"]) or ""})


async def clear(request: Request) -> Response:
    ctx = context(request)
    row = await request.app.state.compute_api.get(ctx, request.path_params["server_id"])
    await request.app.state.db.run(password.save_password, row["uuid"], None)
    return no_content()


ROUTES = [
    Route("/v2.1/servers/{server_id}/os-server-password", index, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/os-server-password", clear, methods=["DELETE"]),
]
