"""Token middleware: turns ``X-Auth-Token`` into a RequestContext, or a 401.

Version documents and token creation are public; everything else needs a
valid token. It is the outermost of cirrus's middleware, so it also gives
every response its request id and answers an unexpected error itself (see
:meth:`AuthMiddleware.__call__`).
"""
from __future__ import annotations

import logging
import re
from dataclasses import replace

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cirrus import log
from cirrus.api.errors import error_response, style_for_path, unexpected_response
from cirrus.api.metadata.auth import is_metadata, signed_context
from cirrus.api.wsgi import sending_headers
from cirrus.context import new_request_id
from cirrus.dashboard import is_dashboard
from cirrus.exception import CirrusException

LOG = logging.getLogger(__name__)

# Exact paths (after the service prefix) that skip authentication.
PUBLIC_PATHS = frozenset({
    "/", "",
    "/identity", "/identity/", "/identity/v3", "/identity/v3/",
    "/compute", "/compute/", "/compute/v2.1", "/compute/v2.1/", "/compute/v2", "/compute/v2/",
    "/image", "/image/", "/image/versions",
    "/network", "/network/",
    "/volume", "/volume/", "/volume/v3", "/volume/v3/",
})


# The server a compute request is about (its log lines name it).
_SERVER_PATH = re.compile(r"^/compute/v2(?:\.1)?/servers/([0-9a-f-]{36})(?:/|$)")


_PASSWORD_PATH = re.compile(r"/identity/v3/users/[^/]+/password")


def _server_of(path: str) -> str | None:
    match = _SERVER_PATH.match(path)
    return match.group(1) if match else None


def _header(scope: Scope, name: bytes) -> str | None:
    """The first ``name`` header (lower case) of the request, decoded."""
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


def is_public(method: str, path: str) -> bool:
    if path in PUBLIC_PATHS or is_dashboard(path):  # the dashboard's files hold no data
        return True
    if method != "POST":
        return False
    # Logging in; changing one's password, which takes the original (Keystone's:
    # a user whose token or password expired can still change it).
    return path == "/identity/v3/auth/tokens" or _PASSWORD_PATH.fullmatch(path) is not None


class AuthMiddleware:
    """ASGI middleware; sets ``scope["state"]["context"]`` for authenticated calls."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request; an unexpected error before the response started
        answers the family's 500 body with the request id and is not re-raised,
        so the server keeps the connection open for the client's next request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        global_id = log.valid_request_id(_header(scope, b"x-openstack-request-id"))
        logged = log.current.set(log.LogContext(request_id, global_id,
                                                instance_uuid=_server_of(scope["path"])))
        send_with_id = sending_headers(send, [(b"x-openstack-request-id", request_id.encode()),
                                              (b"x-compute-request-id", request_id.encode())])
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_id(message)

        try:
            await self._serve(scope, receive, send_tracked, request_id, global_id)
        except Exception:
            if started:
                raise  # nothing can be said any more; the server ends the response
            LOG.exception("unexpected error serving %s %s (%s)", scope["method"],
                          scope["path"], request_id)
            await unexpected_response(scope["path"], request_id)(scope, receive, send_tracked)
        finally:
            log.current.reset(logged)

    async def _serve(self, scope: Scope, receive: Receive, send_with_id: Send,
                     request_id: str, global_id: str | None) -> None:
        headers = dict(scope["headers"])
        state = scope["state"]
        path = scope["path"]
        if is_metadata(path):  # guests' requests, signed by the proxy instead of a token
            ctx = signed_context(headers, scope["app"].state.metadata.secret)
            if ctx is not None:
                ctx.request_id, ctx.global_request_id = request_id, global_id
                state["context"] = ctx
            await self.app(scope, receive, send_with_id)
            return
        if is_public(scope["method"], path):
            await self.app(scope, receive, send_with_id)
            return
        token = headers.get(b"x-auth-token")
        identity = scope["app"].state.identity
        try:
            if not token or not token.isascii():  # Fernet tokens are base64 text
                raise CirrusException("The request you have made requires authentication.")
            data = await identity.validate(token.decode())
        except CirrusException as exc:
            response = error_response(401, exc.format_message() if token else
                                      "The request you have made requires authentication.",
                                      style_for_path(path),
                                      headers={"WWW-Authenticate": "Keystone uri=\"%s\"" %
                                               (scope["app"].state.settings.public_url + "/identity")})
            await response(scope, receive, send_with_id)
            return
        ctx = identity.context_for(data, token.decode())
        ctx.request_id, ctx.global_request_id = request_id, global_id
        state["context"] = ctx
        log.current.set(replace(log.current.get(), project_id=ctx.project_id))
        await self.app(scope, receive, send_with_id)
