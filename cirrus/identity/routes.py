"""Keystone v3 HTTP API: version document and tokens.

Projects, users, roles and assignments live in :mod:`cirrus.identity.admin_routes`.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import json_body, no_content, reply
from cirrus.identity import admin_routes
from cirrus.identity.exception import Unauthorized

UPDATED = "2024-04-01T00:00:00Z"
VERSION_ID = "v3.14"


def _version(request: Request) -> dict:
    base = request.app.state.settings.public_url.rstrip("/")
    return {"id": VERSION_ID, "status": "stable", "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base}/identity/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


async def versions(request: Request) -> Response:
    return reply({"versions": {"values": [_version(request)]}}, status=300)


async def version_v3(request: Request) -> Response:
    return reply({"version": _version(request)})


def _subject(request: Request) -> str:
    token = request.headers.get("x-subject-token")
    if not token:
        raise Unauthorized("X-Subject-Token header is required.")
    return token


async def issue_token(request: Request) -> Response:
    body = await json_body(request)
    identity = request.app.state.identity
    token, token_body = await identity.authenticate(body.get("auth") if isinstance(body, dict) else None)
    return reply(token_body, status=201, headers={"X-Subject-Token": token})


async def show_token(request: Request) -> Response:
    identity = request.app.state.identity
    token = _subject(request)
    data = await identity.validate(token)
    body = await identity.token_body(data)
    if request.method == "HEAD":
        return Response(status_code=200, headers={"X-Subject-Token": token})
    return reply(body, headers={"X-Subject-Token": token})


async def revoke_token(request: Request) -> Response:
    await request.app.state.identity.revoke(_subject(request))
    return no_content()


async def auth_catalog(request: Request) -> Response:
    return reply({"catalog": request.app.state.identity.catalog(),
                  "links": {"self": str(request.url)}})


ROUTES = [
    Route("/", versions, methods=["GET"]),
    Route("/v3", version_v3, methods=["GET"]),
    Route("/v3/", version_v3, methods=["GET"]),
    Route("/v3/auth/tokens", issue_token, methods=["POST"]),
    Route("/v3/auth/tokens", show_token, methods=["GET", "HEAD"]),
    Route("/v3/auth/tokens", revoke_token, methods=["DELETE"]),
    Route("/v3/auth/catalog", auth_catalog, methods=["GET"]),
    *admin_routes.ROUTES,
]

# Paths under /identity that need no token.
PUBLIC = {"/", "/v3", "/v3/", "/v3/auth/tokens"}
