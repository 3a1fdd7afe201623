"""The API's one ASGI entry: every request's fixed work in one place.

A request used to cross eight ASGI layers before its handler (Starlette's
error and exception middleware, the metrics and token middleware, the root
router, a mount, the compute microversion middleware, the family's router),
each with its own ``send`` wrapper; in the API worker on PostgreSQL they
were ~40 % of the GIL samples. :class:`ApiApp` does the same work in one
call: the request id and log context, the caller (:func:`auth.authenticate`),
the compute microversion, the route by :class:`RouteIndex`, the handler,
its error mapped to the family's body, the request's metric, with one
``send`` wrapper adding the response headers.

What the table does not find (a 404, a 405, a trailing-slash redirect, the
dashboard's files, ``/``, the volume API with its own middleware) goes through
Starlette's routers as before, in the same error handling: those answers
are Starlette's own. Headers follow the old layering: handler responses and
handler errors carry the compute version headers, routing errors (404, 405)
do not; every response carries the request id.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from starlette.datastructures import State
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Router
from starlette.types import Message, Receive, Scope, Send

from cirrus import log
from cirrus.api import errors
from cirrus.api.auth import authenticate, first_header, server_of
from cirrus.api.compute import microversion
from cirrus.api.routing import RouteIndex
from cirrus.context import new_request_id
from cirrus.exception import CirrusException
from cirrus.metrics.api import ApiMetrics

LOG = logging.getLogger(__name__)

Handler = Callable[[Request, Exception], Awaitable[Response]]
# By exception type, looked up along the MRO (as Starlette's exception middleware).
HANDLERS: dict[type[Exception], Handler] = {
    CirrusException: errors.cirrus_exception_handler,
    HTTPException: errors.http_exception_handler,
}


def _handler_for(exc: Exception) -> Handler | None:
    for cls in type(exc).__mro__:
        if cls in HANDLERS:
            return HANDLERS[cls]
    return None


@dataclass
class Family:
    """One API family mounted at ``prefix`` (``/compute``) and served by the
    table: its router (the slow path: 404, 405, redirects) and its index."""

    prefix: str
    router: Router
    index: RouteIndex
    negotiates_microversion: bool = False


class _Exchange:
    """One request's response side: adds the request id (and, for a
    handler's response, the compute version) to the response start, and
    remembers whether and with what status the response started."""

    __slots__ = ("send", "ids", "version", "started", "status")

    def __init__(self, send: Send, request_id: bytes) -> None:
        self.send = send
        self.ids = [(b"x-openstack-request-id", request_id),
                    (b"x-compute-request-id", request_id)]
        self.version: list[tuple[bytes, bytes]] = []
        self.started = False
        self.status = 500  # what the server answers if the app raises first

    async def plain(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started, self.status = True, message["status"]
            message["headers"] = [*message.get("headers", ()), *self.ids]
        await self.send(message)

    async def versioned(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started, self.status = True, message["status"]
            message["headers"] = [*message.get("headers", ()), *self.version, *self.ids]
        await self.send(message)


class ApiApp:
    """The HTTP API as one ASGI application; ``state`` holds the services
    the handlers use (``request.app.state``), ``routes`` the root routes
    (``/``, a Mount per family, the dashboard) for introspection."""

    def __init__(self, routes: list[BaseRoute], families: list[Family],
                 metrics: ApiMetrics | None) -> None:
        self.routes = routes
        self.router = Router(routes)  # slow path for what no family serves
        self.families = families
        self.metrics = metrics
        self.state = State()
        # What Starlette's routers' handlers look up (exception types, statuses).
        self._handlers: tuple[dict[Any, Handler], dict[int, Handler]] = (dict(HANDLERS), {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request; an unexpected error before the response started
        answers the family's 500 body with the request id and is not
        re-raised, so the server keeps the connection open."""
        scope["app"] = self
        if scope["type"] != "http":  # lifespan (uvicorn runs without it)
            await self.router(scope, receive, send)
            return
        started = time.perf_counter()
        raw = scope["headers"]
        headers = dict(raw)  # the token's last value, as before
        unique = len(headers) == len(raw)
        request_id = new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        given = headers.get(b"x-openstack-request-id") if unique else first_header(
            raw, b"x-openstack-request-id")
        global_id = log.valid_request_id(given.decode("latin-1") if given is not None else None)
        logged = log.current.set(log.LogContext(request_id, global_id,
                                                instance_uuid=server_of(scope["path"])))
        exchange = _Exchange(send, request_id.encode())
        try:
            refused = await authenticate(scope, headers, request_id, global_id)
            if refused is not None:
                await refused(scope, receive, exchange.plain)
                return
            await self._routed(scope, receive, exchange, headers if unique else None)
        except Exception:
            if exchange.started:
                raise  # nothing can be said any more; the server ends the response
            LOG.exception("unexpected error serving %s %s (%s)", scope["method"],
                          scope["path"], request_id)
            await errors.unexpected_response(scope["path"], request_id)(
                scope, receive, exchange.plain)
        finally:
            log.current.reset(logged)
            if self.metrics is not None:
                self.metrics.observe_request(scope, exchange.status,
                                             time.perf_counter() - started)

    async def _routed(self, scope: Scope, receive: Receive, exchange: _Exchange,
                      headers: dict[bytes, bytes] | None) -> None:
        """The family's route, or Starlette's routers; routing's and the
        family's errors become the family's error body."""
        try:
            family = self._family(scope)
            if family is None:
                scope["starlette.exception_handlers"] = self._handlers
                await self.router(scope, receive, exchange.plain)
                return
            if family.negotiates_microversion and not await self._negotiate(
                    scope, receive, exchange, headers):
                return
            await self._serve(family, scope, receive, exchange)
        except Exception as exc:
            handler = _handler_for(exc)
            if handler is None or exchange.started:
                raise
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, exchange.plain)

    def _family(self, scope: Scope) -> Family | None:
        """The family whose mount the path is under, its scope set as the
        Mount's would be; None for the root's routes (or a root path set by
        the server, which the slow path handles)."""
        path = scope["path"]
        if scope.get("root_path"):
            return None
        for family in self.families:
            if path.startswith(family.prefix) and path.startswith("/", len(family.prefix)):
                scope["app_root_path"] = ""
                scope["root_path"] = family.prefix
                scope["router"] = self.router
                return family
        return None

    @staticmethod
    async def _negotiate(scope: Scope, receive: Receive, exchange: _Exchange,
                         headers: dict[bytes, bytes] | None) -> bool:
        """Set the request's compute microversion; answer 400/406 if unusable."""
        if headers is None:  # a header repeated: the first of each counts
            raw = scope["headers"]
            value = first_header(raw, b"openstack-api-version")
            legacy = first_header(raw, b"x-openstack-nova-api-version")
        else:
            value = headers.get(b"openstack-api-version")
            legacy = headers.get(b"x-openstack-nova-api-version")
        try:
            version, exchange.version = microversion.negotiate(value, legacy)
        except CirrusException as exc:
            await errors.error_response(exc.code, exc.format_message(), "compute")(
                scope, receive, exchange.plain)
            return False
        scope["state"]["api_version"] = version
        return True

    async def _serve(self, family: Family, scope: Scope, receive: Receive,
                     exchange: _Exchange) -> None:
        """The route's handler (its errors the family's bodies, with the
        version headers), or the family's router for what the table leaves."""
        found = family.index.match(scope["method"], scope["path"][len(family.prefix):])
        if found is None:
            scope["starlette.exception_handlers"] = self._handlers
            await family.router(scope, receive, exchange.versioned)
            return
        route, params = found
        scope["route"], scope["endpoint"], scope["path_params"] = route, route.endpoint, params
        request = Request(scope, receive, exchange.versioned)
        try:
            response = await route.endpoint(request)
        except Exception as exc:
            handler = _handler_for(exc)
            if handler is None:
                raise
            response = await handler(request, exc)
            exc.__traceback__ = None
        await response(scope, receive, exchange.versioned)

