"""Flavor access (Nova's ``flavor_access``): the projects a private flavor is
open to, listed on ``GET /flavors/{id}/os-flavor-access`` and changed by the
``addTenantAccess`` / ``removeTenantAccess`` actions (admin)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.flavors import flavor_in_path
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import text
from cirrus.api.wsgi import context, json_body, reply
from cirrus.compute import flavors as flavor_db
from cirrus.compute.exception import FlavorAccessListPublic, FlavorAccessPublic
from cirrus.exception import ValidationError


def _access_view(flavorid: str, projects: list[str]) -> dict[str, Any]:
    return {"flavor_access": [{"flavor_id": flavorid, "tenant_id": p} for p in projects]}


async def flavor_access(request: Request) -> Response:
    """``GET /flavors/{id}/os-flavor-access``: the projects a private flavor is open to."""
    policy.enforce(context(request), "compute:flavor_access")
    row = await flavor_in_path(request)
    if row["is_public"]:
        raise FlavorAccessListPublic()
    projects = await request.app.state.db.read(flavor_db.projects_of, row["flavorid"])
    return reply(_access_view(row["flavorid"], projects))


def _tenant(body: Any, verb: str) -> str:
    data = body.get(verb)
    if set(body) != {verb} or not isinstance(data, dict) or set(data) != {"tenant"}:
        raise ValidationError(field=verb, reason=f"'{verb}' must be an object with only 'tenant'")
    return text(data["tenant"], f"{verb}/tenant", min_len=1, max_len=255)


async def action(request: Request) -> Response:
    """``addTenantAccess`` / ``removeTenantAccess`` on ``POST /flavors/{id}/action``."""
    policy.enforce(context(request), "compute:flavor_access")
    body = await json_body(request)
    verb = next(iter(body), None) if isinstance(body, dict) and len(body) == 1 else None
    if verb not in ("addTenantAccess", "removeTenantAccess"):
        raise ValidationError(field="action", reason="addTenantAccess or removeTenantAccess")
    tenant = _tenant(body, verb)
    row = await flavor_in_path(request)
    db = request.app.state.db
    if verb == "addTenantAccess":
        if row["is_public"] and api_version(request) >= (2, 7):
            raise FlavorAccessPublic()
        await db.run(flavor_db.add_access, row["flavorid"], tenant)
    else:
        await db.run(flavor_db.remove_access, row["flavorid"], tenant)
    projects = await db.read(flavor_db.projects_of, row["flavorid"])
    return reply(_access_view(row["flavorid"], projects))


ROUTES = [
    Route("/v2.1/flavors/{flavor_id}/os-flavor-access", flavor_access, methods=["GET"]),
    Route("/v2.1/flavors/{flavor_id}/action", action, methods=["POST"]),
]
