"""A :class:`~cirrus.db.prepared.Prepared` statement run straight through libpq
(PostgreSQL on psycopg), without psycopg's cursor.

psycopg's cursor spends ~40 µs of Python a statement around libpq's own work:
a cursor and its transformer made, the query's prepare-cache bookkeeping, the
wait loop run as a generator. For a one-row guarded UPDATE that is ~45 % of
the client's CPU (91 against 51 µs a statement, measured side by side on this
machine; docs/performance.md, round fourteen), and a boot sends ten of them
across the processes. Here each connection prepares a statement once, under a
name of its own (``cirrus_N``), with the parameter types psycopg's dumpers
choose, as its cursor would; ``PQexecPrepared`` runs it and waits for the
reply without the GIL; the connection's own loaders (psycopg's transformer, in
C) turn the rows into values, so they come out as from its cursor.

Only on a connection in autocommit (the one-statement units and the set
statements that carry a boot's writes on PostgreSQL), not in pipeline mode:
a transaction's statements go through the cursor. The reason is psycopg's own
prepared statements: after a ROLLBACK (or a DROP, an ALTER) it sends
``DEALLOCATE ALL``, which takes this path's statements too. In autocommit the
next execution then fails at once with nothing done (no transaction to
abort), and is prepared and run again; inside a transaction that failure
would abort it. Errors are psycopg's, raised from the result as its cursor
raises them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

# Statements one connection prepares this way at most; past it, the rest go
# through the cursor (psycopg's own cache, bounded too): each is a plan kept
# in the backend's memory.
PREPARED_MAX = 256
_STATE = "cirrus_pgdirect"  # the key in the pool record's ``info``


@dataclass
class _Connection:
    """What one DBAPI connection keeps for this path."""

    transformer: Any
    # (SQL, parameter type OIDs) → the statement's name on this connection
    names: dict[tuple[str, tuple[int, ...]], bytes] = field(default_factory=dict)
    made: int = 0  # names given out (never reused: a DEALLOCATE may be partial)


class Result:
    """An executed statement as the part of a DBAPI cursor cirrus reads
    (:class:`cirrus.db.prepared.Cursor`); its rows are loaded already."""

    __slots__ = ("pgresult", "rowcount", "_rows", "_at")
    lastrowid = None

    def __init__(self, pgresult: Any, rows: list[tuple[Any, ...]]) -> None:
        self.pgresult = pgresult  # what rows.column_types reads
        tuples = pgresult.command_tuples
        self.rowcount = -1 if tuples is None else tuples
        self._rows = rows
        self._at = 0

    @property
    def description(self) -> Sequence[Sequence[Any]]:
        result = self.pgresult
        return [(result.fname(i), result.ftype(i)) for i in range(result.nfields)]

    def fetchone(self) -> Any:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchall(self) -> Sequence[Sequence[Any]]:
        rows, self._at = self._rows[self._at:], len(self._rows)
        return rows

    def close(self) -> None:
        self._rows = []


class _Libpq:
    """psycopg's parts this path uses, imported on first use (psycopg is
    installed only for PostgreSQL)."""

    def __init__(self) -> None:
        from psycopg import errors, pq
        from psycopg.adapt import PyFormat, Transformer

        self.transformer = Transformer.from_context
        self.auto = PyFormat.AUTO
        self.error_from_result = errors.error_from_result
        self.gone = errors.InvalidSqlStatementName  # a DEALLOCATE ALL took it
        self.ok = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)
        self.tuples_ok = pq.ExecStatus.TUPLES_OK


_libpq: _Libpq | None = None


def _parts() -> _Libpq:
    global _libpq
    if _libpq is None:
        _libpq = _Libpq()
    return _libpq


def usable(driver: Any) -> bool:
    """Whether a statement can go straight to libpq on ``driver`` (a psycopg
    connection) now: in autocommit, not in pipeline mode."""
    return bool(driver.autocommit) and driver._pipeline is None


def execute(info: dict[str, Any], driver: Any, sql: str, args: list[Any]) -> Result | None:
    """Run ``sql`` (``$n`` placeholders) with ``args`` on ``driver``, prepared
    on it once; ``info``: the connection's pool record's. None when this
    connection has prepared ``PREPARED_MAX`` statements already (the caller
    uses the cursor). Raises psycopg's errors."""
    libpq = _parts()
    state: _Connection | None = info.get(_STATE)
    if state is None or state.transformer.connection is not driver:
        state = info[_STATE] = _Connection(libpq.transformer(driver))
    tx = state.transformer
    params = tx.dump_sequence(args, [libpq.auto] * len(args))
    key = (sql, tx.types)
    try:
        result = _run(libpq, state, driver.pgconn, key, params)
    except libpq.gone:
        state.names.clear()  # all of them: prepare this one again, the rest when used
        result = _run(libpq, state, driver.pgconn, key, params)
    if result is None:
        return None
    rows: list[tuple[Any, ...]] = []
    if result.status == libpq.tuples_ok and result.ntuples:
        tx.set_pgresult(result)
        rows = tx.load_rows(0, result.ntuples, tuple)
    return Result(result, rows)


def _run(libpq: _Libpq, state: _Connection, pgconn: Any,
         key: tuple[str, tuple[int, ...]], params: list[Any]) -> Any:
    """The statement ``key`` run with ``params``, prepared first if this
    connection has not yet; None past ``PREPARED_MAX``."""
    tx = state.transformer
    name = state.names.get(key)
    if name is None:
        if len(state.names) >= PREPARED_MAX:
            return None
        name = b"cirrus_%d" % state.made
        state.made += 1
        _check(libpq, pgconn.prepare(name, key[0].encode(), key[1]), tx)
        state.names[key] = name
    result = pgconn.exec_prepared(name, params, tx.formats)
    _check(libpq, result, tx)
    return result


def _check(libpq: _Libpq, result: Any, tx: Any) -> None:
    if result.status not in libpq.ok:
        raise libpq.error_from_result(result, encoding=tx.encoding)
