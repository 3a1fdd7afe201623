"""``/v2.0/quotas``: Neutron's quota API, thin handlers over ``quotas``.

Anyone reads their own project's limits (and the defaults); another
project's only an admin. Setting and resetting limits, and listing every
project's, is for admins (the route rules say so).
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.context import RequestContext
from cirrus.network import exception as exc
from cirrus.network import quotas
from cirrus.network.validators import storable


def _project(request: Request, ctx: RequestContext) -> str:
    """The path's project, once the caller may read its quotas."""
    project = request.path_params["project_id"]
    if len(project) > 64 or storable(project):  # no project has such an id
        raise exc.ResourceNotFound()
    policy.enforce(ctx, "network:get", {"project_id": project})
    return project


async def list_quotas(request: Request) -> Response:
    settings = request.app.state.settings
    found = await request.app.state.db.read(quotas.all_quotas, settings)
    return reply({"quotas": found})


async def show_quota(request: Request) -> Response:
    project = _project(request, context(request))
    found = await request.app.state.db.read(quotas.limits, request.app.state.settings, project)
    return reply({"quota": found})


async def show_quota_details(request: Request) -> Response:
    project = _project(request, context(request))
    found = await request.app.state.db.read(quotas.details, request.app.state.settings, project)
    return reply({"quota": found})


async def show_default_quota(request: Request) -> Response:
    _project(request, context(request))
    return reply({"quota": quotas.defaults(request.app.state.settings)})


async def update_quota(request: Request) -> Response:
    project = _project(request, context(request))
    values, force = quotas.parse_update(await json_body(request))
    found = await request.app.state.db.run(quotas.update, request.app.state.settings, project,
                                           values, force)
    return reply({"quota": found})


async def delete_quota(request: Request) -> Response:
    project = _project(request, context(request))
    await request.app.state.db.run(quotas.reset, project)
    return no_content()


ROUTES = [
    Route("/v2.0/quotas", list_quotas, methods=["GET"]),
    Route("/v2.0/quotas/{project_id}", show_quota, methods=["GET"]),
    Route("/v2.0/quotas/{project_id}", update_quota, methods=["PUT"]),
    Route("/v2.0/quotas/{project_id}", delete_quota, methods=["DELETE"]),
    Route("/v2.0/quotas/{project_id}/details", show_quota_details, methods=["GET"]),
    Route("/v2.0/quotas/{project_id}/default", show_default_quota, methods=["GET"]),
]
