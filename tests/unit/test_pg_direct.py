"""On psycopg a Prepared statement on a connection in autocommit runs straight
through libpq (``cirrus.db.pgdirect``): the same rows, counts and errors as
through psycopg's cursor, prepared once per connection, and still working
after psycopg's ``DEALLOCATE ALL``; inside a transaction, the cursor."""
from __future__ import annotations

import datetime
from typing import Iterator

import pytest
import sqlalchemy as sa

from cirrus.db import pgdirect
from cirrus.db.engine import make_engine
from cirrus.db.prepared import Prepared
from cirrus.db.rows import PreparedRead
from tests.unit.test_pg_database import url  # noqa: F401 - the fixture

T = sa.Table("direct_things", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("name", sa.String(40), unique=True), sa.Column("data", sa.JSON),
             sa.Column("n", sa.Integer), sa.Column("flag", sa.Boolean),
             sa.Column("at", sa.DateTime), sa.Column("note", sa.String(40)))
INSERT = Prepared(T.insert().values(
    name=sa.bindparam("name"), data=sa.bindparam("data"), n=sa.bindparam("n"),
    flag=sa.bindparam("flag"), at=sa.bindparam("at"), note=sa.bindparam("note")
).returning(T.c.id))
BUMP = Prepared(T.update().where(T.c.n < sa.bindparam("below")).values(n=T.c.n + 1))
READ = PreparedRead(sa.select(T.c.name, T.c.data, T.c.n, T.c.flag, T.c.at, T.c.note)
                    .where(T.c.n >= sa.bindparam("least")).order_by(T.c.name))
AT = datetime.datetime(2026, 11, 27, 18, 30, 0, 123456)


@pytest.fixture
def engine(url: str) -> Iterator[sa.Engine]:  # noqa: F811 - the fixture imported
    engine = make_engine(url)
    T.metadata.create_all(engine)
    yield engine
    T.metadata.drop_all(engine)
    engine.dispose()


@pytest.fixture
def auto(engine: sa.Engine) -> Iterator[sa.Connection]:
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        yield connection


def _fill(conn: sa.Connection) -> None:
    for name, n in (("apple", 1), ("banana", 2), ("cherry", 3)):
        INSERT.execute(conn, name=name, data={"k": [n, None]}, n=n, flag=n % 2 == 0, at=AT,
                       note=None).fetchone()


def _ours(conn: sa.Connection) -> list[str]:
    return list(conn.execute(sa.text(
        "SELECT name FROM pg_prepared_statements WHERE name LIKE 'cirrus_%'")).scalars())


def test_in_autocommit_rows_and_counts_come_from_libpq_as_from_the_cursor(
        auto: sa.Connection, engine: sa.Engine) -> None:
    _fill(auto)
    result = BUMP.execute(auto, below=3)
    assert isinstance(result, pgdirect.Result)
    assert result.rowcount == 2
    direct = READ.all(auto, least=2)
    with engine.begin() as conn:  # a transaction: psycopg's cursor
        assert not isinstance(BUMP.execute(conn, below=0), pgdirect.Result)
        through_cursor = READ.all(conn, least=2)
    assert direct == through_cursor == [
        {"name": "apple", "data": {"k": [1, None]}, "n": 2, "flag": False, "at": AT, "note": None},
        {"name": "banana", "data": {"k": [2, None]}, "n": 3, "flag": True, "at": AT, "note": None},
        {"name": "cherry", "data": {"k": [3, None]}, "n": 3, "flag": False, "at": AT,
         "note": None}]
    one = BUMP.execute(auto, below=0)
    assert one.rowcount == 0 and one.fetchone() is None and one.fetchall() == []
    # prepared once on this connection, whatever the values
    assert len(_ours(auto)) == 3


def test_errors_come_as_sqlalchemy_errors_and_the_connection_goes_on(
        auto: sa.Connection) -> None:
    INSERT.execute(auto, name="twice", data=None, n=0, flag=None, at=None, note=None)
    with pytest.raises(sa.exc.IntegrityError):
        INSERT.execute(auto, name="twice", data=None, n=0, flag=None, at=None, note=None)
    assert INSERT.execute(auto, name="once", data=None, n=0, flag=None, at=None,
                          note=None).fetchone() is not None


def test_psycopgs_deallocate_all_is_survived(auto: sa.Connection) -> None:
    """After a ROLLBACK psycopg deallocates every prepared statement of the
    session, this path's too: the next execution prepares it again."""
    _fill(auto)
    assert READ.all(auto, least=3)[0]["name"] == "cherry"
    assert _ours(auto)
    auto.exec_driver_sql("DEALLOCATE ALL")
    assert _ours(auto) == []
    assert READ.all(auto, least=3)[0]["name"] == "cherry"
    assert BUMP.execute(auto, below=2).rowcount == 1
    assert len(_ours(auto)) == 2


def test_inside_a_transaction_the_cursor_runs_it(engine: sa.Engine) -> None:
    with engine.connect() as conn:
        with conn.begin() as trans:
            INSERT.execute(conn, name="undone", data=None, n=0, flag=None, at=None, note=None)
            trans.rollback()
        assert READ.all(conn, least=0) == []
        conn.commit()
        assert _ours(conn) == []


def test_past_its_limit_a_connection_uses_the_cursor(
        auto: sa.Connection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgdirect, "PREPARED_MAX", 1)
    _fill(auto)  # the insert: prepared here
    assert not isinstance(BUMP.execute(auto, below=2), pgdirect.Result)
    assert READ.all(auto, least=2)[0]["name"] == "apple"
    assert len(_ours(auto)) == 1
