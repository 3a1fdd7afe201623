"""Compute version documents (``/compute/``, ``/compute/v2`` and
``/compute/v2.1``): v2.1 with its microversions, and the legacy v2.0 entry
Nova still lists as SUPPORTED (no microversions: empty version strings).

Clients pick v2.1 from the list (keystoneauth: the highest; novaclient reads
the catalog's ``/compute/v2.1``). Only the v2.0 document is served under
``/compute/v2``: the API itself is at ``/compute/v2.1``."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import MAX_VERSION, MIN_VERSION, fmt
from cirrus.api.wsgi import reply

# id → (path, status, version, min_version, updated, media type version), as Nova's VERSIONS.
VERSIONS: dict[str, tuple[str, str, str, str, str, str]] = {
    "v2.0": ("v2", "SUPPORTED", "", "", "2011-01-21T11:33:21Z", "2"),
    "v2.1": ("v2.1", "CURRENT", fmt(MAX_VERSION), fmt(MIN_VERSION), "2013-07-23T11:33:21Z",
             "2.1"),
}


def _self_link(request: Request, path: str) -> dict[str, str]:
    base = request.app.state.settings.public_url.rstrip("/")
    return {"rel": "self", "href": f"{base}/compute/{path}/"}


def _summary(request: Request, ident: str) -> dict[str, Any]:
    """A version as ``GET /`` lists it (its self link only)."""
    path, status, version, min_version, updated, _media = VERSIONS[ident]
    return {"id": ident, "status": status, "version": version, "min_version": min_version,
            "updated": updated, "links": [_self_link(request, path)]}


def _document(request: Request, ident: str) -> dict[str, Any]:
    """A version's own document: its links and media types too."""
    media = VERSIONS[ident][5]
    out = _summary(request, ident)
    out["links"].append({"rel": "describedby", "type": "text/html",
                         "href": "http://docs.openstack.org/"})
    out["media-types"] = [{"base": "application/json",
                           "type": f"application/vnd.openstack.compute+json;version={media}"}]
    return out


async def versions(request: Request) -> Response:
    return reply({"versions": [_summary(request, ident) for ident in VERSIONS]})


async def version_v2(request: Request) -> Response:
    return reply({"version": _document(request, "v2.0")})


async def version_v21(request: Request) -> Response:
    return reply({"version": _document(request, "v2.1")})


ROUTES = [
    Route("/", versions, methods=["GET"]),
    Route("/v2", version_v2, methods=["GET"]),
    Route("/v2/", version_v2, methods=["GET"]),
    Route("/v2.1", version_v21, methods=["GET"]),
    Route("/v2.1/", version_v21, methods=["GET"]),
]
