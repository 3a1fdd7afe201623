"""First-start bootstrap: the default domain, roles, admin and demo accounts."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.identity import models as m
from cirrus.identity.passwords import hash_password

DEFAULT_DOMAIN = "default"
# keystone-manage bootstrap's roles (2024.2): "manager" and "service" are
# Nova's project-manager and service personas, which Tempest asks for by name.
ROLES = ("admin", "manager", "member", "reader", "service")


@dataclass
class Account:
    user: str
    password: str
    project: str
    role: str


def _id() -> str:
    return uuid.uuid4().hex


def _ensure(conn: sa.Connection, table: sa.Table, where: dict, values: dict) -> str:
    q = sa.select(table.c.id).where(*[table.c[k] == v for k, v in where.items()])
    row = conn.execute(q).first()
    if row:
        return row.id
    new_id = values.pop("id", None) or _id()
    conn.execute(table.insert().values(id=new_id, created_at=utcnow(), **where, **values))
    return new_id


def ensure_account(conn: sa.Connection, acct: Account, rounds: int) -> None:
    """Create (if missing) the project, user and role assignment of ``acct``
    (a new user's password hashed at cost ``rounds``)."""
    project_id = _ensure(conn, m.projects, {"name": acct.project, "domain_id": DEFAULT_DOMAIN},
                         {"enabled": True, "description": f"{acct.project} project"})
    user_id = _ensure(conn, m.users, {"name": acct.user, "domain_id": DEFAULT_DOMAIN},
                      {"enabled": True, "password_hash": hash_password(acct.password, rounds),
                       "default_project_id": project_id})
    role_id = conn.execute(sa.select(m.roles.c.id).where(m.roles.c.name == acct.role)).scalar_one()
    ra = m.role_assignments
    for target in ({"project_id": project_id, "domain_id": None},
                   *([{"project_id": None, "domain_id": DEFAULT_DOMAIN}] if acct.role == "admin" else [])):
        exists = conn.execute(sa.select(ra.c.id).where(
            ra.c.user_id == user_id, ra.c.role_id == role_id,
            ra.c.project_id.is_(None) if target["project_id"] is None else ra.c.project_id == target["project_id"],
            ra.c.domain_id.is_(None) if target["domain_id"] is None else ra.c.domain_id == target["domain_id"],
        )).first()
        if not exists:
            conn.execute(ra.insert().values(user_id=user_id, role_id=role_id, **target))


def bootstrap_identity(conn: sa.Connection, admin_password: str, demo_password: str,
                       rounds: int) -> None:
    """Idempotent: the default domain, the roles, admin and demo."""
    _ensure(conn, m.domains, {"name": "Default"}, {"id": DEFAULT_DOMAIN, "enabled": True})
    for role in ROLES:
        _ensure(conn, m.roles, {"name": role}, {})
    ensure_account(conn, Account("admin", admin_password, "admin", "admin"), rounds)
    ensure_account(conn, Account("demo", demo_password, "demo", "member"), rounds)
