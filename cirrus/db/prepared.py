"""Statements built and compiled once, run straight on the DBAPI cursor.

SQLAlchemy Core spends 0.1–0.7 ms of Python on a small guarded UPDATE (building
the statement, its cache key, the execution context); sqlite3 itself needs
~10 µs. On SQLite every write runs on the one writer thread, so that Python is
what limits boots per second (docs/performance.md). A :class:`Prepared` holds a
fixed Core statement whose variable parts are named ``bindparam``s; per dialect
it is compiled once, and each execution only applies the dialect's bind
processors (datetimes, JSON, booleans: the same values SQLAlchemy would send)
and calls ``cursor.execute`` on the connection of the caller's transaction.

Driver errors are raised as SQLAlchemy's wrappers (``sa.exc.IntegrityError``
…), as from ``Connection.execute``. For statements whose rows need result
processing (JSON, datetimes), read with SQLAlchemy as usual.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import re
import weakref
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Generic, Iterator, Protocol, Sequence, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine.default import DefaultDialect
from sqlalchemy.sql.compiler import SQLCompiler

from cirrus.db import pgdirect


@dataclass(frozen=True)
class _Plan:
    sql: str
    positional: bool
    names: tuple[str, ...]  # the parameters in the statement's order
    # Per parameter, in that order: its name and the value bound when the
    # caller gives none (what the statement fixes, literal binds; else None),
    # processed.
    fixed: tuple[tuple[str, Any], ...]
    # The parameters with a bind processor: position, name, processor.
    processors: tuple[tuple[int, str, Callable[[Any], Any]], ...]
    # Whether the driver's connection is the DBAPI connection itself (the
    # dialect's default), read without SQLAlchemy's property chain.
    plain_driver: bool
    # The same statement with ``$n`` placeholders for psycopg's raw-query
    # cursor (its parameters in ``$n`` order, positional), or None.
    raw: _Plan | None = None

    def bind(self, params: dict[str, Any]) -> Any:
        """The arguments for ``cursor.execute``: a list, or a dict of names."""
        values = [params.get(name, fixed) for name, fixed in self.fixed]
        for i, name, process in self.processors:
            if name in params:  # a fixed value is processed already
                values[i] = process(values[i])
        if self.positional:
            return values
        return dict(zip(self.names, values))


class Cursor(Protocol):
    """The DBAPI cursor a Prepared statement runs on (PEP 249), as much of it
    as cirrus reads."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> Any: ...

    @property
    def description(self) -> Sequence[Sequence[Any]]: ...

    # A row or None; Any, so that a count's one row is read without a check.
    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[Sequence[Any]]: ...

    def close(self) -> None: ...


# The statement kept, so that a caller may derive another from it.
S = TypeVar("S", bound=sa.ClauseElement)


class Prepared(Generic[S]):
    """A fixed statement; :meth:`execute` runs it with named parameters."""

    def __init__(self, stmt: S) -> None:
        self.stmt = stmt
        self._plans: weakref.WeakKeyDictionary[Any, _Plan] = weakref.WeakKeyDictionary()
        # The plan used last, checked first (almost always the one dialect):
        # the weak dictionary's lookup cost as much as binding the values.
        self._last: tuple[Any, _Plan] | None = None

    def _plan(self, dialect: Any) -> _Plan:
        last = self._last
        if last is not None and last[0]() is dialect:
            return last[1]
        plan = self._plans.get(dialect)
        if plan is None:
            plan = self._plans[dialect] = _compile(self.stmt, dialect)
        self._last = (weakref.ref(dialect), plan)
        return plan

    def execute(self, conn: sa.Connection, **params: Any) -> Cursor:
        """Run in ``conn``'s transaction; the DBAPI cursor (``rowcount``,
        ``fetchone()``, ``lastrowid``)."""
        dialect = conn.dialect
        plan = self._plan(dialect)
        fairy = conn.connection
        driver = fairy.dbapi_connection if plan.plain_driver else fairy.driver_connection
        assert driver is not None, "a checked-out connection has its driver's"
        cursor: Any
        # psycopg's $n form, not with another cursor factory (the one-statement
        # check's): that one sees the text it was given.
        raw = plan.raw if plan.raw is not None and \
            driver.cursor_factory is raw_cursor.plain else None
        if raw is not None:
            plan = raw
        args = plan.bind(params)
        try:
            if raw is None:
                cursor = driver.cursor()
            elif pgdirect.usable(driver) and (
                    done := pgdirect.execute(fairy.info, driver, plan.sql, args)) is not None:
                return done  # no cursor: straight to libpq
            else:
                cursor = raw_cursor.raw(driver)
            cursor.execute(plan.sql, args)
        except dialect.loaded_dbapi.Error as error:
            raise sa.exc.DBAPIError.instance(plan.sql, args, error,
                                             dialect.loaded_dbapi.Error) from error
        result: Cursor = cursor
        return result


