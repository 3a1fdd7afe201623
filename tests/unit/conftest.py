"""Fixtures the unit tables share."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from cirrus.db import migrate
from cirrus.db.engine import make_engine


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sa.Connection]:
    """A connection, in one transaction, to a freshly migrated SQLite database."""
    url = f"sqlite:///{tmp_path / 'unit.db'}"
    migrate.upgrade(url)
    engine = make_engine(url)
    with engine.begin() as connection:
        yield connection
    engine.dispose()
