"""Group membership. The groups themselves are rows like any other
(:mod:`cirrus.identity.admin`); a user's roles through a group are in
:mod:`cirrus.identity.assignments`. Leaving a group revokes the user's
tokens, which may carry roles the group gave."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.db.engine import fetch_all
from cirrus.identity import admin, revocation
from cirrus.identity import models as m
from cirrus.identity.exception import GroupNotFound
from cirrus.identity.revocation import RevokeEvent

UGM = m.user_group_membership


def _is_member(conn: sa.Connection, group_id: str, user_id: str) -> bool:
    return conn.execute(sa.select(UGM.c.user_id).where(
        UGM.c.group_id == group_id, UGM.c.user_id == user_id)).first() is not None


def add_user(conn: sa.Connection, group_id: str, user_id: str) -> None:
    """Make the user a member (idempotent); 404 for either missing."""
    admin.get(conn, "group", group_id)
    admin.get(conn, "user", user_id)
    if not _is_member(conn, group_id, user_id):
        conn.execute(UGM.insert().values(group_id=group_id, user_id=user_id))


def check_user(conn: sa.Connection, group_id: str, user_id: str) -> None:
    """404 unless the user is a member."""
    admin.get(conn, "group", group_id)
    admin.get(conn, "user", user_id)
    if not _is_member(conn, group_id, user_id):
        raise GroupNotFound(group_id=f"{group_id} (no member {user_id})")


def remove_user(conn: sa.Connection, group_id: str, user_id: str, *, lifetime: float) -> None:
    check_user(conn, group_id, user_id)
    conn.execute(UGM.delete().where(UGM.c.group_id == group_id, UGM.c.user_id == user_id))
    revocation.record(conn, [RevokeEvent(user_id=user_id)], lifetime)


def users_in(conn: sa.Connection, group_id: str) -> list[dict[str, Any]]:
    admin.get(conn, "group", group_id)
    return fetch_all(conn, sa.select(m.users).join(UGM, UGM.c.user_id == m.users.c.id)
                     .where(UGM.c.group_id == group_id).order_by(m.users.c.name))


def groups_of(conn: sa.Connection, user_id: str) -> list[dict[str, Any]]:
    admin.get(conn, "user", user_id)
    return fetch_all(conn, sa.select(m.groups).join(UGM, UGM.c.group_id == m.groups.c.id)
                     .where(UGM.c.user_id == user_id).order_by(m.groups.c.name))
