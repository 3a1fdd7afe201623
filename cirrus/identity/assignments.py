"""Role assignments: a role for a user or a group, on a project, a domain or
the system; and what they come to (Keystone's *effective* assignments).

A user's effective roles on a target are their own assignments there, their
groups' assignments there, and every role those imply (role inference rules,
followed transitively); a domain-specific role is never effective itself (it
only confers what it implies), as Keystone keeps it out of tokens. Taking a
role away records the revocation events that end the tokens carrying it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

import sqlalchemy as sa

from cirrus.db.engine import fetch_all
from cirrus.identity import models as m
from cirrus.identity import revocation
from cirrus.identity.exception import (DomainNotFound, GroupNotFound, ProjectNotFound,
                                       RoleNotFound, UserNotFound)
from cirrus.identity.revocation import RevokeEvent

SYSTEM = "all"  # Keystone's only system scope


@dataclass(frozen=True)
class Actor:
    """Who holds the role: a user or a group (``kind``), by id."""

    kind: str
    id: str


@dataclass(frozen=True)
class Target:
    """Where the role holds: exactly one of a project, a domain, the system."""

    project_id: str | None = None
    domain_id: str | None = None
    system: str | None = None


@dataclass(frozen=True)
class Assignment:
    """One assignment; ``via_group`` and ``prior_role_id`` say how an
    effective one was reached (a membership, an inference rule)."""

    actor: Actor
    role_id: str
    target: Target
    via_group: str | None = None
    prior_role_id: str | None = None


@dataclass(frozen=True)
class Filters:
    """``GET /v3/role_assignments``'s filters (None: any)."""

    user_id: str | None = None
    group_id: str | None = None
    role_id: str | None = None
    project_id: str | None = None
    domain_id: str | None = None
    system: str | None = None


def _table(kind: str) -> tuple[sa.Table, sa.Column[Any]]:
    if kind == "user":
        return m.role_assignments, m.role_assignments.c.user_id
    return m.group_role_assignments, m.group_role_assignments.c.group_id


def _exists(conn: sa.Connection, table: sa.Table, ident: str, missing: type[Exception],
            field: str) -> None:
    if conn.execute(sa.select(table.c.id).where(table.c.id == ident)).first() is None:
        raise missing(**{field: ident})


def check_parts(conn: sa.Connection, actor: Actor, role_id: str | None, target: Target) -> None:
    """404 for an actor, role, project or domain that does not exist."""
    if actor.kind == "user":
        _exists(conn, m.users, actor.id, UserNotFound, "user_id")
    else:
        _exists(conn, m.groups, actor.id, GroupNotFound, "group_id")
    if role_id:
        _exists(conn, m.roles, role_id, RoleNotFound, "role_id")
    if target.project_id:
        _exists(conn, m.projects, target.project_id, ProjectNotFound, "project_id")
    if target.domain_id:
        _exists(conn, m.domains, target.domain_id, DomainNotFound, "domain_id")


def _where(table: sa.Table, target: Target) -> list[sa.ColumnElement[bool]]:
    """The rows of exactly ``target`` (a domain's own, not its projects')."""
    return [table.c.project_id == target.project_id if target.project_id
            else table.c.project_id.is_(None),
            table.c.domain_id == target.domain_id if target.domain_id
            else table.c.domain_id.is_(None),
            table.c.system == target.system if target.system else table.c.system.is_(None)]


def roles_on(conn: sa.Connection, actor: Actor, target: Target) -> list[str]:
    """Ids of the roles assigned directly to ``actor`` on ``target``."""
    table, column = _table(actor.kind)
    rows = conn.execute(sa.select(table.c.role_id).where(column == actor.id,
                                                         *_where(table, target)))
    return [r.role_id for r in rows]


def grant(conn: sa.Connection, actor: Actor, role_id: str, target: Target) -> None:
    """Assign the role (idempotent); 404 for any part that does not exist."""
    check_parts(conn, actor, role_id, target)
    if role_id in roles_on(conn, actor, target):
        return
    table, column = _table(actor.kind)
    conn.execute(table.insert().values({column.key: actor.id, "role_id": role_id,
                                        "project_id": target.project_id,
                                        "domain_id": target.domain_id,
                                        "system": target.system}))


def revoke(conn: sa.Connection, actor: Actor, role_id: str, target: Target, *,
           lifetime: float) -> bool:
    """Remove the assignment and end the tokens it gave; False if there was none."""
    table, column = _table(actor.kind)
    done = conn.execute(table.delete().where(column == actor.id, table.c.role_id == role_id,
                                             *_where(table, target))).rowcount
    if not done:
        return False
    role = conn.execute(sa.select(m.roles.c.name).where(m.roles.c.id == role_id)).scalar_one()
    users = [actor.id] if actor.kind == "user" else members(conn, actor.id)
    revocation.record(conn, [RevokeEvent(user_id=u, project_id=target.project_id,
                                         domain_id=target.domain_id, role=role)
                             for u in users], lifetime)
    return True


