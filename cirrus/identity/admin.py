"""Identity administration: domains, projects, users, groups, roles.

A change that withdraws access records its revocation events in its own
transaction (:mod:`cirrus.identity.revocation`): disabling, deleting or
re-passwording a user, disabling or deleting a project, removing a role from
a user, renaming or deleting a role. ``lifetime`` is the longest a token lives
(``token_expiration``): events older than that are pruned as new ones come.
"""
from __future__ import annotations

import json
import uuid
from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import ValidationError
from cirrus.identity import models as m
from cirrus.identity import revocation
from cirrus.identity.exception import (DomainNotFound, DuplicateEntry, ForbiddenAction,
                                       GroupNotFound, ProjectNotFound, RoleNotFound,
                                       UserNotFound)
from cirrus.identity.revocation import RevokeEvent
from cirrus.identity.passwords import hash_password

TABLES = {"project": (m.projects, ProjectNotFound, "project_id"),
          "user": (m.users, UserNotFound, "user_id"),
          "role": (m.roles, RoleNotFound, "role_id"),
          "domain": (m.domains, DomainNotFound, "domain_id"),
          "group": (m.groups, GroupNotFound, "group_id")}


def get(conn: sa.Connection, kind: str, ident: str) -> dict[str, Any]:
    table, missing, key = TABLES[kind]
    row = fetch_one(conn, sa.select(table).where(table.c.id == ident))
    if row is None:
        raise missing(**{key: ident})
    return row


def acting_kind(conn: sa.Connection, kind: str, ident: str) -> str:
    """``domain`` for a project id that names a domain (Keystone's domains are
    projects acting as domains: ``is_domain``), else ``kind``."""
    if kind == "project" and fetch_one(conn, sa.select(m.projects.c.id).where(
            m.projects.c.id == ident)) is None and fetch_one(conn, sa.select(m.domains.c.id).where(
            m.domains.c.id == ident)) is not None:
        return "domain"
    return kind


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
    """A new ``kind`` row; a password comes hashed (:func:`with_password_hashed`).
    A project under a parent takes the parent's domain (400 for another)."""
    table = TABLES[kind][0]
    values = dict(values)
    if kind == "project" and values.get("parent_id"):
        parent = get(conn, "project", values["parent_id"])
        if values.setdefault("domain_id", parent["domain_id"]) != parent["domain_id"]:
            raise ValidationError(field="project/parent_id", reason="is in another domain")
    if kind in ("project", "user", "group"):
        get(conn, "domain", values.setdefault("domain_id", "default"))
    elif values.get("domain_id"):
        get(conn, "domain", values["domain_id"])
    ident = uuid.uuid4().hex
    values = _with_extra({}, values)
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(id=ident, created_at=utcnow(), **values))
    except sa.exc.IntegrityError:
        raise DuplicateEntry(kind=kind) from None
    return get(conn, kind, ident)


