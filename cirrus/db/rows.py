"""Reading rows cheaply, for the API's hottest reads.

SQLAlchemy Core spends ~0.15–0.4 ms on a small SELECT (building the statement,
its cache key, the execution context, the result metadata) and ~40 µs on each
row of a wide table with JSON columns (a Row, a RowMapping, a ``json.loads``
wrapped in Python per JSON column, a ``dict`` per row) — on SQLite 5–10× what
the database itself needs. ``GET /servers/{id}`` and ``/servers/detail`` are
exactly that shape, so they read through this module instead:

* :class:`RowReader` turns DBAPI rows into dicts, each column passed through the
  result processor SQLAlchemy itself would apply for the dialect (so the values
  are the same: datetimes, booleans, JSON), except that JSON text is parsed by
  orjson when it is installed (same values; ``json.loads`` for what orjson
  refuses or reads otherwise: NaN, integers beyond 64 bits);
* :func:`fetch_dicts` runs a statement the usual way (SQLAlchemy compiles, caches
  and binds it) and reads its rows with a RowReader;
* :class:`PreparedRead` is a fixed SELECT compiled once per dialect and run straight
  on the DBAPI cursor of the transaction's connection (~0.05 ms instead of ~0.2);
* :func:`read_here` runs a point read on SQLite on the event loop's own thread;
* :func:`json_dumps` writes JSON columns (the engines' serializer), the
  counterpart of :func:`json_loads`.

All of it runs inside the unit of work's transaction, like any other statement.
"""
from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar

import sqlalchemy as sa

from cirrus.db.prepared import Prepared

if TYPE_CHECKING:
    from cirrus.db.engine import Database

T = TypeVar("T")

try:  # optional: a C parser several times faster than json.loads
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; keep working without it
    orjson = None  # type: ignore[assignment]

Processor = Callable[[Any], Any]


# orjson reads integers beyond 64 bits as floats where json keeps them exact:
# texts with a run of 19 digits go to json. Found by mapping every byte to "0"
# (a digit) or " " in C: a regular expression scans ~15× slower.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def json_loads(text: str | bytes) -> Any:
    """What ``json.loads(text)`` returns, faster when orjson is there."""
    if orjson is not None:
        raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        if _LONG_RUN not in raw.translate(_DIGITS):
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass  # NaN, lone surrogates…: json's own answer (or error)
    return json.loads(text)


# orjson written to json's rules: what json refuses, orjson refuses too
# (datetimes, dataclasses; subclasses of str, int, dict and list go to json,
# which writes them its own way), and what it cannot write (integers beyond
# 64 bits, lone surrogates, keys that are not strings) is json's to answer.
_DUMP_OPTIONS = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
                 | orjson.OPT_PASSTHROUGH_SUBCLASS) if orjson is not None else 0


def json_dumps(value: Any) -> str:
    """JSON text of ``value`` that reads back as ``json.loads(json.dumps(value))``
    does, 2–15× faster when orjson is there (2× for a text holding ``null``,
    parsed again, see below): every JSON column of a boot is written
    (SQLAlchemy's JSON bind processor calls this, as the engine's
    ``json_serializer``). The text itself is compact and not ASCII-escaped.

    orjson writes NaN and ±Infinity as ``null`` where json writes ``NaN``: a
    text holding ``null`` is parsed again and must equal ``value`` (C speed),
    else json writes it. orjson also writes UUIDs and plain enums, which json
    refuses; nothing stores those."""
    if orjson is not None:
        try:
            text = orjson.dumps(value, option=_DUMP_OPTIONS)
        except TypeError:
            pass  # json's own answer: it may write it (huge ints) or raise
        else:
            if b"null" not in text or orjson.loads(text) == value:
                return text.decode()
    return json.dumps(value)


def _json_column(value: Any) -> Any:
    # SQLite's JSON processor also passes numbers through (json_extract results).
    if value is None or not isinstance(value, (str, bytes)):
        return value
    # Empty metadata, tags, binding profiles…: most JSON columns of a row, and
    # a new container costs a tenth of a parse.
    if value == "{}":
        return {}
    if value == "[]":
        return []
    return json_loads(value)


def _key(column: sa.ColumnElement[Any]) -> str:
    """The dict key a column's values go under."""
    if column.key is None:
        raise ValueError(f"column {column} has no name: label it")
    return column.key


