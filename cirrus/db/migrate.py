"""Schema migrations (Alembic), applied on start and by ``cirrus db upgrade``.

Alembic is imported only when the database is behind: a start on an
up-to-date database reads the stored revision with one query instead
(importing Alembic costs a quarter of a second of start-up).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import sqlalchemy as sa

MIGRATIONS = Path(__file__).parent / "migrations"
_REV = re.compile(r"^revision\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN = re.compile(r"^down_revision\s*=\s*(.+)$", re.M)


def alembic_config(url: str) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def heads() -> set[str]:
    """Revisions no other revision builds on, read from the version files."""
    revisions, parents = set(), set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        text = path.read_text()
        rev = _REV.search(text)
        if rev:
            revisions.add(rev.group(1))
        down = _DOWN.search(text)
        if down:
            parents.update(re.findall(r"['\"]([^'\"]+)['\"]", down.group(1)))
    return revisions - parents


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision``."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)


def upgrade_if_needed(url: str) -> None:
    """``upgrade(url)`` unless the database is already at the head."""
    if current(url) in heads():
        return
    upgrade(url)


def current(url: str) -> str | None:
    """The revision the database at ``url`` is at (None when empty)."""
    from cirrus.db.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("alembic_version"):
                return None
            return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    finally:
        engine.dispose()
