"""Credentials (``/v3/credentials``) and application credentials
(``/v3/users/{id}/application_credentials``), as Keystone's policies have them:

* a credential is its owner's and the admin's: anyone may make, read, change
  and delete their own; a listing shows a non-admin only their own;
* an application credential is made only by its user, for the project their
  token is scoped to (not from a restricted application credential's token);
  its user and the admin may list, read and delete it. Its secret is returned
  once, on create, and never again.
"""
from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.context import RequestContext
from cirrus.exception import Forbidden, ValidationError
from cirrus.identity import app_credentials, credentials, schema
from cirrus.identity.app_credentials import NewCredential
from cirrus.identity.exception import (ApplicationCredentialNotFound, CredentialNotFound,
                                       UserNotFound)
from cirrus.identity.http import base, lifetime, listing, path_id, query, rounds
from cirrus.identity.passwords import hash_password

F = schema.CATALOG_FIELDS


def _owner_or_admin(ctx: RequestContext, user_id: str, action: str) -> None:
    if user_id != ctx.user_id and not ctx.is_admin:
        raise Forbidden(action=action)


def credential_view(request: Request, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "user_id": row["user_id"], "project_id": row["project_id"],
            "type": row["type"], "blob": row["blob"],
            "links": {"self": f"{base(request)}/credentials/{row['id']}"}}


def _cipher(request: Request) -> Any:
    return request.app.state.identity.blob_cipher


async def list_credentials(request: Request) -> Response:
    ctx = context(request)
    user_id = query(request, "user_id")
    if not ctx.is_admin:
        if user_id not in (None, ctx.user_id):
            return reply(listing(request, "credentials", []))
        user_id = ctx.user_id
    rows = await request.app.state.db.read(credentials.listing, _cipher(request), user_id,
                                           query(request, "type", schema.NAME_MAX))
    return reply(listing(request, "credentials", [credential_view(request, r) for r in rows]))


async def create_credential(request: Request) -> Response:
    ctx = context(request)
    values = schema.resource_body(await json_body(request), "credential", F["credential"],
                                  ("user_id", "type", "blob"))
    _owner_or_admin(ctx, values["user_id"], "identity:create_credential")
    row = await request.app.state.db.run(credentials.create, values, _cipher(request))
    return reply({"credential": credential_view(request, row)}, status=201)


def _credential(request: Request) -> tuple[RequestContext, str]:
    return context(request), path_id(request, "id", CredentialNotFound, "credential_id")


async def show_credential(request: Request) -> Response:
    ctx, ident = _credential(request)
    row = await request.app.state.db.read(credentials.get, ident, _cipher(request))
    if row["user_id"] != ctx.user_id and not ctx.is_admin:
        raise CredentialNotFound(credential_id=ident)
    return reply({"credential": credential_view(request, row)})


async def update_credential(request: Request) -> Response:
    ctx, ident = _credential(request)
    values = schema.resource_body(await json_body(request), "credential", F["credential"])
    cipher = _cipher(request)

    def update(conn: sa.Connection) -> dict[str, Any]:
        row = credentials.get(conn, ident, cipher)
        if row["user_id"] != ctx.user_id and not ctx.is_admin:
            raise CredentialNotFound(credential_id=ident)
        _owner_or_admin(ctx, values.get("user_id", row["user_id"]),
                        "identity:update_credential")
        return credentials.update(conn, ident, values, cipher)
    row = await request.app.state.db.run(update)
    return reply({"credential": credential_view(request, row)})


async def delete_credential(request: Request) -> Response:
    ctx, ident = _credential(request)
    cipher = _cipher(request)

    def delete(conn: sa.Connection) -> None:
        if credentials.get(conn, ident, cipher)["user_id"] != ctx.user_id and not ctx.is_admin:
            raise CredentialNotFound(credential_id=ident)
        credentials.delete(conn, ident)
    await request.app.state.db.run(delete)
    return no_content()


# -- application credentials ------------------------------------------------------------

def app_cred_view(request: Request, row: dict[str, Any], secret: str | None = None
                  ) -> dict[str, Any]:
    expires = row["expires_at"]
    out = {"id": row["id"], "name": row["name"], "user_id": row["user_id"],
           "project_id": row["project_id"], "description": row["description"],
           "expires_at": expires.isoformat() if expires else None,
           "unrestricted": row["unrestricted"],
           "roles": [{"id": r["id"], "name": r["name"], "domain_id": r["domain_id"]}
                     for r in row["roles"]],
           "access_rules": [],
           "links": {"self": f"{base(request)}/users/{row['user_id']}/application_credentials/"
                             f"{row['id']}"}}
    if secret is not None:
        out["secret"] = secret
    return out


