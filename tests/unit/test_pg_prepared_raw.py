"""On psycopg a Prepared statement runs with ``$n`` placeholders on a raw-query
cursor: the same rows and errors as SQLAlchemy's text, server-side prepare
still on, and the one-statement check's cursor still given the text."""
from __future__ import annotations

from typing import Iterator

import pytest
import sqlalchemy as sa

from cirrus.db import onestatement
from cirrus.db.engine import make_engine
from cirrus.db.prepared import Prepared, _dollar
from tests.unit.test_pg_database import url  # noqa: F401 - the fixture

T = sa.Table("raw_things", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("name", sa.String(40), unique=True), sa.Column("data", sa.JSON),
             sa.Column("n", sa.Integer))
INSERT = Prepared(T.insert().values(name=sa.bindparam("name"), data=sa.bindparam("data"),
                                    n=sa.bindparam("n")).returning(T.c.id))
# One name bound twice, a literal percent sign, a fixed value (literal bind).
MATCH = Prepared(sa.select(T.c.name, T.c.n + sa.bindparam("add"), sa.literal("50%"))
                 .where(T.c.name.like("a%"), T.c.n < sa.bindparam("add") * 3,
                        T.c.n != 7)
                 .order_by(T.c.name))


def test_placeholders_numbered_by_first_use() -> None:
    sql, order = _dollar("SELECT %(b)s, %(a)s, %(b)s, '5%%' FROM t", ["a", "b"])  # type: ignore[misc]
    assert sql == "SELECT $1, $2, $1, '5%' FROM t"
    assert order == ("b", "a")


def test_anything_but_named_placeholders_is_left_to_psycopg() -> None:
    assert _dollar("SELECT %s", ["a"]) is None
    assert _dollar("SELECT %(a)b", ["a"]) is None
    assert _dollar("SELECT %(other)s", ["a"]) is None
    assert _dollar("SELECT 1", []) == ("SELECT 1", ())


@pytest.fixture
def conn(url: str) -> Iterator[sa.Connection]:  # noqa: F811 - the fixture imported
    engine = make_engine(url)
    T.metadata.create_all(engine)
    with engine.begin() as connection:
        yield connection
    engine.dispose()


def _fill(conn: sa.Connection) -> None:
    for name, n in (("apple", 1), ("avocado", 5), ("banana", 2), ("apricot", 7)):
        INSERT.execute(conn, name=name, data={"k": [n, None]}, n=n).fetchone()


def test_rows_as_from_sqlalchemy(conn: sa.Connection) -> None:
    import psycopg

    _fill(conn)
    cursor = MATCH.execute(conn, add=1)
    assert type(cursor) is psycopg.RawCursor
    # Sent with PostgreSQL's placeholders, and prepared at once (make_engine).
    sent = conn.execute(sa.text("SELECT statement FROM pg_prepared_statements "
                                "WHERE statement LIKE 'SELECT raw_things.name%'")).scalars().all()
    assert len(sent) == 1 and "$1" in sent[0], sent
    rows = [tuple(r) for r in cursor.fetchall()]
    assert rows == [tuple(r) for r in conn.execute(MATCH.stmt, {"add": 1})]
    assert rows == [("apple", 2, "50%")]  # 1 < 3; avocado 5, apricot 7 ≥ 3
    assert [tuple(r) for r in MATCH.execute(conn, add=1).fetchall()] == rows
    assert [r[0] for r in MATCH.execute(conn, add=2).fetchall()] == ["apple", "avocado"]
    stored = conn.execute(sa.select(T.c.data).where(T.c.name == "banana")).scalar()
    assert stored == {"k": [2, None]}


def test_errors_come_as_sqlalchemy_errors(conn: sa.Connection) -> None:
    INSERT.execute(conn, name="twice", data=None, n=0).fetchone()
    with pytest.raises(sa.exc.IntegrityError):
        with conn.begin_nested():
            INSERT.execute(conn, name="twice", data=None, n=0)


def test_the_server_still_prepares_it(conn: sa.Connection) -> None:
    _fill(conn)
    driver = conn.connection.driver_connection
    assert driver is not None and driver.prepare_threshold is not None
    for _ in range(driver.prepare_threshold + 2):
        MATCH.execute(conn, add=2).fetchall()
    prepared = conn.execute(sa.text("SELECT statement FROM pg_prepared_statements")).scalars()
    assert any("raw_things.name LIKE" in sql and "$1" in sql for sql in prepared)


def test_another_cursor_factory_gets_the_text(conn: sa.Connection) -> None:
    import psycopg

    _fill(conn)
    with onestatement._checking(conn):
        cursor = MATCH.execute(conn, add=1)
        assert type(cursor) is not psycopg.RawCursor
        assert [r[0] for r in cursor.fetchall()] == ["apple"]
        with pytest.raises(onestatement.NotOneStatement):
            INSERT.execute(conn, name="one", data=None, n=0).fetchone()
            INSERT.execute(conn, name="two", data=None, n=0)
