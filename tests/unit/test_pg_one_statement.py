"""Write units declared one statement (cirrus/db/onestatement.py): on
PostgreSQL they run without a transaction, beside the batched units, and with
``check_units`` a second writing statement fails before it is sent."""
from __future__ import annotations

import asyncio
from typing import Iterator

import pytest
import sqlalchemy as sa

from cirrus.db import onestatement
from cirrus.db.engine import Database
from cirrus.db.onestatement import NotOneStatement, one_statement
from cirrus.db.prepared import Prepared
from tests.unit.test_pg_database import ITEMS, _insert, _names, url  # noqa: F401 - fixtures

_INSERT = Prepared(ITEMS.insert().values(name=sa.bindparam("w_name")))


@pytest.fixture
def checked(url: str) -> Iterator[Database]:  # noqa: F811 - the fixture imported
    database = Database(url, check_units=True)
    ITEMS.metadata.create_all(database.engine)
    yield database
    database.close()


def _open_transaction(conn: sa.Connection) -> int | None:
    """The id of the server's transaction open around this statement if one
    was open before it (None: the statement is its own transaction)."""
    return conn.execute(sa.text("SELECT pg_current_xact_id_if_assigned()::text")).scalar()


@one_statement
def _insert_one(conn: sa.Connection, name: str) -> tuple[bool, int | None]:
    """One insert, then a read (allowed): whether the driver is in autocommit,
    and the transaction left open after the insert (None in autocommit)."""
    _INSERT.execute(conn, w_name=name)
    return conn.connection.driver_connection.autocommit, _open_transaction(conn)


@one_statement
def _insert_two(conn: sa.Connection, name: str) -> None:
    _INSERT.execute(conn, w_name=name)
    conn.execute(ITEMS.insert().values(name=name + "-again"))


@one_statement
def _read_then_lock(conn: sa.Connection, name: str) -> None:
    conn.execute(sa.select(ITEMS.c.id)).all()
    _INSERT.execute(conn, w_name=name)
    conn.execute(sa.text("SELECT id FROM items FOR UPDATE")).all()


async def test_a_one_statement_unit_runs_without_a_transaction(checked: Database) -> None:
    autocommit, open_after = await checked.run(_insert_one, "a")
    assert autocommit is True and open_after is None
    assert await checked.read(_names) == {"a"}
    # An undeclared unit still has its transaction (and its id: it wrote).
    assert await checked.run(_insert, "b") > 0


async def test_a_second_write_fails_before_it_is_sent(checked: Database) -> None:
    with pytest.raises(NotOneStatement):
        await checked.run(_insert_two, "x")
    # The first insert was its own transaction; the second never went.
    assert await checked.read(_names) == {"x"}


async def test_a_locking_read_counts_as_a_write(checked: Database) -> None:
    with pytest.raises(NotOneStatement, match="FOR UPDATE"):
        await checked.run(_read_then_lock, "y")


async def test_unchecked_a_unit_runs_as_declared(url: str) -> None:  # noqa: F811
    database = Database(url)
    ITEMS.metadata.create_all(database.engine)
    try:
        await database.run(_insert_two, "z")  # not checked: the declaration is trusted
        assert await database.read(_names) == {"z", "z-again"}
    finally:
        database.close()


async def test_declared_and_batched_units_side_by_side(checked: Database) -> None:
    """Many units at once: the one-statement ones leave the writers' batches,
    every caller gets its own outcome, in any mix."""
    names = [f"m{i}" for i in range(90)]
    units = [checked.run(_insert_one, n) if i % 3 else checked.run(_insert, n, then_fail=(i % 9 == 3))
             for i, n in enumerate(names)]
    results = await asyncio.gather(*units, return_exceptions=True)
    failed = {n for i, n in enumerate(names) if i % 9 == 3}
    for i, (name, result) in enumerate(zip(names, results)):
        if name in failed:
            assert isinstance(result, ValueError)
        elif i % 3:
            assert result == (True, None)
        else:
            assert isinstance(result, int)
    assert await checked.read(_names) == set(names) - failed


async def test_a_failed_statement_leaves_nothing_and_the_connection_usable(
        checked: Database) -> None:
    await checked.run(_insert_one, "dup")
    with pytest.raises(sa.exc.IntegrityError):
        await checked.run(_insert_one, "dup")
    assert (await checked.run(_insert_one, "after"))[0] is True
    assert await checked.read(_names) == {"dup", "after"}


@pytest.mark.parametrize("sql, writes", [
    ("SELECT 1", False),
    ("  select id from items where id = 1", False),
    ("SELECT id FROM items FOR UPDATE", True),
    ("SELECT id FROM items FOR NO KEY UPDATE SKIP LOCKED", True),
    ("SELECT id FROM items FOR SHARE", True),
    ("INSERT INTO items (name) VALUES ('a')", True),
    ("UPDATE items SET name = 'b'", True),
    ("DELETE FROM items", True),
    ("WITH saved AS (UPDATE items SET name = 'c' RETURNING id) SELECT count(*) FROM saved", True),
    ("SAVEPOINT unit", True),
])
def test_what_counts_as_a_write(sql: str, writes: bool) -> None:
    assert onestatement.writes(sql) is writes


def test_the_declaration_reaches_bound_methods_and_survives_the_check() -> None:
    class Units:
        @one_statement
        def save(self, conn: sa.Connection) -> None:
            """A declared method."""

        def other(self, conn: sa.Connection) -> None:
            """An undeclared one."""

    units = Units()
    assert onestatement.is_one_statement(units.save)
    assert not onestatement.is_one_statement(units.other)
    assert onestatement.is_one_statement(onestatement.checked(units.save))


class _Deadlock(Exception):
    sqlstate = "40P01"


@one_statement
def _deadlocks_once(conn: sa.Connection, name: str, calls: list[int]) -> int:
    """Inserts ``name`` on its second call; the first fails as a deadlock
    would (the server rolled the statement back)."""
    calls.append(1)
    if len(calls) == 1:
        raise sa.exc.OperationalError("UPDATE …", {}, _Deadlock())
    _INSERT.execute(conn, w_name=name)
    return len(calls)


async def test_a_deadlocked_statement_runs_once_more(checked: Database) -> None:
    calls: list[int] = []
    assert await checked.run(_deadlocks_once, "d", calls) == 2
    assert await checked.read(_names) == {"d"}



@one_statement
def _always_deadlocks(conn: sa.Connection, calls: list[int]) -> None:
    calls.append(1)
    raise sa.exc.OperationalError("UPDATE …", {}, _Deadlock())


async def test_a_statement_deadlocked_twice_fails_its_caller(checked: Database) -> None:
    calls: list[int] = []
    with pytest.raises(sa.exc.OperationalError):
        await checked.run(_always_deadlocks, calls)
    assert calls == [1, 1]
