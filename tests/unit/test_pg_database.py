"""The database on PostgreSQL (cirrus/db/engine.py): writes each in a
transaction, reads without BEGIN/COMMIT, and a pooled connection whose server
side went away replaced without a round trip per unit and without a failed
unit."""
from __future__ import annotations

import asyncio
from typing import Iterator

import pytest
import sqlalchemy as sa

from cirrus.db.engine import Database
from cirrus.db.prepared import Prepared, pipelined
from tests.databases import scratch_postgres

ITEMS = sa.Table("items", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("name", sa.String(20), nullable=False, unique=True))


@pytest.fixture
def url() -> Iterator[str]:
    with scratch_postgres("cirrus_pgcommit") as url:
        yield url


@pytest.fixture
def db(url: str) -> Iterator[Database]:
    database = Database(url)
    ITEMS.metadata.create_all(database.engine)
    yield database
    database.close()


def _insert(conn: sa.Connection, name: str, then_fail: bool = False) -> int:
    """Inserts ``name``; the id of the transaction it ran in."""
    conn.execute(ITEMS.insert().values(name=name))
    if then_fail:
        raise ValueError(f"{name} failed after its insert")
    return int(conn.execute(sa.text("SELECT txid_current()")).scalar_one())


def _names(conn: sa.Connection) -> set[str]:
    return set(conn.execute(sa.select(ITEMS.c.name)).scalars())


async def test_concurrent_units_through_the_writers_commit_or_fail_alone(db: Database) -> None:
    names = [f"c{i}" for i in range(120)]
    results = await asyncio.gather(*[db.run(_insert, n, then_fail=(i % 7 == 3))
                                     for i, n in enumerate(names)], return_exceptions=True)
    failed = {n for i, n in enumerate(names) if i % 7 == 3}
    for name, result in zip(names, results):
        assert isinstance(result, ValueError) if name in failed else isinstance(result, int)
    assert await db.read(_names) == set(names) - failed


def _in_transaction(conn: sa.Connection) -> bool:
    """Whether the server holds a transaction open for this read (a read
    without BEGIN runs each statement in its own)."""
    first = conn.execute(sa.text("SELECT txid_current()")).scalar_one()
    return bool(first == conn.execute(sa.text("SELECT txid_current()")).scalar_one())


async def test_reads_run_without_a_transaction(db: Database) -> None:
    assert await db.read(_in_transaction) is False
    assert await db.run(_in_transaction) is True


def _backend_pid(conn: sa.Connection) -> int:
    return int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())


async def test_a_connection_the_server_closed_is_replaced_without_a_failed_unit(
        db: Database, url: str) -> None:
    pids = {await db.read(_backend_pid) for _ in range(3)}
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        for pid in pids:  # as a server restart or a killed backend would
            conn.execute(sa.text("SELECT pg_terminate_backend(:p, 10000)"), {"p": pid})
    admin.dispose()
    for _ in range(3):
        assert await db.read(_backend_pid) not in pids
    assert isinstance(await db.run(_insert, "after"), int)



def _isolation(conn: sa.Connection) -> str:
    return str(conn.execute(sa.text("SHOW transaction_isolation")).scalar_one())


def _counts_around_a_commit(conn: sa.Connection, url: str, name: str) -> tuple[int, int]:
    """Counts the rows, lets another connection commit one more, counts again."""
    count = sa.select(sa.func.count()).select_from(ITEMS)
    before = int(conn.execute(count).scalar_one())
    other = sa.create_engine(url, poolclass=sa.NullPool)
    with other.begin() as elsewhere:
        elsewhere.execute(ITEMS.insert().values(name=name))
    other.dispose()
    return before, int(conn.execute(count).scalar_one())


@pytest.mark.parametrize("server_default", ["read committed", "repeatable read"])
async def test_each_statement_of_a_unit_sees_the_commits_before_it(
        url: str, server_default: str) -> None:
    # The argument for reads without BEGIN/COMMIT: in a READ COMMITTED
    # transaction (a write unit; pinned by the engine whatever the server's
    # default) the second statement already sees a commit made after the
    # first, so no unit of several statements had one snapshot; a read
    # without a transaction (each statement its own) sees the same.
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f"ALTER DATABASE {url.rsplit('/', 1)[1]} "
                             f"SET default_transaction_isolation = '{server_default}'"))
    admin.dispose()
    database = Database(url)
    try:
        ITEMS.metadata.create_all(database.engine)
        assert await database.run(_isolation) == "read committed"
        assert await database.run(_counts_around_a_commit, url, "in-a-write") == (0, 1)
        assert await database.read(_counts_around_a_commit, url, "in-a-read") == (1, 2)
    finally:
        database.close()


_INSERT_ITEM = Prepared(ITEMS.insert().values(name=sa.bindparam("v_name")))
_INSERT_ITEM_ID = Prepared(ITEMS.insert().values(name=sa.bindparam("v_name"))
                           .returning(ITEMS.c.id))


def _pipelined_inserts(conn: sa.Connection, names: list[str]) -> int:
    """Inserts ``names`` in one pipeline, the last returning its id."""
    with pipelined(conn):
        for name in names[:-1]:
            _INSERT_ITEM.execute(conn, v_name=name)
        return int(_INSERT_ITEM_ID.execute(conn, v_name=names[-1]).fetchone()[0])


async def test_pipelined_statements_commit_together_and_the_last_result_is_read(
        db: Database) -> None:
    assert await db.run(_pipelined_inserts, ["p1", "p2", "p3"]) > 0
    assert await db.read(_names) == {"p1", "p2", "p3"}


async def test_a_pipelined_statement_that_fails_fails_the_unit_as_sqlalchemy_would(
        db: Database) -> None:
    await db.run(_pipelined_inserts, ["taken"])
    with pytest.raises(sa.exc.IntegrityError):
        await db.run(_pipelined_inserts, ["new", "taken", "last"])
    assert await db.read(_names) == {"taken"}
