"""A project's tags (Keystone's ``/v3/projects/{id}/tags``): plain strings,
at most 80 per project, checked by :func:`cirrus.identity.schema.tag`."""
from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa

from cirrus.exception import ValidationError
from cirrus.identity import admin
from cirrus.identity import models as m
from cirrus.identity.exception import ProjectTagNotFound
from cirrus.identity.schema import TAGS_MAX

T = m.project_tags


def of(conn: sa.Connection, project_ids: Iterable[str]) -> dict[str, list[str]]:
    """project id → its tags, sorted, for each of ``project_ids``."""
    out: dict[str, list[str]] = {p: [] for p in project_ids}
    if out:
        rows = conn.execute(sa.select(T).where(T.c.project_id.in_(list(out)))
                            .order_by(T.c.name))
        for r in rows:
            out[r.project_id].append(r.name)
    return out


def replace(conn: sa.Connection, project_id: str, tags: list[str]) -> list[str]:
    """Make ``tags`` the project's whole list."""
    admin.get(conn, "project", project_id)
    conn.execute(T.delete().where(T.c.project_id == project_id))
    if tags:
        conn.execute(T.insert(), [{"project_id": project_id, "name": t} for t in tags])
    return sorted(tags)


def add(conn: sa.Connection, project_id: str, tag: str) -> None:
    """Add one tag (idempotent); 400 past the 80th."""
    current = of(conn, [project_id])[project_id]
    admin.get(conn, "project", project_id)
    if tag in current:
        return
    if len(current) >= TAGS_MAX:
        raise ValidationError(field="tags", reason=f"a project has at most {TAGS_MAX} tags")
    conn.execute(T.insert().values(project_id=project_id, name=tag))


def check_project(conn: sa.Connection, project_id: str) -> None:
    """404 for a project that is not there."""
    admin.get(conn, "project", project_id)


def check(conn: sa.Connection, project_id: str, tag: str) -> None:
    admin.get(conn, "project", project_id)
    if tag not in of(conn, [project_id])[project_id]:
        raise ProjectTagNotFound(tag=tag)


def remove(conn: sa.Connection, project_id: str, tag: str) -> None:
    admin.get(conn, "project", project_id)
    if not conn.execute(T.delete().where(T.c.project_id == project_id,
                                         T.c.name == tag)).rowcount:
        raise ProjectTagNotFound(tag=tag)


def matching(conn: sa.Connection, all_of: list[str], any_of: list[str],
             not_all: list[str], not_any: list[str]) -> set[str] | None:
    """Ids of the projects the tag filters let through; None: no filter."""
    if not (all_of or any_of or not_all or not_any):
        return None
    tags: dict[str, set[str]] = {r.id: set() for r in conn.execute(sa.select(m.projects.c.id))}
    for r in conn.execute(sa.select(T)):
        tags[r.project_id].add(r.name)
    return {p for p, have in tags.items()
            if set(all_of) <= have and (not any_of or have & set(any_of))
            and not (not_all and set(not_all) <= have) and not (have & set(not_any))}
