"""Compute version documents (``/compute/`` and ``/compute/v2.1``)."""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import MAX_VERSION, MIN_VERSION, fmt
from cirrus.api.wsgi import reply

UPDATED = "2013-07-23T11:33:21Z"


def _v21(request: Request) -> dict:
    base = request.app.state.settings.public_url.rstrip("/")
    return {"id": "v2.1", "status": "CURRENT", "version": fmt(MAX_VERSION),
            "min_version": fmt(MIN_VERSION), "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base}/compute/v2.1/"},
                      {"rel": "describedby", "type": "text/html",
                       "href": "http://docs.openstack.org/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.compute+json;version=2.1"}]}


async def versions(request: Request) -> Response:
    return reply({"versions": [_v21(request)]})


async def version_v21(request: Request) -> Response:
    return reply({"version": _v21(request)})


ROUTES = [
    Route("/", versions, methods=["GET"]),
    Route("/v2.1", version_v21, methods=["GET"]),
    Route("/v2.1/", version_v21, methods=["GET"]),
]
