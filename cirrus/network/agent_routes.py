"""``/v2.0/agents[/{id}]``: Neutron's ``agent`` extension, thin handlers over
``agents``. Only admins see agents: another caller's listing is empty, as
Neutron's policy filters each agent out of it; show, update and delete are
admin routes."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.network import agents, listing
from cirrus.network import exception as exc
from cirrus.network.common import select_fields
from cirrus.network.schema import parse
from cirrus.network.validators import storable


def _down_time(request: Request) -> float:
    return float(request.app.state.settings.service_down_time)


def _id(request: Request) -> str:
    value = request.path_params["id"]
    if len(value) > 255 or storable(value):
        raise exc.AgentNotFound(id="")
    return value


def _matches(view: dict[str, Any], filters: dict[str, list[str]]) -> bool:
    """A listing filter on a view attribute (``?agent_type=L3 agent&alive=true``);
    booleans compare case-blind, as Neutron converts them."""
    for key, wanted in filters.items():
        if key not in view:
            continue
        value = view[key]
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        if shown not in [w.lower() if isinstance(value, bool) else w for w in wanted]:
            return False
    return True


async def list_agents(request: Request) -> Response:
    if not context(request).is_admin:
        return listing.page(request, [], "agents")
    filters = listing.filters(request)
    views = await request.app.state.db.read(agents.list_agents, _down_time(request))
    return listing.page(request, [v for v in views if _matches(v, filters)], "agents")


async def show_agent(request: Request) -> Response:
    view = await request.app.state.db.read(agents.get_agent, _id(request), _down_time(request))
    return reply({"agent": select_fields(view, request.query_params.getlist("fields"))})


async def update_agent(request: Request) -> Response:
    values = parse("agent", await json_body(request), False)
    view = await request.app.state.db.run(agents.update_agent, _id(request), values,
                                          _down_time(request))
    return reply({"agent": view})


async def delete_agent(request: Request) -> Response:
    await request.app.state.db.run(agents.delete_agent, _id(request), _down_time(request))
    return no_content()


ROUTES = [
    Route("/v2.0/agents", list_agents, methods=["GET"]),
    Route("/v2.0/agents/{id}", show_agent, methods=["GET"]),
    Route("/v2.0/agents/{id}", update_agent, methods=["PUT"]),
    Route("/v2.0/agents/{id}", delete_agent, methods=["DELETE"]),
]
