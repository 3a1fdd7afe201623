"""The web dashboard: static pages the API serves under ``/dashboard``.

The pages hold no data. The browser logs in against the identity API and
reads everything else from the public APIs with the user's token, so the
same policies apply as for any other client (docs/dashboard.md). The route is
therefore public; what it serves is locked down by its headers: a content
security policy that allows only this origin's scripts, styles and requests
(no inline script, no third party), no framing and no referrer.
"""
from __future__ import annotations

from pathlib import Path

from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from cirrus.api.wsgi import sending_headers

PREFIX = "/dashboard"
STATIC_DIR = Path(__file__).parent / "static"

CONTENT_SECURITY_POLICY = ("default-src 'self'; base-uri 'none'; form-action 'self'; "
                           "frame-ancestors 'none'; object-src 'none'")

HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    # The files change with cirrus; a browser asks again rather than run old code
    # against a newer API.
    (b"cache-control", b"no-cache"),
]


def is_dashboard(path: str) -> bool:
    """Whether ``path`` is one of the dashboard's (public) files."""
    return path == PREFIX or path.startswith(PREFIX + "/")


class _Secured:
    """``app`` whose every response carries :data:`HEADERS`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, sending_headers(send, HEADERS))


def static_app() -> ASGIApp:
    """The ASGI app to mount at :data:`PREFIX`: the static files, ``index.html``
    for the directory, each response with the security headers."""
    return _Secured(StaticFiles(directory=STATIC_DIR, html=True))
