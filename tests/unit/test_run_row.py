"""``Database.run_row``: a set unit's row written through the coalescer on
PostgreSQL, as its own unit elsewhere; the same outcome both ways, and each
row timed as a write unit by the observer (the process's DB metrics)."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Hashable, Iterator

import pytest
import sqlalchemy as sa

from cirrus.db.coalesce import SetUnit
from cirrus.db.engine import Database
from cirrus.db.onestatement import one_statement
from tests.unit.test_pg_database import ITEMS, url  # noqa: F401 - the fixture


class Observer:
    """Records what a Database tells its observer."""

    def __init__(self) -> None:
        self.units: list[tuple[bool, float]] = []

    def unit(self, write: bool, seconds: float) -> None:
        self.units.append((write, seconds))

    def batch(self, size: int, seconds: float) -> None:
        pass


@one_statement
def _insert_one(conn: sa.Connection, name: str) -> str:
    conn.execute(ITEMS.insert().values(name=name))
    return f"one:{name}"


def _insert_set(conn: sa.Connection, names: list[str]) -> dict[Hashable, Any]:
    conn.execute(ITEMS.insert(), [{"name": name} for name in names])
    return {name: f"set:{name}" for name in names}


INSERT = SetUnit[str, str]("insert", key=lambda name: name, run_set=_insert_set,
                           run_one=_insert_one)


def _names(conn: sa.Connection) -> list[str]:
    return sorted(conn.execute(sa.select(ITEMS.c.name)).scalars())


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Database, Observer]]:
    observer = Observer()
    target = (f"sqlite:///{tmp_path / 'rows.db'}" if request.param == "sqlite"
              else request.getfixturevalue("url"))
    database = Database(target, observer)
    ITEMS.metadata.create_all(database.engine)
    yield database, observer
    database.close()


async def test_each_row_is_written_and_timed_as_a_write_unit(
        db: tuple[Database, Observer]) -> None:
    database, observer = db
    results = await asyncio.gather(*(database.run_row(INSERT, "shape", f"n{i}")
                                     for i in range(6)))
    assert sorted(r.split(":")[1] for r in results) == [f"n{i}" for i in range(6)]
    assert await database.read(_names) == [f"n{i}" for i in range(6)]
    if database.coalescer is not None:  # rows together, or alone: each as a unit
        assert sum(size * n for size, n in database.coalescer.sizes.items()) == 6
    else:
        assert results == [f"one:n{i}" for i in range(6)]
    writes = [seconds for write, seconds in observer.units if write]
    assert len(writes) == 6 and all(seconds >= 0 for seconds in writes)


async def test_a_row_that_fails_raises_its_own_error(db: tuple[Database, Observer]) -> None:
    database, observer = db
    await database.run_row(INSERT, "shape", "twice")
    with pytest.raises(sa.exc.IntegrityError):
        await database.run_row(INSERT, "shape", "twice")
    assert [write for write, _ in observer.units].count(True) == 2
