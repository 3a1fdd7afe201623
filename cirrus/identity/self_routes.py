"""What a user does for themself: the scopes they may ask a token for
(``/v3/auth/projects|domains|system``) and a change of their own password.

A password change carries the original password, not an admin's say-so: as
Keystone, it needs no token (a user whose token expired may still change it),
and a wrong original is 401. The new hash is made before the write, off the
event loop; the user's tokens are revoked with it (``admin.update``).
"""
from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.exception import ValidationError
from cirrus.identity import admin, assignments, schema
from cirrus.identity.exception import Unauthorized, UserNotFound
from cirrus.identity.http import lifetime, listing, path_id, rounds
from cirrus.identity.passwords import hash_password
from cirrus.identity.views import view


async def auth_projects(request: Request) -> Response:
    ctx = context(request)
    rows = await request.app.state.db.read(admin.projects_of, ctx.user_id)
    return reply(listing(request, "projects", [view(request, "project", r) for r in rows]))


async def auth_domains(request: Request) -> Response:
    """The domains the caller holds a role on (Keystone's: not every domain)."""
    ctx = context(request)
    rows = await request.app.state.db.read(admin.domains_of, ctx.user_id)
    return reply(listing(request, "domains", [view(request, "domain", r) for r in rows]))


async def auth_system(request: Request) -> Response:
    """``[{"all": true}]`` if the caller holds a role on the system."""
    ctx = context(request)
    target = assignments.Target(system=assignments.SYSTEM)
    roles = await request.app.state.db.read(assignments.effective_roles, ctx.user_id, target)
    return reply(listing(request, "system", [{"all": True}] if roles else []))


def password_change(body: Any) -> tuple[str, str]:
    """(original, new) of ``{"user": {"original_password", "password"}}``."""
    user = body.get("user") if isinstance(body, dict) else None
    if not isinstance(user, dict):
        raise ValidationError(field="user", reason="'user' is a required object")
    out = []
    for key in ("original_password", "password"):
        if key not in user:
            raise ValidationError(field=f"user/{key}", reason="is required")
        out.append(schema.text(user[key], f"user/{key}", schema.PASSWORD_MAX, nul=True))
    return out[0], out[1]


async def change_password(request: Request) -> Response:
    user_id = path_id(request, "id", UserNotFound, "user_id")
    original, new = password_change(await json_body(request))
    db, identity = request.app.state.db, request.app.state.identity
    try:
        user = await db.read(admin.get, "user", user_id)
    except UserNotFound:
        raise Unauthorized("The request you have made requires authentication.") from None
    await identity.check_password(user, original)
    new_hash = await asyncio.to_thread(hash_password, new, rounds(request))

    def save(conn: sa.Connection) -> None:
        # Only over the hash that was checked: a change in between wins.
        current = admin.get(conn, "user", user_id)
        if current["password_hash"] != user["password_hash"]:
            raise Unauthorized("The request you have made requires authentication.")
        admin.update(conn, "user", user_id, {"password_hash": new_hash},
                     lifetime=lifetime(request))
    await db.run(save)
    return no_content()


ROUTES = [
    Route("/v3/auth/projects", auth_projects, methods=["GET"]),
    Route("/v3/auth/domains", auth_domains, methods=["GET"]),
    Route("/v3/auth/system", auth_system, methods=["GET"]),
    Route("/v3/users/{id}/password", change_password, methods=["POST"]),
]
