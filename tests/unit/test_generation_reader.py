"""The revocation generation read over the asyncio psycopg connection (a
statement prepared on it, sent through libpq): it sees every revocation
committed before it was called, and a broken connection sends the reads to
the DB threads with the same answers (``storage``: on each database; SQLite
reads on the loop's own connection)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.db.engine import Database
from cirrus.identity import generation, revocation
from cirrus.identity.generation import GenerationReader
from cirrus.identity.revocation import RevokeEvent

pytestmark = pytest.mark.storage


@pytest.fixture
def db(tmp_path: Path, database: Any) -> Iterator[Database]:
    settings = Settings(state_dir=tmp_path, **database.for_test(tmp_path))
    found = Database(settings.database_url)
    yield found
    found.close()
    database.drop(settings)


def _revoke(db: Database) -> int:
    return db.run_sync(revocation.record, [RevokeEvent(user_id="u")], 3600.0)


async def test_each_read_sees_the_revocations_committed_before_it(db: Database) -> None:
    reader = GenerationReader(db)
    start = await reader.current()
    for n in range(1, 4):
        committed = _revoke(db)
        assert await reader.current() == committed == start + n


async def test_a_broken_connection_reads_on_the_db_threads(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    if db.engine.dialect.driver != "psycopg":
        pytest.skip("the asyncio connection is psycopg's")
    reader = GenerationReader(db)
    await reader.current()
    assert reader._remote is not None
    pid = reader._remote.pgconn.backend_pid
    db.run_sync(lambda conn: conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"),
                                          {"pid": pid}))
    committed = _revoke(db)
    assert await reader.current() == committed  # on the DB threads
    assert reader._remote is None and reader._remote_retry_at > 0
    monkeypatch.setattr(generation, "REMOTE_RETRY", 0.0)
    reader._remote_retry_at = 0.0
    committed = _revoke(db)
    assert await reader.current() == committed  # a new connection, prepared again
    assert reader._remote is not None and not reader._remote.closed


async def test_the_catalog_generation_moves_with_each_flavor_or_image_change(db: Database) -> None:
    """Read in the same statement (migration 0042's triggers bump it)."""
    from cirrus.compute import flavors

    reader = GenerationReader(db)
    assert reader.catalog is None
    await reader.current()
    start = reader.catalog
    assert start is not None
    db.run_sync(flavors.create_flavor, {"flavorid": "c1", "name": "c1", "vcpus": 1,
                                        "memory_mb": 64, "root_gb": 1, "ephemeral_gb": 0,
                                        "swap": 0, "rxtx_factor": 1.0, "is_public": True,
                                        "extra_specs": {}})
    await reader.current()
    assert reader.catalog is not None and reader.catalog > start
    moved = reader.catalog
    db.run_sync(flavors.delete_flavor, "c1")
    await reader.current()
    assert reader.catalog > moved
