"""Authentication: ``X-Auth-Token`` (or a metadata proxy's signature) to a
RequestContext, or a 401.

Version documents and token creation are public; everything else needs a
valid token. :class:`cirrus.api.asgi.ApiApp` calls :func:`authenticate`
first for every request.
"""
from __future__ import annotations

import re
from dataclasses import replace

from typing import Mapping

from starlette.responses import Response
from starlette.types import Scope

from cirrus import log
from cirrus.api.errors import error_response, style_for_path
from cirrus.api.metadata.auth import is_metadata, signed_context
from cirrus.dashboard import is_dashboard
from cirrus.exception import CirrusException

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


def server_of(path: str) -> str | None:
    """The server a compute request's path names, if any."""
    match = _SERVER_PATH.match(path)
    return match.group(1) if match else None


def is_public(method: str, path: str) -> bool:
    if path in PUBLIC_PATHS or is_dashboard(path):  # the dashboard's files hold no data
        return True
    if method != "POST":
        return False
    # Logging in; changing one's password, which takes the original (Keystone's:
    # a user whose token or password expired can still change it).
    return path == "/identity/v3/auth/tokens" or _PASSWORD_PATH.fullmatch(path) is not None


def first_header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first ``name`` header (lower case) of an ASGI header list."""
    for key, value in headers:
        if key == name:
            return value
    return None


async def authenticate(scope: Scope, headers: Mapping[bytes, bytes], request_id: str,
                       global_id: str | None) -> Response | None:
    """Give the request its caller: ``scope["state"]["context"]`` for a signed
    metadata request or a valid ``X-Auth-Token``. Returns the family's 401 for
    a missing or refused token, None when the request may go on (public paths
    go on without a context). ``headers`` maps each name to its last value."""
    state = scope["state"]
    path = scope["path"]
    if is_metadata(path):  # guests' requests, signed by the proxy instead of a token
        ctx = signed_context(headers, scope["app"].state.metadata.secret)
        if ctx is not None:
            ctx.request_id, ctx.global_request_id = request_id, global_id
            state["context"] = ctx
        return None
    if is_public(scope["method"], path):
        return None
    token = headers.get(b"x-auth-token")
    identity = scope["app"].state.identity
    try:
        if not token or not token.isascii():  # Fernet tokens are base64 text
            raise CirrusException("The request you have made requires authentication.")
        data = await identity.validate(token.decode())
    except CirrusException as exc:
        return error_response(401, exc.format_message() if token else
                              "The request you have made requires authentication.",
                              style_for_path(path),
                              headers={"WWW-Authenticate": "Keystone uri=\"%s\"" %
                                       (scope["app"].state.settings.public_url + "/identity")})
    ctx = identity.context_for(data, token.decode())
    ctx.request_id, ctx.global_request_id = request_id, global_id
    state["context"] = ctx
    log.current.set(replace(log.current.get(), project_id=ctx.project_id))
    return None