def _compile(stmt: sa.ClauseElement, dialect: Any) -> _Plan:
    compiled = stmt.compile(dialect=dialect)
    if not isinstance(compiled, SQLCompiler):
        raise TypeError(f"not a statement: {stmt}")
    if "POSTCOMPILE" in compiled.string:
        raise ValueError("a Prepared statement needs fixed parameters, not an "
                         f"expanding IN: {compiled.string}")
    names = (compiled.positiontup or []) if dialect.positional else list(compiled.binds)
    fixed: list[tuple[str, Any]] = []
    processors: list[tuple[int, str, Callable[[Any], Any]]] = []
    for i, name in enumerate(names):
        bind = compiled.binds[name]
        found = compiled._bind_processors.get(name)
        value = bind.effective_value
        if found is not None:
            if not callable(found):  # one processor per element: a tuple IN
                raise ValueError(f"a Prepared statement takes no tuple parameters: {name}")
            process = _faster(dialect, bind.type, found)
            processors.append((i, name, process))
            value = process(value)
        fixed.append((name, value))
    plain = type(dialect).get_driver_connection is DefaultDialect.get_driver_connection
    plan = _Plan(compiled.string, bool(dialect.positional), tuple(names), tuple(fixed),
                 tuple(processors), plain)
    if dialect.driver == "psycopg" and not dialect.positional and raw_cursor.available():
        raw = _dollar(compiled.string, names)
        if raw is not None:
            sql, order = raw
            by_name = dict(fixed)
            position = {name: i for i, name in enumerate(order)}
            plan = dataclasses.replace(plan, raw=_Plan(
                sql, True, order, tuple((name, by_name[name]) for name in order),
                tuple((position[name], name, process)
                      for _, name, process in processors if name in position),
                plain))
    return plan


# psycopg's placeholders as SQLAlchemy's pyformat compiler writes them: a
# named ``%(name)s``, or ``%%`` for a literal percent sign.
_PLACEHOLDER = re.compile(r"%(?:\(([^)]+)\))?(.)", re.DOTALL)


