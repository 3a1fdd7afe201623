"""Compute API microversions: parsing the request header, answering with it.

cirrus serves 2.1 up to :data:`MAX_VERSION`. A handler asks
``api_version(request) >= (2, 47)`` where a response changes shape.
"""
from __future__ import annotations

import functools
import re

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from cirrus.exception import CirrusException, NotFound

MIN_VERSION = (2, 1)
MAX_VERSION = (2, 92)
_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")
# Longer numbers are well-formed but far past MAX_VERSION: 406 without
# converting them (int() of thousands of digits is refused, and slow).
_MAX_DIGITS = 6


class VersionNotAcceptable(CirrusException):
    code = 406
    msg_fmt = "Version %(version)s is not supported by the API. Minimum is %(min)s and maximum is %(max)s."


class InvalidVersion(CirrusException):
    code = 400
    msg_fmt = "API Version String %(version)s is of invalid format. Must be of format MajorNum.MinorNum."


def fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _requested(request: Request) -> str | None:
    return _requested_in(request.headers.get("openstack-api-version"),
                         request.headers.get("x-openstack-nova-api-version"))


def _requested_in(value: str | None, legacy: str | None) -> str | None:
    """The compute version asked for in ``OpenStack-API-Version`` (``value``),
    else in ``X-OpenStack-Nova-API-Version`` (``legacy``)."""
    if value:
        for part in value.split(","):
            service, _, ver = part.strip().partition(" ")
            if service.lower() == "compute":
                return ver.strip()
    return legacy


def parse(request: Request) -> tuple[int, int]:
    """The version the client asked for (default 2.1); 400/406 if unusable."""
    return _parse(_requested(request))


def _parse(raw: str | None) -> tuple[int, int]:
    if not raw:
        return MIN_VERSION
    raw = raw.strip()
    if raw.lower() == "latest":
        return MAX_VERSION
    match = _RE.match(raw)
    if not match:
        raise InvalidVersion(version=raw[:64])
    if max(len(match.group(1)), len(match.group(2))) > _MAX_DIGITS:
        raise VersionNotAcceptable(version=raw[:32] + "…", min=fmt(MIN_VERSION), max=fmt(MAX_VERSION))
    version = (int(match.group(1)), int(match.group(2)))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise VersionNotAcceptable(version=raw, min=fmt(MIN_VERSION), max=fmt(MAX_VERSION))
    return version


def api_version(request: Request) -> tuple[int, int]:
    """The negotiated version of this request (cached on the request)."""
    version = getattr(request.state, "api_version", None)
    if version is None:
        version = parse(request)
        request.state.api_version = version
    return version


class VersionNotFoundForAPIMethod(NotFound):
    """A resource of a later microversion than the request's: Nova's 404."""

    msg_fmt = "The resource could not be found."


def require(request: Request, minimum: tuple[int, int]) -> tuple[int, int]:
    """The request's version; :class:`VersionNotFoundForAPIMethod` (404) if
    it is below ``minimum``, where the resource does not exist yet."""
    version = api_version(request)
    if version < minimum:
        raise VersionNotFoundForAPIMethod()
    return version


def until(request: Request, maximum: tuple[int, int]) -> tuple[int, int]:
    """The request's version; :class:`VersionNotFoundForAPIMethod` (404) if
    it is above ``maximum``, where the resource is gone."""
    version = api_version(request)
    if version > maximum:
        raise VersionNotFoundForAPIMethod()
    return version


def response_headers(version: tuple[int, int]) -> dict[str, str]:
    v = fmt(version)
    return {"OpenStack-API-Version": f"compute {v}", "X-OpenStack-Nova-API-Version": v,
            "Vary": "OpenStack-API-Version, X-OpenStack-Nova-API-Version"}


@functools.lru_cache(maxsize=256)
def negotiate(value: bytes | None, legacy: bytes | None
              ) -> tuple[tuple[int, int], list[tuple[bytes, bytes]]]:
    """(version, response headers) for the raw request headers: clients send a
    handful of distinct values, so each is parsed once (errors are not kept).
    Raises :class:`InvalidVersion` (400) or :class:`VersionNotAcceptable` (406)."""
    version = _parse(_requested_in(value.decode("latin-1") if value is not None else None,
                                   legacy.decode("latin-1") if legacy is not None else None))
    return version, [(k.lower().encode(), v.encode())
                     for k, v in response_headers(version).items()]


class MicroversionMiddleware:
    """Negotiates the version of every compute request and echoes it back
    (on the slow path, :class:`cirrus.api.asgi.ApiApp` does it itself)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from cirrus.api.errors import error_response
        from cirrus.api.wsgi import sending_headers

        # The first of each header, as Request.headers.get would find it.
        value = legacy = None
        for name, raw in scope["headers"]:
            if name == b"openstack-api-version":
                value = raw if value is None else value
            elif name == b"x-openstack-nova-api-version":
                legacy = raw if legacy is None else legacy
        try:
            version, extra = negotiate(value, legacy)
        except CirrusException as exc:
            await error_response(exc.code, exc.format_message(), "compute")(scope, receive, send)
            return
        scope.setdefault("state", {})["api_version"] = version
        await self.app(scope, receive, sending_headers(send, extra))
