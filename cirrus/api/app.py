"""The one HTTP application: identity, compute, network, image and block storage APIs.

Each API family contributes a route table; this module guards each route
with its policy rule and mounts the tables under their catalog prefixes in
one :class:`cirrus.api.asgi.ApiApp` (which authenticates, negotiates, routes
and maps errors). ``build_app`` is called by the composition root with the
services the handlers use (``app.state``).
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Sequence

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router

from cirrus import dashboard, policies, policy
from cirrus.api.asgi import ApiApp, Family
from cirrus.api.routing import RouteIndex
from cirrus.exception import Forbidden


# Called when a route rule refuses a request, before the 403: raises the 404
# of a resource the path names that the caller may not see at all (Nova looks
# a server up within the caller's project before it checks the caller's role).
Locate = Callable[[Request], Awaitable[None]]


def _route_tables() -> list[tuple[str, Sequence[BaseRoute], Locate | None]]:
    # Imported here so each family's modules load only when an app is built.
    from cirrus.api.compute.routes import ROUTES as compute
    from cirrus.api.compute.routes import locate as compute_locate
    from cirrus.api.metadata.handler import ROUTES as metadata
    from cirrus.identity.routes import ROUTES as identity
    from cirrus.image.routes import ROUTES as image
    from cirrus.network.routes import ROUTES as network
    from cirrus.volume.api.routes import ROUTES as volume

    return [("/identity", identity, None), ("/compute", compute, compute_locate),
            ("/network", network, None), ("/image", image, None), ("/volume", volume, None),
            ("/metadata", metadata, None)]


async def index(request: Request) -> Response:
    base = request.app.state.settings.public_url.rstrip("/")
    return JSONResponse({"name": "cirrus", "services": {
        "identity": f"{base}/identity", "compute": f"{base}/compute",
        "network": f"{base}/network", "image": f"{base}/image",
        "block-storage": f"{base}/volume"}})


class MissingRule(LookupError):
    """A route with no rule in :mod:`cirrus.policies`: the app refuses to start."""


def _guarded(endpoint: Any, rules: dict[str, policy.Rule], locate: Locate | None) -> Any:
    """``endpoint`` behind its route rules (by method): the caller's role and
    scope are checked before the handler reads a byte of the body; a refused
    caller is told 404 instead of 403 where ``locate`` finds the resource is
    not one it may see."""
    async def guarded(request: Request) -> Response:
        try:
            policy.enforce_route(getattr(request.state, "context", None),
                                 rules[request.method])
        except Forbidden:
            if locate is not None:
                await locate(request)
            raise
        return await endpoint(request)
    guarded.__name__ = getattr(endpoint, "__name__", "guarded")
    guarded.__wrapped__ = endpoint  # type: ignore[attr-defined]
    return guarded


def guard_routes(prefix: str, table: Sequence[BaseRoute],
                 locate: Locate | None = None) -> list[BaseRoute]:
    """A copy of ``table`` whose every route checks its rule first (see
    :func:`_guarded` for ``locate``).

    Raises :class:`MissingRule` for a route (or one of its methods) without a
    rule, so a route cannot be added without saying who may call it.
    """
    out: list[BaseRoute] = []
    for route in table:
        if not isinstance(route, Route):
            raise MissingRule(f"{prefix}: only plain routes can be ruled, not {route!r}")
        rules: dict[str, policy.Rule] = {}
        for method in route.methods or ():
            rule = policies.rule_for(prefix, method, route.path)
            if rule is None:
                raise MissingRule(f"no policy rule for {method} {prefix}{route.path}")
            rules[method] = rule
        out.append(Route(route.path, _guarded(route.endpoint, rules, locate),
                         methods=list(route.methods or ()), name=route.name))
    return out


def build_app(state: dict[str, Any]) -> ApiApp:
    """The API app (:class:`ApiApp`) whose ``state`` holds ``state`` (settings, services)."""
    from cirrus.api.compute.microversion import MicroversionMiddleware
    from cirrus.volume.api.microversion import VolumeApiMiddleware

    routes: list[BaseRoute] = [Route("/", index, methods=["GET"])]
    per_family = {"/compute": [Middleware(MicroversionMiddleware)],
                  "/volume": [Middleware(VolumeApiMiddleware)]}
    families: list[Family] = []
    for prefix, table, locate in _route_tables():
        # Nova's, Cinder's and Glance's routes match a path exactly: ``DELETE /images/``
        # is a 404 there, not a redirect to the collection (which would answer 405).
        exact = prefix in ("/compute", "/volume", "/image")
        guarded = guard_routes(prefix, table, locate)
        router = Router(guarded, redirect_slashes=not exact)
        routes.append(Mount(prefix, app=router, middleware=per_family.get(prefix)))
        if prefix != "/volume":  # its middleware checks the URL's project: the slow path
            lookup = RouteIndex([r for r in guarded if isinstance(r, Route)])
            families.append(Family(prefix, router, lookup,
                                   negotiates_microversion=prefix == "/compute"))
    # Public static files with no data in them (cirrus/dashboard): the pages
    # call the APIs above with the user's token.
    routes.append(Mount(dashboard.PREFIX, app=dashboard.static_app()))
    app = ApiApp(routes, families, state["metrics"].api if "metrics" in state else None)
    for key, value in state.items():
        setattr(app.state, key, value)
    return app