def members(conn: sa.Connection, group_id: str) -> list[str]:
    ugm = m.user_group_membership
    return [r.user_id for r in conn.execute(sa.select(ugm.c.user_id).where(
        ugm.c.group_id == group_id))]


def groups_of(conn: sa.Connection, user_id: str) -> list[str]:
    ugm = m.user_group_membership
    return [r.group_id for r in conn.execute(sa.select(ugm.c.group_id).where(
        ugm.c.user_id == user_id))]


def _direct(conn: sa.Connection, kind: str, f: Filters, actor_ids: Iterable[str] | None
            ) -> list[Assignment]:
    table, column = _table(kind)
    q = sa.select(table)
    if actor_ids is not None:
        q = q.where(column.in_(list(actor_ids)))
    for col, value in ((table.c.role_id, f.role_id), (table.c.project_id, f.project_id),
                       (table.c.domain_id, f.domain_id), (table.c.system, f.system)):
        if value is not None:
            q = q.where(col == value)
    return [Assignment(Actor(kind, r[column.key]), r["role_id"],
                       Target(r["project_id"], r["domain_id"], r["system"]))
            for r in fetch_all(conn, q.order_by(table.c.id))]


def listing(conn: sa.Connection, f: Filters) -> list[Assignment]:
    """The assignments themselves, users' then groups'."""
    out: list[Assignment] = []
    if f.group_id is None:
        out += _direct(conn, "user", f, [f.user_id] if f.user_id else None)
    if f.user_id is None:
        out += _direct(conn, "group", f, [f.group_id] if f.group_id else None)
    return out


def effective(conn: sa.Connection, f: Filters) -> list[Assignment]:
    """Every user's assignment as a token sees it: groups expanded to their
    members, inference rules followed, domain-specific roles dropped."""
    users = _direct(conn, "user", replace(f, role_id=None), [f.user_id] if f.user_id else None)
    group_ids = groups_of(conn, f.user_id) if f.user_id else None
    for a in _direct(conn, "group", replace(f, role_id=None), group_ids):
        for user_id in members(conn, a.actor.id):
            if f.user_id in (None, user_id):
                users.append(replace(a, actor=Actor("user", user_id), via_group=a.actor.id))
    rules, domain_roles = inference_rules(conn), _domain_role_ids(conn)
    out: list[Assignment] = []
    for a in users:
        for role_id, prior in _implied(a.role_id, rules):
            if role_id not in domain_roles and f.role_id in (None, role_id):
                out.append(replace(a, role_id=role_id, prior_role_id=prior))
    return out


def _implied(role_id: str, rules: dict[str, list[str]]) -> list[tuple[str, str | None]]:
    """``role_id`` and each role it implies, with the role it was implied by."""
    out: list[tuple[str, str | None]] = [(role_id, None)]
    seen, todo = {role_id}, [role_id]
    while todo:
        prior = todo.pop()
        for implied in rules.get(prior, []):
            if implied not in seen:
                seen.add(implied)
                out.append((implied, prior))
                todo.append(implied)
    return out


def inference_rules(conn: sa.Connection) -> dict[str, list[str]]:
    """prior role id → the ids of the roles it implies directly."""
    rules: dict[str, list[str]] = {}
    ir = m.implied_roles
    for r in conn.execute(sa.select(ir).order_by(ir.c.prior_role_id, ir.c.implied_role_id)):
        rules.setdefault(r.prior_role_id, []).append(r.implied_role_id)
    return rules


def _domain_role_ids(conn: sa.Connection) -> set[str]:
    return {r.id for r in conn.execute(sa.select(m.roles.c.id).where(
        m.roles.c.domain_id.is_not(None)))}


def effective_roles(conn: sa.Connection, user_id: str, target: Target) -> list[dict[str, Any]]:
    """The roles (id, name) a token of ``user_id`` on ``target`` carries."""
    found = effective(conn, Filters(user_id=user_id, project_id=target.project_id,
                                    domain_id=target.domain_id, system=target.system))
    ids = {a.role_id for a in found if a.target == target}
    if not ids:
        return []
    return fetch_all(conn, sa.select(m.roles.c.id, m.roles.c.name).where(
        m.roles.c.id.in_(ids)).order_by(m.roles.c.name))
