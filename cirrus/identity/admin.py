"""Identity administration: domains, projects, users, roles, assignments.

A change that withdraws access records its revocation events in its own
transaction (:mod:`cirrus.identity.revocation`): disabling, deleting or
re-passwording a user, disabling or deleting a project, removing a role from
a user, renaming or deleting a role. ``lifetime`` is the longest a token lives
(``token_expiration``): events older than that are pruned as new ones come.
"""
from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import ValidationError
from cirrus.identity import models as m
from cirrus.identity import revocation
from cirrus.identity.exception import (DomainNotFound, DuplicateEntry, ProjectNotFound,
                                       RoleNotFound, UserNotFound)
from cirrus.identity.revocation import RevokeEvent
from cirrus.identity.passwords import hash_password

TABLES = {"project": (m.projects, ProjectNotFound, "project_id"),
          "user": (m.users, UserNotFound, "user_id"),
          "role": (m.roles, RoleNotFound, "role_id"),
          "domain": (m.domains, DomainNotFound, "domain_id")}


def get(conn: sa.Connection, kind: str, ident: str) -> dict[str, Any]:
    table, missing, key = TABLES[kind]
    row = fetch_one(conn, sa.select(table).where(table.c.id == ident))
    if row is None:
        raise missing(**{key: ident})
    return row


def list_rows(conn: sa.Connection, kind: str, filters: dict[str, Any]) -> list[dict[str, Any]]:
    table = TABLES[kind][0]
    q = sa.select(table)
    for key, value in filters.items():
        if value is not None and key in table.c:
            q = q.where(table.c[key] == value)
    return fetch_all(conn, q.order_by(table.c.name))


def with_password_hashed(values: dict[str, Any], creating: bool, rounds: int) -> dict[str, Any]:
    """``values`` with a ``password`` replaced by its ``password_hash`` of cost
    ``rounds`` (an empty one on create: no password). scrypt takes tens of ms of
    CPU: hash before the write transaction, off the event loop, never inside it."""
    if "password" not in values:
        return values
    values = dict(values)
    password = values.pop("password")
    values["password_hash"] = hash_password(password, rounds) if password or not creating else None
    return values


def create(conn: sa.Connection, kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """A new ``kind`` row; a password comes hashed (:func:`with_password_hashed`)."""
    table = TABLES[kind][0]
    values = dict(values)
    if kind != "role":
        get(conn, "domain", values.setdefault("domain_id", "default"))
    ident = uuid.uuid4().hex
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(id=ident, created_at=utcnow(), **values))
    except sa.exc.IntegrityError:
        raise DuplicateEntry(kind=kind) from None
    return get(conn, kind, ident)


def update(conn: sa.Connection, kind: str, ident: str, values: dict[str, Any], *,
           lifetime: float) -> dict[str, Any]:
    """``ident`` updated; a password comes hashed (:func:`with_password_hashed`).
    A project's or user's domain stays (400, as Keystone)."""
    table = TABLES[kind][0]
    row = get(conn, kind, ident)
    if values.get("domain_id", row.get("domain_id")) != row.get("domain_id"):
        raise ValidationError(field=f"{kind}/domain_id", reason="cannot be changed")
    if values:
        try:
            with conn.begin_nested():
                conn.execute(table.update().where(table.c.id == ident).values(
                    updated_at=utcnow(), **values))
        except sa.exc.IntegrityError:
            raise DuplicateEntry(kind=kind) from None
    revocation.record(conn, _update_events(kind, row, values), lifetime)
    return get(conn, kind, ident)


def _update_events(kind: str, row: dict[str, Any], values: dict[str, Any]) -> list[RevokeEvent]:
    """What an update withdraws: a user's tokens when disabled or given a new
    password, a project's when disabled, a role's (by its old name) when renamed."""
    if kind == "user" and (values.get("enabled") is False or "password_hash" in values):
        return [RevokeEvent(user_id=row["id"])]
    if kind == "project" and values.get("enabled") is False:
        return [RevokeEvent(project_id=row["id"])]
    if kind == "role" and values.get("name", row["name"]) != row["name"]:
        return [RevokeEvent(role=row["name"])]
    return []


