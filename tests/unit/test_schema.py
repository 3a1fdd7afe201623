"""The migrations build the schema the models describe (tables, columns, indexes)."""
from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from cirrus.db import migrate
from cirrus.db.base import load_all_models, metadata


def test_migrations_at_head_match_the_models(tmp_path: Path) -> None:
    load_all_models()
    url = f"sqlite:///{tmp_path / 'schema.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), metadata)
    finally:
        engine.dispose()
    assert differences == []
