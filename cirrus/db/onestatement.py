"""Write units of one statement: on PostgreSQL, no transaction around them.

A write unit in a transaction of its own costs ``BEGIN`` (psycopg sends it as
a round trip of its own) and ``COMMIT``; in a group-commit batch
(``cirrus.db.pgcommit``) a folded ``RELEASE SAVEPOINT; SAVEPOINT`` and its
share of both. A unit that writes with a single statement needs none of
them: in autocommit the statement is its own transaction, all of it or
nothing, and the deferred triggers (the counters of migration 0032) fire at
its end as they would at a COMMIT.

A unit says so with :func:`one_statement`. Its contract, on PostgreSQL:

* at most **one statement that writes** (INSERT, UPDATE, DELETE, a
  data-modifying ``WITH``, a locking ``SELECT … FOR …``);
* any number of plain ``SELECT`` s before or after it: under READ COMMITTED
  (pinned by ``engine.make_engine``) each statement takes its own snapshot in
  a transaction or not, so they see what they saw in one
  (``Database._read_tx`` says the same for reads);
* nothing undone by raising: once the write statement returned, it is
  committed. A unit may raise after it only when that statement changed
  nothing (a guarded save that matched no row, read back to say why).

SQLite keeps its group commit for these units too (a savepoint is cheap
there and batching is the win), so a unit may take more statements on
SQLite than on PostgreSQL: the declaration is about PostgreSQL.

With ``Database(check_units=True)`` (the setting ``db_check_units``, on in
the tests) the contract is checked on PostgreSQL: a second writing statement
raises :class:`NotOneStatement` before it is sent.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, ContextManager, Iterator, TypeVar

import sqlalchemy as sa

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__cirrus_one_statement__"
# What a read begins with; a locking read counts as a write (its lock would
# be released at once in autocommit: the unit relied on a transaction).
_LOCKS = (" FOR UPDATE", " FOR NO KEY UPDATE", " FOR SHARE", " FOR KEY SHARE")


class NotOneStatement(AssertionError):
    """A unit declared :func:`one_statement` sent a second writing statement."""


def one_statement(fn: F) -> F:
    """Declare the unit ``fn(conn, ...)`` one writing statement on PostgreSQL
    (see the module's contract): :meth:`cirrus.db.engine.Database.run` runs it
    there without a transaction."""
    setattr(fn, _MARK, True)
    return fn


def is_one_statement(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` (a function, or a bound method of one) was declared
    :func:`one_statement`."""
    return bool(getattr(fn, _MARK, False))


def writes(sql: str) -> bool:
    """Whether the statement ``sql`` may write (anything but a plain SELECT)."""
    head = sql.lstrip().upper()
    if not head.startswith("SELECT"):
        return True
    return any(lock in head for lock in _LOCKS)


@functools.cache
def _counting_cursor() -> type[Any]:
    """The cursor class that refuses its connection's second writing
    statement (made on first use: psycopg is installed only for PostgreSQL)."""
    import psycopg

    class Counting(psycopg.Cursor[Any]):
        def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:
            _count(self.connection, query)
            return super().execute(query, params, **kwargs)

        def executemany(self, query: Any, params_seq: Any, **kwargs: Any) -> None:
            _count(self.connection, query)
            super().executemany(query, params_seq, **kwargs)

    return Counting


# Per checked connection: how many writing statements the unit sent so far.
_written: dict[int, int] = {}


def _count(connection: Any, query: Any) -> None:
    sql = query if isinstance(query, str) else str(query)
    if not writes(sql):
        return
    key = id(connection)
    done = _written.get(key, 0)
    if done:
        raise NotOneStatement(f"a one-statement unit sent a second write: {sql[:200]}")
    _written[key] = done + 1


@contextlib.contextmanager
def _checking(conn: sa.Connection) -> Iterator[None]:
    driver: Any = conn.connection.driver_connection
    if not type(driver).__module__.startswith("psycopg"):
        yield  # SQLite: group-committed anyway
        return
    import psycopg

    if driver.cursor_factory is not psycopg.Cursor:
        yield  # a cursor of someone else's
        return
    key = id(driver)
    _written[key] = 0
    driver.cursor_factory = _counting_cursor()
    try:
        yield
    finally:
        driver.cursor_factory = psycopg.Cursor
        _written.pop(key, None)


def checked(fn: F) -> F:
    """``fn``, still declared one statement, refusing a second writing
    statement on PostgreSQL (raises :class:`NotOneStatement` before sending
    it)."""
    def run(conn: sa.Connection, *args: Any, **kwargs: Any) -> Any:
        with _checking(conn):
            return fn(conn, *args, **kwargs)
    return one_statement(run)  # type: ignore[return-value]


def run_autocommit(connect: Callable[[], ContextManager[sa.Connection]], fn: Callable[..., Any],
                   args: tuple[Any, ...], kwargs: dict[str, Any], *,
                   ready: bool = False) -> Any:
    """``fn(conn, *args, **kwargs)`` on a connection in autocommit: no BEGIN,
    no COMMIT, each statement its own transaction. ``ready``: ``connect``
    gives connections in autocommit already (a DB thread's own,
    ``engine.Database``); else a pooled one is switched for the unit."""
    with connect() as conn:
        if not ready:
            conn.execution_options(isolation_level="AUTOCOMMIT")
        return fn(conn, *args, **kwargs)
