"""Keystone v3 HTTP API: version document and tokens.

Projects, users, roles and assignments live in :mod:`cirrus.identity.admin_routes`.
"""
from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.exception import Forbidden
from cirrus.identity import admin_routes
from cirrus.identity.tokens import TokenData

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


async def issue_token(request: Request) -> Response:
    body = await json_body(request)
    identity = request.app.state.identity
    token, token_body = await identity.authenticate(body.get("auth") if isinstance(body, dict) else None)
    return reply(token_body, status=201, headers={"X-Subject-Token": token})


async def _subject(request: Request, action: str) -> tuple[str, TokenData]:
    """The ``X-Subject-Token`` and its data, if the caller may ``action`` it.

    As Keystone: the subject token is validated first (404 when missing, bad,
    expired or revoked), then the policy: its owner or an admin (else 403)."""
    ctx = context(request)
    token = request.headers.get("x-subject-token") or ""
    data = await request.app.state.identity.validate_subject(token)
    if not (ctx.is_admin or ctx.user_id == data.user_id):
        raise Forbidden(action=action)
    return token, data


async def show_token(request: Request) -> Response:
    """``GET`` (validate) and ``HEAD`` (check) of a token: its owner or an admin."""
    head = request.method == "HEAD"
    token, data = await _subject(request, "identity:check_token" if head
                                 else "identity:validate_token")
    if head:
        return Response(status_code=200, headers={"X-Subject-Token": token})
    body = await request.app.state.identity.token_body(data)
    return reply(body, headers={"X-Subject-Token": token})


async def revoke_token(request: Request) -> Response:
    """Revoke a token and (unless ``?cascade=false``) those rescoped from it."""
    _, data = await _subject(request, "identity:revoke_token")
    cascade = request.query_params.get("cascade", "true").lower() not in ("false", "0", "no")
    await request.app.state.identity.revoke(data, cascade=cascade)
    return no_content()


async def auth_catalog(request: Request) -> Response:
    ctx = getattr(request.state, "context", None)
    return reply({"catalog": request.app.state.identity.catalog(ctx.project_id if ctx else None),
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
