"""``/servers/{id}/ips``: a server's addresses by network, from its info cache
(the server view's ``addresses``, each address its version and text only)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute import views
from cirrus.api.wsgi import context
from cirrus.compute import queries
from cirrus.exception import NotFound


class NetworkNotAttached(NotFound):
    msg_fmt = "Instance is not a member of specified network"


async def _addresses(request: Request) -> dict[str, list[dict[str, Any]]]:
    row = await request.app.state.compute_api.get(context(request),
                                                  request.path_params["server_id"])
    network_info = await request.app.state.db.read(queries.cached_network_info, row["uuid"])
    return views.basic_addresses(views.addresses(network_info))


async def index(request: Request) -> Response:
    return views.reply_stored({"addresses": await _addresses(request)})


async def show(request: Request) -> Response:
    label = request.path_params["network_label"]
    addresses = await _addresses(request)
    if label not in addresses:
        raise NetworkNotAttached()
    return views.reply_stored({label: addresses[label]})


ROUTES = [
    Route("/v2.1/servers/{server_id}/ips", index, methods=["GET"]),
    Route("/v2.1/servers/{server_id}/ips/{network_label}", show, methods=["GET"]),
]
