"""The migrations build the schema the models describe (tables, columns, indexes)."""
from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from cirrus.db import migrate
from cirrus.db.base import load_all_models, metadata
from tests.unit.plans import listing_plan


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



def test_a_poll_for_changes_reads_a_range_of_an_index(tmp_path: Path) -> None:
    """``changes-since`` with a status: a range of the changes index, not every
    row of the project or of the status's vm_state (the compare above cannot
    check expression indexes, so this checks the migrated one is used)."""
    from datetime import datetime

    from cirrus.compute import queries

    url = f"sqlite:///{tmp_path / 'poll.db'}"
    migrate.upgrade(url)
    engine = sa.create_engine(url)
    q = queries.ListQuery(project_id="p", status=["ACTIVE"], limit=1000,
                          changes_since=datetime(2026, 11, 23, 15, 0))
    try:
        plan = listing_plan(engine, q)
    finally:
        engine.dispose()
    assert "ix_instances_project_id_changed" in plan, plan
