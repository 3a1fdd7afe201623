"""Application credentials: a user delegates (some of) their roles on one
project to an application, which authenticates with the credential's id (or
its name and the user) and a secret.

Only the secret's hash is kept (:mod:`cirrus.identity.passwords`, hashed off
the event loop before the write); the secret is shown once, on create. A
credential holds only roles its user holds on its project when made, and a
token from it carries those of them the user still holds. Every token made
from one shares an audit chain named by the credential's id, so deleting the
credential (or its user losing a role) revokes them (:func:`delete`).
"""
from __future__ import annotations

import base64
import datetime as dt
import os
import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import ValidationError
from cirrus.identity import admin, assignments, revocation
from cirrus.identity import models as m
from cirrus.identity.exception import (ApplicationCredentialNotFound, DuplicateEntry,
                                       ForbiddenAction)
from cirrus.identity.revocation import RevokeEvent

AC, ACR = m.application_credentials, m.application_credential_roles


@dataclass(frozen=True)
class NewCredential:
    """A checked create request: who, on which project, with what."""

    user_id: str
    project_id: str
    name: str
    description: str | None
    secret_hash: str
    expires_at: dt.datetime | None
    unrestricted: bool
    roles: list[dict[str, str]]  # each {"id": …} or {"name": …}, as asked


def new_secret() -> str:
    """A secret for a credential made without one: 64 random bytes, url-safe."""
    return base64.urlsafe_b64encode(os.urandom(64)).decode().rstrip("=")


def _roles(conn: sa.Connection, ident: str) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(m.roles.c.id, m.roles.c.name, m.roles.c.domain_id)
                     .join(ACR, ACR.c.role_id == m.roles.c.id)
                     .where(ACR.c.application_credential_id == ident)
                     .order_by(m.roles.c.name))


def get(conn: sa.Connection, user_id: str | None, ident: str) -> dict[str, Any]:
    """The credential with its roles; 404 unless it is ``user_id``'s (any
    user's when None)."""
    q = sa.select(AC).where(AC.c.id == ident)
    if user_id is not None:
        q = q.where(AC.c.user_id == user_id)
    row = fetch_one(conn, q)
    if row is None:
        raise ApplicationCredentialNotFound(application_credential_id=ident)
    return {**row, "roles": _roles(conn, ident)}


def find(conn: sa.Connection, user_id: str, name: str) -> dict[str, Any] | None:
    row = fetch_one(conn, sa.select(AC).where(AC.c.user_id == user_id, AC.c.name == name))
    return None if row is None else get(conn, None, row["id"])


def listing(conn: sa.Connection, user_id: str, name: str | None) -> list[dict[str, Any]]:
    admin.get(conn, "user", user_id)
    q = sa.select(AC.c.id).where(AC.c.user_id == user_id).order_by(AC.c.created_at, AC.c.id)
    if name is not None:
        q = q.where(AC.c.name == name)
    return [get(conn, None, r.id) for r in conn.execute(q)]


def _chosen_roles(conn: sa.Connection, req: NewCredential) -> list[str]:
    """Ids of the asked roles (all the user's on the project when none are
    asked); 403 for one the user does not hold there."""
    held = assignments.effective_roles(conn, req.user_id, assignments.Target(
        project_id=req.project_id))
    if not req.roles:
        return [r["id"] for r in held]
    chosen = []
    for ref in req.roles:
        match = [r for r in held if r["id"] == ref.get("id") or r["name"] == ref.get("name")]
        if not match:
            raise ForbiddenAction(reason=f"the user does not hold role {ref} on the project")
        chosen.append(match[0]["id"])
    return list(dict.fromkeys(chosen))


def create(conn: sa.Connection, req: NewCredential) -> dict[str, Any]:
    if req.expires_at is not None and req.expires_at <= utcnow():
        raise ValidationError(field="application_credential/expires_at",
                              reason="is in the past")
    roles = _chosen_roles(conn, req)
    ident = uuid.uuid4().hex
    try:
        with conn.begin_nested():
            conn.execute(AC.insert().values(
                id=ident, name=req.name, user_id=req.user_id, project_id=req.project_id,
                description=req.description, secret_hash=req.secret_hash,
                expires_at=req.expires_at, unrestricted=req.unrestricted, created_at=utcnow()))
    except sa.exc.IntegrityError:
        raise DuplicateEntry(kind="application_credential") from None
    if roles:
        conn.execute(ACR.insert(), [{"application_credential_id": ident, "role_id": r}
                                    for r in roles])
    return get(conn, None, ident)


def delete(conn: sa.Connection, user_id: str | None, ident: str, *, lifetime: float) -> None:
    """Delete it and revoke the tokens made from it."""
    get(conn, user_id, ident)
    conn.execute(AC.delete().where(AC.c.id == ident))
    revocation.record(conn, [RevokeEvent(audit_chain_id=ident)], lifetime)


def usable(conn: sa.Connection, row: dict[str, Any]) -> list[str]:
    """Names of the roles a token from ``row`` carries: those it holds that
    its user still holds on its project; none if it expired."""
    expires = row["expires_at"]
    if expires is not None and expires <= utcnow():
        return []
    held = {r["id"] for r in assignments.effective_roles(
        conn, row["user_id"], assignments.Target(project_id=row["project_id"]))}
    return [r["name"] for r in row["roles"] if r["id"] in held]