def _with_extra(row: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with a user's ``extra`` attributes merged over the row's, as JSON."""
    if "extra" not in values:
        return values
    merged = {**json.loads(row.get("extra") or "{}"), **values["extra"]}
    return {**values, "extra": json.dumps(merged, ensure_ascii=True)}


def update(conn: sa.Connection, kind: str, ident: str, values: dict[str, Any], *,
           lifetime: float) -> dict[str, Any]:
    """``ident`` updated; a password comes hashed (:func:`with_password_hashed`).
    A project's or user's domain stays (400, as Keystone)."""
    table = TABLES[kind][0]
    row = get(conn, kind, ident)
    values = _with_extra(row, values)
    if values.get("domain_id", row.get("domain_id")) != row.get("domain_id"):
        raise ValidationError(field=f"{kind}/domain_id", reason="cannot be changed")
    if values:
        try:
            with conn.begin_nested():
                conn.execute(table.update().where(table.c.id == ident).values(
                    updated_at=utcnow(), **values))
        except sa.exc.IntegrityError:
            raise DuplicateEntry(kind=kind) from None
    events = _update_events(kind, row, values)
    if events and kind == "domain":
        events += _in_domain(conn, ident)
    revocation.record(conn, events, lifetime)
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
    if kind == "domain" and values.get("enabled") is False:
        return [RevokeEvent(domain_id=row["id"])]
    return []


_DELETE_EVENT = {"user": lambda row: RevokeEvent(user_id=row["id"]),
                 "project": lambda row: RevokeEvent(project_id=row["id"]),
                 "role": lambda row: RevokeEvent(role=row["name"]),
                 "domain": lambda row: RevokeEvent(domain_id=row["id"])}


def delete(conn: sa.Connection, kind: str, ident: str, *, lifetime: float) -> None:
    """Delete ``ident`` and its role assignments; its tokens go with it. A
    domain must be disabled first (403), and takes what is in it along."""
    table = TABLES[kind][0]
    row = get(conn, kind, ident)
    if kind == "domain":
        _empty_domain(conn, row, lifetime)
    ra, ga = m.role_assignments, m.group_role_assignments
    columns = {"project": (ra.c.project_id, ga.c.project_id), "user": (ra.c.user_id,),
               "role": (ra.c.role_id, ga.c.role_id), "group": (ga.c.group_id,),
               "domain": (ra.c.domain_id, ga.c.domain_id)}[kind]
    for column in columns:
        conn.execute(column.table.delete().where(column == ident))
    if kind == "project":
        conn.execute(table.update().where(table.c.parent_id == ident).values(parent_id=None))
    # A group's members lose the roles it gave them: their tokens go.
    events = [RevokeEvent(user_id=u.user_id) for u in conn.execute(
        sa.select(m.user_group_membership.c.user_id).where(
            m.user_group_membership.c.group_id == ident))] if kind == "group" else []
    conn.execute(table.delete().where(table.c.id == ident))
    if kind in _DELETE_EVENT:
        events.append(_DELETE_EVENT[kind](row))
    revocation.record(conn, events, lifetime)


def _in_domain(conn: sa.Connection, domain_id: str) -> list[RevokeEvent]:
    """Events for every token of a domain's projects and users (it was disabled)."""
    projects = conn.execute(sa.select(m.projects.c.id).where(m.projects.c.domain_id == domain_id))
    users = conn.execute(sa.select(m.users.c.id).where(m.users.c.domain_id == domain_id))
    return [*(RevokeEvent(project_id=p.id) for p in projects),
            *(RevokeEvent(user_id=u.id) for u in users)]


def _empty_domain(conn: sa.Connection, row: dict[str, Any], lifetime: float) -> None:
    """Delete a disabled domain's projects, users, groups and roles."""
    if row["enabled"]:
        raise ForbiddenAction(reason="cannot delete a domain that is enabled, "
                                     "please disable it first.")
    if row["id"] == "default":
        raise ForbiddenAction(reason="the default domain cannot be deleted.")
    for kind in ("project", "user", "group", "role"):
        table = TABLES[kind][0]
        for child in conn.execute(sa.select(table.c.id).where(table.c.domain_id == row["id"])):
            delete(conn, kind, child.id, lifetime=lifetime)


def _scopes(conn: sa.Connection, user_id: str, column: str) -> set[str]:
    """The ids in ``column`` (project_id or domain_id) of the assignments the
    user holds, their own or their groups'."""
    ra, ga, ugm = m.role_assignments, m.group_role_assignments, m.user_group_membership
    own = sa.select(ra.c[column]).where(ra.c.user_id == user_id, ra.c[column].is_not(None))
    via = sa.select(ga.c[column]).join(ugm, ugm.c.group_id == ga.c.group_id).where(
        ugm.c.user_id == user_id, ga.c[column].is_not(None))
    if column == "domain_id":
        own = own.where(ra.c.project_id.is_(None))
        via = via.where(ga.c.project_id.is_(None))
    return {r[0] for r in conn.execute(sa.union(own, via))}


def projects_of(conn: sa.Connection, user_id: str) -> list[dict[str, Any]]:
    """The projects the user holds a role on (their own or a group's)."""
    ids = _scopes(conn, user_id, "project_id")
    if not ids:
        return []
    return fetch_all(conn, sa.select(m.projects).where(m.projects.c.id.in_(ids))
                     .order_by(m.projects.c.name))


def domains_of(conn: sa.Connection, user_id: str) -> list[dict[str, Any]]:
    """The domains the user holds a role on (not through a project)."""
    ids = _scopes(conn, user_id, "domain_id")
    if not ids:
        return []
    return fetch_all(conn, sa.select(m.domains).where(m.domains.c.id.in_(ids))
                     .order_by(m.domains.c.name))
