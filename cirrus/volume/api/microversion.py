"""Block storage microversions (``OpenStack-API-Version: volume 3.x``) and
the project in the URL.

cirrus serves 3.0 to :data:`MAX_VERSION`; 3.67 (URLs without the project)
and later are not served, so every v3 URL names the project. A request
whose URL names a project other than the caller's is refused with 403
unless the caller is an admin (Cinder answers 400 "Malformed request url";
cirrus's rule is that another project's things are never reached by the
URL alone, and the policy matrix holds every family to 403/404 there).
"""
from __future__ import annotations

import re

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from cirrus.api.compute.microversion import VersionNotFoundForAPIMethod
from cirrus.api.errors import error_response
from cirrus.api.wsgi import sending_headers
from cirrus.exception import CirrusException, Forbidden

MIN_VERSION = (3, 0)
MAX_VERSION = (3, 66)
_RE = re.compile(r"^([1-9]\d{0,5})\.(0|[1-9]\d{0,5})$")
_PROJECT_PATH = re.compile(r"^/v3/([^/]+)(/|$)")


class VersionNotAcceptable(CirrusException):
    code = 406
    msg_fmt = "Version %(version)s is not supported by the API. Minimum is %(min)s and maximum is %(max)s."


class InvalidVersion(CirrusException):
    code = 400
    msg_fmt = "API Version String %(version)s is of invalid format. Must be of format MajorNum.MinorNum."


def fmt(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


def parse(header: str | None) -> tuple[int, int]:
    """The version ``header`` asks of the volume service (default 3.0)."""
    raw = None
    for part in (header or "").split(","):
        service, _, ver = part.strip().partition(" ")
        if service.lower() == "volume":
            raw = ver.strip()
    if not raw:
        return MIN_VERSION
    if raw.lower() == "latest":
        return MAX_VERSION
    match = _RE.match(raw)
    if not match:
        raise InvalidVersion(version=raw[:64])
    version = (int(match.group(1)), int(match.group(2)))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise VersionNotAcceptable(version=raw, min=fmt(MIN_VERSION), max=fmt(MAX_VERSION))
    return version


def api_version(request: Request) -> tuple[int, int]:
    return getattr(request.state, "api_version", MIN_VERSION)


def require(request: Request, minimum: tuple[int, int]) -> tuple[int, int]:
    """The request's version; 404 below ``minimum`` (the resource is not there yet)."""
    version = api_version(request)
    if version < minimum:
        raise VersionNotFoundForAPIMethod()
    return version


def _check_project(scope: Scope, path: str) -> None:
    match = _PROJECT_PATH.match(path)
    ctx = scope.get("state", {}).get("context")
    if match is None or ctx is None or ctx.is_admin:
        return
    if match.group(1) != ctx.project_id:
        raise Forbidden("The project in the URL is not the project of the token.")


class VolumeApiMiddleware:
    """Negotiates the version of each request, echoes it, checks the URL's project."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = next((raw.decode("latin-1") for name, raw in scope["headers"]
                       if name == b"openstack-api-version"), None)
        try:
            version = parse(header)
            path = scope["path"]
            _check_project(scope, path[path.find("/v3/"):] if "/v3/" in path else "")
        except CirrusException as exc:
            await error_response(exc.code, exc.format_message(), "compute")(scope, receive, send)
            return
        scope.setdefault("state", {})["api_version"] = version
        extra = [(b"openstack-api-version", f"volume {fmt(version)}".encode()),
                 (b"vary", b"OpenStack-API-Version")]
        await self.app(scope, receive, sending_headers(send, extra))