_DELETE_EVENT = {"user": lambda row: RevokeEvent(user_id=row["id"]),
                 "project": lambda row: RevokeEvent(project_id=row["id"]),
                 "role": lambda row: RevokeEvent(role=row["name"])}


def delete(conn: sa.Connection, kind: str, ident: str, *, lifetime: float) -> None:
    """Delete ``ident`` and its role assignments; its tokens go with it."""
    table = TABLES[kind][0]
    row = get(conn, kind, ident)
    ra = m.role_assignments
    column = {"project": ra.c.project_id, "user": ra.c.user_id, "role": ra.c.role_id}.get(kind)
    if column is not None:
        conn.execute(ra.delete().where(column == ident))
    conn.execute(table.delete().where(table.c.id == ident))
    if kind in _DELETE_EVENT:
        revocation.record(conn, [_DELETE_EVENT[kind](row)], lifetime)


def assignments(conn: sa.Connection, user_id: str | None = None, project_id: str | None = None,
                role_id: str | None = None, domain_id: str | None = None) -> list[dict[str, Any]]:
    ra = m.role_assignments
    q = sa.select(ra)
    for column, value in ((ra.c.user_id, user_id), (ra.c.project_id, project_id),
                          (ra.c.role_id, role_id), (ra.c.domain_id, domain_id)):
        if value is not None:
            q = q.where(column == value)
    return fetch_all(conn, q.order_by(ra.c.id))


def grant(conn: sa.Connection, user_id: str, role_id: str, *, project_id: str | None = None,
          domain_id: str | None = None) -> None:
    get(conn, "user", user_id)
    get(conn, "role", role_id)
    if project_id:
        get(conn, "project", project_id)
    if domain_id:
        get(conn, "domain", domain_id)
    if not assignments(conn, user_id, project_id, role_id, domain_id if not project_id else None):
        conn.execute(m.role_assignments.insert().values(
            user_id=user_id, role_id=role_id, project_id=project_id,
            domain_id=None if project_id else domain_id))


def revoke(conn: sa.Connection, user_id: str, role_id: str, *, project_id: str | None = None,
           domain_id: str | None = None, lifetime: float) -> bool:
    """Remove the user's role on the project or domain, and the tokens that
    carry it there; False if the user did not have it."""
    ra = m.role_assignments
    q = ra.delete().where(ra.c.user_id == user_id, ra.c.role_id == role_id)
    q = q.where(ra.c.project_id == project_id) if project_id else q.where(
        ra.c.domain_id == domain_id, ra.c.project_id.is_(None))
    if conn.execute(q).rowcount == 0:
        return False
    role = get(conn, "role", role_id)["name"]
    event = RevokeEvent(user_id=user_id, project_id=project_id, role=role) if project_id else \
        RevokeEvent(user_id=user_id, domain_id=domain_id, role=role)
    revocation.record(conn, [event], lifetime)
    return True


def projects_of(conn: sa.Connection, user_id: str) -> list[dict[str, Any]]:
    ra = m.role_assignments
    ids = {r.project_id for r in conn.execute(sa.select(ra.c.project_id).where(
        ra.c.user_id == user_id, ra.c.project_id.is_not(None)))}
    if not ids:
        return []
    return fetch_all(conn, sa.select(m.projects).where(m.projects.c.id.in_(ids))
                     .order_by(m.projects.c.name))


def domains_of(conn: sa.Connection, user_id: str) -> list[dict[str, Any]]:
    """The domains the user holds a role on (not through a project)."""
    ra = m.role_assignments
    ids = {r.domain_id for r in conn.execute(sa.select(ra.c.domain_id).where(
        ra.c.user_id == user_id, ra.c.domain_id.is_not(None)))}
    if not ids:
        return []
    return fetch_all(conn, sa.select(m.domains).where(m.domains.c.id.in_(ids))
                     .order_by(m.domains.c.name))
