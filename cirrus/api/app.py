"""The one HTTP application: identity, compute, network and image APIs.

Each API family contributes a route table; this module mounts them under
their catalog prefixes and installs the error handlers and the token
middleware. ``build_app`` is called by the composition root with the
services the handlers use (``app.state``).
"""
from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from cirrus.api import errors
from cirrus.api.auth import AuthMiddleware
from cirrus.exception import CirrusException


def _route_tables() -> list[tuple[str, list[BaseRoute]]]:
    # Imported here so each family's modules load only when an app is built.
    from cirrus.api.compute.routes import ROUTES as compute
    from cirrus.identity.routes import ROUTES as identity
    from cirrus.image.routes import ROUTES as image
    from cirrus.network.routes import ROUTES as network

    return [("/identity", identity), ("/compute", compute),
            ("/network", network), ("/image", image)]


async def index(request: Request) -> Response:
    base = request.app.state.settings.public_url.rstrip("/")
    return JSONResponse({"name": "cirrus", "services": {
        "identity": f"{base}/identity", "compute": f"{base}/compute",
        "network": f"{base}/network", "image": f"{base}/image"}})


def build_app(state: dict[str, Any]) -> Starlette:
    """A Starlette app whose ``app.state`` holds ``state`` (settings, services)."""
    routes: list[BaseRoute] = [Route("/", index, methods=["GET"])]
    from cirrus.api.compute.microversion import MicroversionMiddleware

    for prefix, table in _route_tables():
        middleware = [Middleware(MicroversionMiddleware)] if prefix == "/compute" else None
        routes.append(Mount(prefix, routes=table, middleware=middleware))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(AuthMiddleware)],
        exception_handlers={
            CirrusException: errors.cirrus_exception_handler,
            HTTPException: errors.http_exception_handler,
            Exception: errors.unexpected_exception_handler,
        },
    )
    for key, value in state.items():
        setattr(app.state, key, value)
    return app
