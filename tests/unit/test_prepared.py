"""Prepared statements send what SQLAlchemy would, and fail the way it would."""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa

from cirrus.db.engine import make_engine
from cirrus.db.prepared import Prepared, PreparedCache, statement_savepoint

T = sa.Table("things", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("name", sa.String(20), unique=True), sa.Column("at", sa.DateTime),
             sa.Column("data", sa.JSON), sa.Column("flag", sa.Boolean))
INSERT = Prepared(T.insert().values(name=sa.bindparam("n"), at=sa.bindparam("a"),
                                    data=sa.bindparam("d"), flag=sa.bindparam("f")))
AT = dt.datetime(2026, 11, 23, 8, 30, 1, 250)


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[sa.Connection]:
    engine = make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    T.metadata.create_all(engine)
    with engine.begin() as connection:
        yield connection
    engine.dispose()


def test_values_read_back_as_from_core(conn: sa.Connection) -> None:
    INSERT.execute(conn, n="prepared", a=AT, d={"k": [1, None]}, f=True)
    conn.execute(T.insert().values(name="core", at=AT, data={"k": [1, None]}, flag=True))
    rows = {r.name: (r.at, r.data, r.flag) for r in conn.execute(sa.select(T))}
    assert rows["prepared"] == rows["core"] == (AT, {"k": [1, None]}, True)


def test_driver_errors_come_as_sqlalchemy_errors(conn: sa.Connection) -> None:
    INSERT.execute(conn, n="twice", a=None, d=None, f=False)
    with pytest.raises(sa.exc.IntegrityError):
        with conn.begin_nested():
            INSERT.execute(conn, n="twice", a=None, d=None, f=False)


def test_rowcount_and_fixed_values(conn: sa.Connection) -> None:
    INSERT.execute(conn, n="a", a=None, d=None, f=False)
    update = Prepared(T.update().where(T.c.name == sa.bindparam("n")).values(flag=True))
    assert update.execute(conn, n="a").rowcount == 1
    assert update.execute(conn, n="missing").rowcount == 0
    assert conn.execute(sa.select(T.c.flag).where(T.c.name == "a")).scalar() is True


def test_expanding_in_is_refused(conn: sa.Connection) -> None:
    with pytest.raises(ValueError, match="expanding"):
        Prepared(sa.select(T.c.id).where(T.c.name.in_(["x", "y"]))).execute(conn)


def test_cache_builds_each_shape_once() -> None:
    built: list[int] = []

    def build(key: int) -> sa.Select:
        built.append(key)
        return sa.select(T.c.id).limit(key)
    cache = PreparedCache(build)
    assert cache[1] is cache[1] and cache[2] is not cache[1]
    assert built == [1, 2]


def test_a_failed_statement_leaves_the_transaction_going(conn: sa.Connection) -> None:
    """SQLite backs out the failed statement alone: no savepoint needed there."""
    INSERT.execute(conn, n="kept", a=None, d=None, f=False)
    with pytest.raises(sa.exc.IntegrityError):
        with statement_savepoint(conn):
            INSERT.execute(conn, n="kept", a=None, d=None, f=True)
    INSERT.execute(conn, n="after", a=None, d=None, f=False)
    assert set(conn.execute(sa.select(T.c.name)).scalars()) == {"kept", "after"}


def test_datetimes_are_stored_as_sqlalchemy_stores_them() -> None:
    """The fast DATETIME binding writes the text SQLAlchemy's own processor writes."""
    from sqlalchemy.dialects import sqlite

    from cirrus.db.prepared import _faster

    dialect = sqlite.dialect()
    original = sa.DateTime().dialect_impl(dialect).bind_processor(dialect)
    fast = _faster(dialect, sa.DateTime(), original)
    values = [dt.datetime(2026, 11, 23, 11, 29, 5, 123456), dt.datetime(2026, 1, 1),
              dt.datetime(1, 1, 1, 0, 0, 0, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
              dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), dt.date(2026, 1, 2), None]
    for value in values:
        assert fast(value) == original(value)


def test_utcnow_is_naive_utc() -> None:
    from cirrus.db.base import utcnow

    before = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    now = utcnow()
    after = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    assert now.tzinfo is None and before <= now <= after


def test_a_fixed_value_and_a_missing_parameter_bind_as_before(conn: sa.Connection) -> None:
    """Values the statement fixes are processed once (a JSON literal stays
    JSON), a parameter the caller leaves out binds None, as it did."""
    insert = Prepared(T.insert().values(name=sa.bindparam("n"), data={"fixed": [1]},
                                        at=sa.bindparam("a")))
    insert.execute(conn, n="x")
    insert.execute(conn, n="y", a=AT)
    rows = conn.execute(sa.select(T.c.name, T.c.data, T.c.at).order_by(T.c.name)).all()
    assert [tuple(r) for r in rows] == [("x", {"fixed": [1]}, None), ("y", {"fixed": [1]}, AT)]


@pytest.mark.parametrize("data", [{"k": [1, None]}, [], {}, None, sa.JSON.NULL, "text", 2.5])
def test_json_is_stored_as_sqlalchemy_stores_it(conn: sa.Connection, data: object) -> None:
    INSERT.execute(conn, n="prepared", a=AT, d=data, f=True)
    conn.execute(T.insert().values(name="core", at=AT, data=data, flag=True))
    stored = dict(conn.execute(sa.text("SELECT name, data FROM things")).all())
    assert stored["prepared"] == stored["core"]


def test_one_datetime_bound_twice_and_none_after_it(conn: sa.Connection) -> None:
    """The text of the datetime bound last is reused for the same object only."""
    stamp = Prepared(T.insert().values(name=sa.bindparam("n"), at=sa.bindparam("a")))
    later = AT + dt.timedelta(microseconds=1)
    for name, at in (("a", AT), ("b", AT), ("c", None), ("d", later), ("e", AT)):
        stamp.execute(conn, n=name, a=at)
    stored = dict(conn.execute(sa.text("SELECT name, at FROM things")).all())
    assert stored == {"a": "2026-11-23 08:30:01.000250", "b": "2026-11-23 08:30:01.000250",
                      "c": None, "d": "2026-11-23 08:30:01.000251",
                      "e": "2026-11-23 08:30:01.000250"}
