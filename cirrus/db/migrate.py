"""Schema migrations (Alembic), applied on start and by ``cirrus db upgrade``."""
from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at ``url`` to ``revision``."""
    command.upgrade(alembic_config(url), revision)


def current(url: str) -> str | None:
    """The revision the database at ``url`` is at (None when empty)."""
    from alembic.runtime.migration import MigrationContext

    from cirrus.db.engine import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
