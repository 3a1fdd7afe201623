"""Group commit on PostgreSQL (cirrus/db/pgcommit.py): units batched in one
transaction stay atomic each; reads without BEGIN/COMMIT; a pooled connection
whose server side went away is replaced without a failed unit."""
from __future__ import annotations

import asyncio
import uuid
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.db import pgcommit
from cirrus.db.engine import Database
from cirrus.db.handoff import Unit
from tests.databases import PG_URL, PostgresDatabases

ITEMS = sa.Table("items", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
                 sa.Column("name", sa.String(20), nullable=False, unique=True))


@pytest.fixture
def url() -> Iterator[str]:
    reason = PostgresDatabases.unreachable()
    if reason:
        pytest.skip(reason)
    name = f"cirrus_pgcommit_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield PG_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


@pytest.fixture
def db(url: str) -> Iterator[Database]:
    database = Database(url)
    ITEMS.metadata.create_all(database.engine)
    yield database
    database.close()


def _insert(conn: sa.Connection, name: str, then_fail: bool = False) -> int:
    """Inserts ``name``; the transaction's id (to see which units shared one)."""
    conn.execute(ITEMS.insert().values(name=name))
    if then_fail:
        raise ValueError(f"{name} failed after its insert")
    return int(conn.execute(sa.text("SELECT txid_current()")).scalar_one())


def _swallow(conn: sa.Connection) -> str:
    """A unit that catches a database error without a savepoint of its own: on
    PostgreSQL its transaction is aborted from there on."""
    try:
        conn.execute(sa.text("SELECT 1 / 0"))
    except sa.exc.DBAPIError:
        pass
    return "swallowed"


def _names(conn: sa.Connection) -> set[str]:
    return set(conn.execute(sa.select(ITEMS.c.name)).scalars())


async def _units(*calls: tuple[Any, ...]) -> list[Unit[Any]]:
    loop = asyncio.get_running_loop()
    return [Unit(call[0], call[1:], {}, loop, loop.create_future()) for call in calls]


# (units, which fail: their outcome's exception type, or None)
BATCHES = [
    pytest.param([("a",), ("b",), ("c",)], [None, None, None], id="all-commit"),
    pytest.param([("a", True), ("b",), ("c",)], [ValueError, None, None], id="first-fails"),
    pytest.param([("a",), ("b", True), ("c",)], [None, ValueError, None], id="middle-fails"),
    pytest.param([("a",), ("b",), ("c", True)], [None, None, ValueError], id="last-fails"),
    pytest.param([("a",), ("a",), ("c",)], [None, sa.exc.IntegrityError, None],
                 id="clash-aborts-only-its-savepoint"),
]


@pytest.mark.parametrize("calls, fails", BATCHES)
async def test_each_unit_of_a_batch_is_atomic(db: Database, calls: list[tuple[Any, ...]],
                                              fails: list[type[Exception] | None]) -> None:
    units = await _units(*((_insert, *c) for c in calls))
    outcomes = pgcommit.run_batch(db.engine.connect, units)
    for (ok, value), fail in zip(outcomes, fails):
        assert ok is (fail is None)
        if fail is not None:
            assert isinstance(value, fail)
    committed = {c[0] for c, fail in zip(calls, fails) if fail is None}
    assert await db.read(_names) == committed


async def test_units_after_the_first_share_its_transaction(db: Database) -> None:
    units = await _units(*((_insert, f"n{i}") for i in range(5)))
    txids = [value for ok, value in pgcommit.run_batch(db.engine.connect, units) if ok]
    assert len(txids) == 5 and len(set(txids)) == 1


async def test_a_first_unit_that_fails_leaves_the_rest_one_transaction(db: Database) -> None:
    units = await _units((_insert, "x", True), *((_insert, f"n{i}") for i in range(3)))
    outcomes = pgcommit.run_batch(db.engine.connect, units)
    assert not outcomes[0][0]
    assert len({value for ok, value in outcomes[1:] if ok}) == 1


async def test_an_aborted_transaction_reruns_every_unit_alone(db: Database) -> None:
    """A unit that leaves the transaction aborted makes the next savepoint fail:
    nothing was committed, so each unit runs again by itself, and only the
    culprit's own transaction is lost (its COMMIT is a rollback)."""
    units = await _units((_insert, "a"), (_swallow,), (_insert, "b"))
    outcomes = pgcommit.run_batch(db.engine.connect, units)
    assert [ok for ok, _ in outcomes] == [True, True, True]
    assert outcomes[0][1] != outcomes[2][1]  # no longer one transaction
    assert await db.read(_names) == {"a", "b"}


@pytest.mark.parametrize("sqlstate, deadlock", [("40P01", True), ("40001", False),
                                                ("23505", False), (None, False)])
def test_only_a_deadlock_is_run_again(sqlstate: str | None, deadlock: bool) -> None:
    class DriverError(Exception):
        pass
    error = DriverError()
    error.sqlstate = sqlstate  # type: ignore[attr-defined]
    wrapped = sa.exc.OperationalError("stmt", {}, error)
    assert pgcommit._is_deadlock(wrapped) is deadlock
    assert pgcommit._is_deadlock(ValueError()) is False


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