def _expires(value: Any, where: str) -> dt.datetime | None:
    """An ISO 8601 time, kept as naive UTC like every stored time."""
    if value is None:
        return None
    text = schema.text(value, where, 64)
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(field=where, reason="must be an ISO 8601 time") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return parsed


def _role_refs(value: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise ValidationError(field=where, reason="must be a list of {id} or {name}")
    out = []
    for item in value:
        if not isinstance(item, dict) or not ({"id", "name"} & set(item)):
            raise ValidationError(field=where, reason="each role needs an id or a name")
        out.append({k: schema.text(item[k], f"{where}/{k}", schema.NAME_MAX)
                    for k in ("id", "name") if k in item})
    return out


APP_CRED_FIELDS: dict[str, schema.Check] = {
    "name": schema.FIELDS["group"]["name"], "description": schema.FIELDS["group"]["description"],
    "secret": lambda v, w: None if v is None else schema.text(v, w, schema.PASSWORD_MAX,
                                                              blank=False, nul=True),
    "expires_at": _expires, "unrestricted": schema.boolean, "roles": _role_refs,
}


def _user_id(request: Request) -> str:
    return path_id(request, "id", UserNotFound, "user_id")


async def _may_create(request: Request, ctx: RequestContext, user_id: str) -> None:
    """Only the user, from a token scoped to a project, and not one a
    restricted application credential made (Keystone's rules)."""
    if user_id != ctx.user_id:
        raise Forbidden(action="identity:create_application_credential")
    if ctx.project_id is None:
        raise ValidationError(field="application_credential",
                              reason="needs a token scoped to a project")
    data = await request.app.state.identity.validate(ctx.auth_token or "")
    if data.app_cred_id:
        raise Forbidden(action="identity:create_application_credential")


async def create_app_cred(request: Request) -> Response:
    ctx, user_id = context(request), _user_id(request)
    values = schema.resource_body(await json_body(request), "application_credential",
                                  APP_CRED_FIELDS, ("name",))
    await _may_create(request, ctx, user_id)
    secret = values.get("secret") or app_credentials.new_secret()
    secret_hash = await asyncio.to_thread(hash_password, secret, rounds(request))
    assert ctx.project_id is not None
    req = NewCredential(user_id=user_id, project_id=ctx.project_id, name=values["name"],
                        description=values.get("description"), secret_hash=secret_hash,
                        expires_at=values.get("expires_at"),
                        unrestricted=values.get("unrestricted", False),
                        roles=values.get("roles") or [])
    row = await request.app.state.db.run(app_credentials.create, req)
    return reply({"application_credential": app_cred_view(request, row, secret)}, status=201)


async def list_app_creds(request: Request) -> Response:
    ctx, user_id = context(request), _user_id(request)
    _owner_or_admin(ctx, user_id, "identity:list_application_credentials")
    rows = await request.app.state.db.read(app_credentials.listing, user_id,
                                           query(request, "name", schema.NAME_MAX))
    return reply(listing(request, "application_credentials",
                         [app_cred_view(request, r) for r in rows]))


def _app_cred_ids(request: Request) -> tuple[RequestContext, str, str]:
    ctx, user_id = context(request), _user_id(request)
    _owner_or_admin(ctx, user_id, "identity:get_application_credential")
    return ctx, user_id, path_id(request, "cid", ApplicationCredentialNotFound,
                                 "application_credential_id")


async def show_app_cred(request: Request) -> Response:
    _, user_id, ident = _app_cred_ids(request)
    row = await request.app.state.db.read(app_credentials.get, user_id, ident)
    return reply({"application_credential": app_cred_view(request, row)})


async def delete_app_cred(request: Request) -> Response:
    _, user_id, ident = _app_cred_ids(request)
    await request.app.state.db.run(app_credentials.delete, user_id, ident,
                                   lifetime=lifetime(request))
    return no_content()


ROUTES = [
    Route("/v3/credentials", list_credentials, methods=["GET"]),
    Route("/v3/credentials", create_credential, methods=["POST"]),
    Route("/v3/credentials/{id}", show_credential, methods=["GET"]),
    Route("/v3/credentials/{id}", update_credential, methods=["PATCH"]),
    Route("/v3/credentials/{id}", delete_credential, methods=["DELETE"]),
    Route("/v3/users/{id}/application_credentials", list_app_creds, methods=["GET"]),
    Route("/v3/users/{id}/application_credentials", create_app_cred, methods=["POST"]),
    Route("/v3/users/{id}/application_credentials/{cid}", show_app_cred, methods=["GET"]),
    Route("/v3/users/{id}/application_credentials/{cid}", delete_app_cred,
          methods=["DELETE"]),
]
