"""Compute API microversions: parsing the request header, answering with it.

cirrus serves 2.1 up to :data:`MAX_VERSION`. A handler asks
``api_version(request) >= (2, 47)`` where a response changes shape.
"""
from __future__ import annotations

import re

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from cirrus.exception import CirrusException

MIN_VERSION = (2, 1)
MAX_VERSION = (2, 90)
_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")


class VersionNotAcceptable(CirrusException):
    code = 406
    msg_fmt = "Version %(version)s is not supported by the API. Minimum is %(min)s and maximum is %(max)s."


class InvalidVersion(CirrusException):
    code = 400
    msg_fmt = "API Version String %(version)s is of invalid format. Must be of format MajorNum.MinorNum."


def fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def _requested(request: Request) -> str | None:
    value = request.headers.get("openstack-api-version")
    if value:
        for part in value.split(","):
            service, _, ver = part.strip().partition(" ")
            if service.lower() == "compute":
                return ver.strip()
    return request.headers.get("x-openstack-nova-api-version")


def parse(request: Request) -> tuple[int, int]:
    """The version the client asked for (default 2.1); 400/406 if unusable."""
    raw = _requested(request)
    if not raw:
        return MIN_VERSION
    raw = raw.strip()
    if raw.lower() == "latest":
        return MAX_VERSION
    match = _RE.match(raw)
    if not match:
        raise InvalidVersion(version=raw)
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


def response_headers(version: tuple[int, int]) -> dict[str, str]:
    v = fmt(version)
    return {"OpenStack-API-Version": f"compute {v}", "X-OpenStack-Nova-API-Version": v,
            "Vary": "OpenStack-API-Version, X-OpenStack-Nova-API-Version"}


class MicroversionMiddleware:
    """Negotiates the version of every compute request and echoes it back."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from cirrus.api.errors import error_response
        from cirrus.api.wsgi import sending_headers

        request = Request(scope)
        try:
            version = parse(request)
        except CirrusException as exc:
            await error_response(exc.code, exc.format_message(), "compute")(scope, receive, send)
            return
        scope.setdefault("state", {})["api_version"] = version
        extra = [(k.lower().encode(), v.encode()) for k, v in response_headers(version).items()]

        send_with_version = sending_headers(send, extra)
        await self.app(scope, receive, send_with_version)