def _dollar(sql: str, names: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """``sql`` with ``$n`` placeholders (a name used twice keeps its number)
    and the names in ``$n`` order; None for anything but ``%(name)s`` and
    ``%%`` (left to psycopg's own conversion)."""
    known = set(names)
    order: list[str] = []
    number: dict[str, int] = {}
    odd = False

    def replace(match: re.Match[str]) -> str:
        nonlocal odd
        name, kind = match.group(1), match.group(2)
        if name is None and kind == "%":
            return "%"
        if name is None or kind != "s" or name not in known:
            odd = True
            return ""
        if name not in number:
            order.append(name)
            number[name] = len(order)
        return f"${number[name]}"

    text = _PLACEHOLDER.sub(replace, sql)
    return None if odd else (text, tuple(order))


class _RawCursor:
    """psycopg's plain cursor class and its raw-query one, found on first use
    (psycopg is installed only for PostgreSQL; RawCursor since 3.2)."""

    def __init__(self) -> None:
        self.plain: Any = None
        self.raw: Any = None
        self._looked = False

    def available(self) -> bool:
        if not self._looked:
            self._looked = True
            try:
                import psycopg
                self.plain, self.raw = psycopg.Cursor, psycopg.RawCursor
            except (ImportError, AttributeError):
                self.plain = self.raw = None
        return self.raw is not None


raw_cursor = _RawCursor()


def _faster(dialect: Any, type_: Any, process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Cheaper bind processors for SQLite, writing the same text as
    SQLAlchemy's; anything else goes to SQLAlchemy's processor."""
    if dialect.name != "sqlite":
        return process
    if isinstance(type_, sa.DateTime):
        return _datetime_text(process)
    if isinstance(type_, sa.JSON) and dialect._json_serializer is not None:
        return _json_text(dialect._json_serializer, process)
    return process


# The datetime formatted last and its text, shared by every DATETIME parameter:
# one statement often binds the same ``utcnow()`` two to four times (an
# event's start and creation, a row's created_at and updated_at). A tuple,
# replaced whole, so threads only ever see a matching pair; it holds the
# datetime, so the identity cannot be reused meanwhile.
_last_datetime: tuple[Any, str] = (object(), "")


def _datetime_text(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """SQLite's DATETIME processor formats with Python %-formatting (~4 µs, and a
    boot binds dozens); ``isoformat`` writes the same text for a naive datetime
    in C (~1 µs)."""
    exact = datetime.datetime

    def fast(value: Any) -> Any:
        global _last_datetime
        last = _last_datetime
        if last[0] is value:
            return last[1]
        if type(value) is exact and value.tzinfo is None:
            text = value.isoformat(" ", "microseconds")
            _last_datetime = (value, text)
            return text
        return process(value)
    return fast


def _json_text(serialize: Callable[[Any], str],
               process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A dict or list goes straight to the engine's serializer, as SQLAlchemy's
    JSON processor would send it after its checks for SQL NULL (which only
    None and the NULL markers can be)."""
    def fast(value: Any) -> Any:
        if value.__class__ is dict or value.__class__ is list:
            return serialize(value)
        return process(value)
    return fast


class PreparedCache:
    """Prepared statements by shape, built on first use by ``build(key)``."""

    def __init__(self, build: Callable[[Any], sa.ClauseElement]) -> None:
        self._build = build
        self._by_key: dict[Any, Prepared[sa.ClauseElement]] = {}

    def __getitem__(self, key: Any) -> Prepared[sa.ClauseElement]:
        prepared = self._by_key.get(key)
        if prepared is None:
            prepared = self._by_key[key] = Prepared(self._build(key))
        return prepared


def statement_savepoint(conn: sa.Connection) -> ContextManager[Any]:
    """Where a statement may fail and the transaction must go on (a unique-key
    clash that the caller catches): a savepoint on databases whose failed
    statement aborts the transaction (PostgreSQL); nothing on SQLite, which
    backs out the failed statement alone and keeps the transaction."""
    if conn.dialect.name == "sqlite":
        return contextlib.nullcontext()
    return conn.begin_nested()


@contextlib.contextmanager
def pipelined(conn: sa.Connection) -> Iterator[None]:
    """Prepared statements run inside are sent together, in one round trip
    (psycopg 3's pipeline mode): the results are read at the block's end or
    at the first fetch, which sends everything queued before it. For a run of
    inserts whose results nobody reads but the last. A driver error comes out
    as SQLAlchemy's wrapper, as from :meth:`Prepared.execute`; nothing
    changes on SQLite (no round trips)."""
    if conn.dialect.name != "postgresql":
        yield
        return
    driver = conn.connection.driver_connection
    assert driver is not None, "a checked-out connection has its driver's"
    error_type = conn.dialect.loaded_dbapi.Error
    try:
        with driver.pipeline():
            yield
    except error_type as error:
        raise sa.exc.DBAPIError.instance("(pipeline)", None, error, error_type) from error