class RowReader:
    """Dicts from DBAPI rows of ``columns`` (the statement's selected columns).

    Columns named in ``raw`` keep the driver's value (for JSON: the text on
    SQLite, the parsed value on PostgreSQL), for a caller that can do better
    than parse it every time."""

    def __init__(self, columns: Iterable[sa.ColumnElement[Any]], raw: Iterable[str] = ()) -> None:
        cols = list(columns)
        self.keys = [_key(c) for c in cols]
        self._types = [c.type for c in cols]
        self._raw = frozenset(raw)
        # per dialect: column types reported by the driver → processors
        self._plans: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], list[tuple[int, Processor]]]] = \
            weakref.WeakKeyDictionary()
        # The plan used last, checked first: a reader almost always serves one
        # dialect, and the weak dictionary's lookup costs more than a point read.
        self._last: tuple[Any, tuple[Any, ...], list[tuple[int, Processor]]] | None = None

    def _processors(self, dialect: Any, coltypes: tuple[Any, ...]) -> list[tuple[int, Processor]]:
        last = self._last
        if last is not None and last[0]() is dialect and last[1] == coltypes:
            return last[2]
        plan = self._plan(dialect, coltypes)
        self._last = (weakref.ref(dialect), coltypes, plan)
        return plan

    def _plan(self, dialect: Any, coltypes: tuple[Any, ...]) -> list[tuple[int, Processor]]:
        by_types = self._plans.setdefault(dialect, {})
        plan = by_types.get(coltypes)
        if plan is None:
            plan = []
            default_json = getattr(dialect, "_json_deserializer", None) is None
            for i, (type_, coltype) in enumerate(zip(self._types, coltypes)):
                if self.keys[i] in self._raw:
                    continue
                proc = type_.dialect_impl(dialect).result_processor(dialect, coltype)
                if proc is None:
                    continue
                if default_json and isinstance(type_, sa.JSON):
                    proc = _json_column  # the same parse, in C
                plan.append((i, proc))
            by_types[coltypes] = plan
        return plan

    def dicts(self, dialect: Any, coltypes: tuple[Any, ...],
              rows: Iterable[Sequence[Any]]) -> list[dict[str, Any]]:
        """One dict per row; ``coltypes``: :func:`column_types` of the cursor.
        Equal JSON texts in the same column of one result (a listing's
        flavors, security groups, empty metadata) are parsed once: those rows
        share the value, so treat JSON values as read-only."""
        if len(coltypes) != len(self.keys):
            raise ValueError(f"{len(coltypes)} columns read, {len(self.keys)} expected")
        plan = self._processors(dialect, coltypes)
        if not isinstance(rows, list) or len(rows) > 1:  # one row has nothing to share
            plan = [(i, _Memo(proc) if proc is _json_column else proc) for i, proc in plan]
        keys = self.keys
        out = []
        for row in rows:
            values = list(row)
            for i, proc in plan:
                values[i] = proc(values[i])
            out.append(dict(zip(keys, values)))
        return out


def column_types(cursor: Any) -> tuple[Any, ...]:
    """The type code of each column of the cursor's result, as its
    ``description`` gives them. On psycopg straight from the result (its
    ``description`` builds an object per column: ~80 µs for an instance's
    70 columns, measured as ~30 % of the compute's ``_start`` on PostgreSQL)."""
    result = getattr(cursor, "pgresult", None)
    if result is not None:
        return tuple([result.ftype(i) for i in range(result.nfields)])
    return tuple([d[1] for d in cursor.description])


class _Memo:
    """A JSON column's processor that parses each distinct text once."""

    __slots__ = ("parse", "seen")

    def __init__(self, parse: Processor) -> None:
        self.parse = parse
        self.seen: dict[Any, Any] = {}

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str):
            return self.parse(value)
        try:
            return self.seen[value]
        except KeyError:
            parsed = self.seen[value] = self.parse(value)
            return parsed


def fetch_dicts(conn: sa.Connection, stmt: sa.Select[Any],
                reader: RowReader | None = None) -> list[dict[str, Any]]:
    """``fetch_all(conn, stmt)`` for a SELECT, at a fraction of the per-row cost."""
    reader = reader or RowReader(stmt.selected_columns)
    result = conn.execute(stmt)
    try:
        cursor = result.cursor
        return reader.dicts(conn.dialect, column_types(cursor), cursor.fetchall())
    finally:
        result.close()


class PreparedRead:
    """A fixed SELECT (:class:`cirrus.db.prepared.Prepared`: compiled once per
    dialect, run on the DBAPI cursor) whose rows a :class:`RowReader` turns
    into dicts."""

    def __init__(self, stmt: sa.Select[Any], raw: Iterable[str] = ()) -> None:
        self.statement: Prepared[sa.Select[Any]] = Prepared(stmt)
        self.reader = RowReader(stmt.selected_columns, raw)

    def all(self, conn: sa.Connection, **params: Any) -> list[dict[str, Any]]:
        cursor = self.statement.execute(conn, **params)
        try:
            return self.reader.dicts(conn.dialect, column_types(cursor), cursor.fetchall())
        finally:
            cursor.close()

    def first(self, conn: sa.Connection, **params: Any) -> dict[str, Any] | None:
        rows = self.all(conn, **params)
        return rows[0] if rows else None


# -- point reads on the event loop's thread ---------------------------------------
# The event loop's own connection per engine (SQLite only), closed with the engine.
_HERE: weakref.WeakKeyDictionary[Any, sa.Connection] = weakref.WeakKeyDictionary()


def _connection_here(engine: sa.Engine) -> sa.Connection:
    conn = _HERE.get(engine)
    if conn is None or conn.closed or conn.invalidated:
        conn = _HERE[engine] = engine.connect()
        # Never wait on a lock here, in the loop: a busy database sends the
        # read to the DB threads instead (see read_here). WAL readers are
        # hardly ever busy (recovery, every read mark taken).
        conn.connection.driver_connection.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
        sa.event.listen(engine, "engine_disposed", lambda _engine: conn.close(), once=True)
    return conn


async def read_here(db: "Database", fn: Callable[..., T], *args: Any) -> T:
    """``await db.read(fn, *args)`` for a read of a row or two.

    On SQLite it runs right here, on the event loop's thread, in its own read
    transaction (a consistent snapshot, as on a DB thread). Handing a unit of
    work to a DB thread and back costs ~0.3 ms of CPU — two thread wake-ups and
    GIL hand-offs, more than such a read itself (~0.1 ms) — and the GIL keeps
    the loop from running Python meanwhile anyway. Larger reads (listings)
    stay on the DB threads; so does everything on other databases (a network
    round trip must not block the loop).
    """
    if not db.is_sqlite:
        return await db.read(fn, *args)
    conn = _connection_here(db.engine)
    try:
        with conn.begin():
            return fn(conn, *args)
    except sa.exc.OperationalError as exc:
        if "locked" not in str(exc) and "busy" not in str(exc):
            raise
    return await db.read(fn, *args)
