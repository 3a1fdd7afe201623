"""Identity queries, each a function of a connection (run on a DB thread)."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_one
from cirrus.identity import assignments
from cirrus.identity import models as m


def get_domain(conn: sa.Connection, *, id: str | None = None, name: str | None = None) -> dict | None:
    col, value = (m.domains.c.id, id) if id else (m.domains.c.name, name)
    return fetch_one(conn, sa.select(m.domains).where(col == value))


def get_user(conn: sa.Connection, *, id: str | None = None, name: str | None = None,
             domain_id: str | None = None) -> dict | None:
    q = sa.select(m.users)
    q = q.where(m.users.c.id == id) if id else q.where(
        m.users.c.name == name, m.users.c.domain_id == domain_id)
    return fetch_one(conn, q)


def get_project(conn: sa.Connection, *, id: str | None = None, name: str | None = None,
                domain_id: str | None = None) -> dict | None:
    q = sa.select(m.projects)
    q = q.where(m.projects.c.id == id) if id else q.where(
        m.projects.c.name == name, m.projects.c.domain_id == domain_id)
    return fetch_one(conn, q)


def role_names_for(conn: sa.Connection, user_id: str, *, project_id: str | None = None,
                   domain_id: str | None = None, system: str | None = None
                   ) -> list[dict[str, Any]]:
    """Roles (id, name) the user holds on the project, domain or system: their
    own, their groups', and the roles those imply."""
    return assignments.effective_roles(conn, user_id, assignments.Target(
        project_id=project_id, domain_id=None if project_id else domain_id,
        system=None if project_id or domain_id else system))


def exists_app_cred(conn: sa.Connection, ident: str) -> bool:
    ac = m.application_credentials
    return conn.execute(sa.select(ac.c.id).where(ac.c.id == ident)).first() is not None


def load_token_keys(conn: sa.Connection, create: bool, new_key: str) -> list[str]:
    """Token keys, newest first; creates the first one when asked and none exist."""
    rows = conn.execute(sa.select(m.token_keys.c.key).order_by(m.token_keys.c.id.desc())).all()
    if not rows and create:
        conn.execute(m.token_keys.insert().values(key=new_key, created_at=utcnow()))
        return [new_key]
    return [r.key for r in rows]
