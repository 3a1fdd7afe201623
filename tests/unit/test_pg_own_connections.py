"""Each PostgreSQL DB thread keeps a connection of its own
(``Database._own``): no pool checkout per unit, autocommit switched per use,
nothing left open between units, and a connection the server closed
replaced before the next unit, as the pool would."""
from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from cirrus.db.engine import PG_READERS, PG_WRITERS, Database
from cirrus.db.onestatement import one_statement
from tests.unit.test_pg_database import ITEMS, _backend_pid, url  # noqa: F401
from tests.unit.test_pg_one_statement import checked  # noqa: F401 - fixture


@pytest.fixture
def db(checked: Database) -> Database:  # noqa: F811 - the fixture imported
    """A database whose units are checked (test_pg_one_statement's)."""
    return checked


def _txid(conn: sa.Connection) -> int | None:
    """The transaction the unit runs in, if any (None in autocommit)."""
    value = conn.execute(sa.text("SELECT pg_current_xact_id_if_assigned()::text")).scalar()
    if value is None:
        value = conn.execute(sa.text("SELECT txid_current_if_assigned()::text")).scalar()
    return None if value is None else int(value)


@one_statement
def _insert_alone(conn: sa.Connection, name: str) -> tuple[int, bool]:
    """One insert (its own transaction): the backend, and whether a
    transaction was left open after it."""
    conn.execute(ITEMS.insert().values(name=name))
    return _backend_pid(conn), _txid(conn) is not None


def _insert_in_tx(conn: sa.Connection, name: str) -> tuple[int, bool]:
    conn.execute(ITEMS.insert().values(name=name))
    return _backend_pid(conn), _txid(conn) is not None


def _names(conn: sa.Connection) -> list[str]:
    return list(conn.execute(sa.select(ITEMS.c.name).order_by(ITEMS.c.name)).scalars())


def _swallow_error(conn: sa.Connection) -> str:
    try:
        conn.execute(sa.text("SELECT 1 / 0"))
    except sa.exc.DBAPIError:
        pass
    return "swallowed"


def _checkouts(db: Database) -> list[int]:
    counted: list[int] = []
    sa.event.listen(db.engine, "checkout", lambda *_: counted.append(1))
    return counted


async def test_units_take_no_pool_checkout_each(db: Database) -> None:
    counted = _checkouts(db)
    for n in range(30):
        await db.read(_backend_pid)
        await db.run(_insert_alone if n % 2 else _insert_in_tx, f"n{n}")
    assert len(counted) <= PG_READERS + PG_WRITERS


async def test_autocommit_and_transactions_alternate_on_one_connection(db: Database) -> None:
    for n in range(12):
        if n % 3 == 0:
            _, open_after = await db.run(_insert_alone, f"a{n}")
            assert open_after is False  # autocommit: the insert committed alone
        else:
            _, open_after = await db.run(_insert_in_tx, f"t{n}")
            assert open_after is True  # in the unit's transaction, committed after it
        assert await db.read(_txid) is None  # no transaction left open for a read
    assert len(await db.read(_names)) == 12


async def test_a_failed_statement_leaves_the_connection_usable(db: Database) -> None:
    for n in range(2 * PG_READERS):
        assert await db.read(_swallow_error) == "swallowed"
        assert await db.read(_names) == [f"e{i}" for i in range(n)]
        with pytest.raises(sa.exc.IntegrityError):
            await asyncio.gather(db.run(_insert_in_tx, f"e{n}"), db.run(_insert_in_tx, f"e{n}"))


async def test_writers_whose_backends_were_killed_connect_afresh(db: Database, url: str) -> None:
    # Concurrent units spread over the writer threads.
    first = await asyncio.gather(*[db.run(_insert_in_tx if n % 2 else _insert_alone, f"w{n}")
                                   for n in range(4 * PG_WRITERS)])
    pids = {pid for pid, _ in first}
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        for pid in pids:  # as a server restart or a killed backend would
            conn.execute(sa.text("SELECT pg_terminate_backend(:p, 10000)"), {"p": pid})
    admin.dispose()
    after = await asyncio.gather(*[db.run(_insert_in_tx if n % 2 else _insert_alone, f"x{n}")
                                   for n in range(4 * PG_WRITERS)])
    assert not pids & {pid for pid, _ in after}
    assert len(await db.read(_names)) == 8 * PG_WRITERS


async def test_close_lets_go_of_every_connection(url: str) -> None:  # noqa: F811
    database = Database(url)
    ITEMS.metadata.create_all(database.engine)
    await asyncio.gather(*[database.read(_backend_pid) for _ in range(6)],
                         *[database.run(_insert_alone, f"c{n}") for n in range(6)])
    database.close()
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        others = conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")).scalar_one()
    admin.dispose()
    assert others == 0


def _leave_driver_in_transaction(conn: sa.Connection) -> int:
    """A statement sent on the driver itself, outside SQLAlchemy's transaction:
    psycopg (not in autocommit) opens a transaction SQLAlchemy knows nothing of."""
    driver = conn.connection.driver_connection
    assert driver is not None
    driver.autocommit = False
    row = driver.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


async def test_a_transaction_left_on_the_driver_is_rolled_back(db: Database) -> None:
    for n in range(2 * PG_READERS):
        await db.read(_leave_driver_in_transaction)
        assert await db.read(_txid) is None  # autocommit switched back on
    assert await db.run(_insert_alone, "after") is not None
