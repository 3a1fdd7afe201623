"""Database access: synchronous SQLAlchemy Core, units of work awaited from asyncio.

DESIGN §4 measured sync sqlite3 at twice aiosqlite's throughput for a boot-like
workload; SQLite has one writer anyway. So every unit of work is a plain
function ``fn(conn, *args)`` that runs inside one transaction, awaited with
:meth:`Database.run`. On SQLite the writes a loop queues in one iteration are
group-committed on the loop's own thread (``groupcommit``); on other databases
they run on a pool of writer threads (a network round trip must not block the
loop), each thread taking its share of the units queued into one transaction
(``pgcommit``). Reads go to a small reader pool (WAL lets them proceed beside
the writer); point reads may run on the loop (``rows.read_here``). On
PostgreSQL a read runs without BEGIN and COMMIT (see ``Database._read_tx``),
so does a write unit declared one statement (``onestatement``), and a
connection is checked without a round trip (``_pg_alive``). Each PostgreSQL DB
thread keeps a connection of its own (``Database._own``): a pool checkout and
checkin per unit cost more of the process's CPU than the unit's statements.
"""
from __future__ import annotations

import contextlib
import select
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Concatenate, Hashable, Iterator, ParamSpec, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from cirrus.db import checkpoint, onestatement, pgcommit
from cirrus.db.coalesce import Coalescer, SetUnit
from cirrus.db.groupcommit import GroupCommit
from cirrus.db.handoff import settled
from cirrus.db.rows import json_dumps
from cirrus.db.workers import WorkerPool

T = TypeVar("T")
RowT = TypeVar("RowT")
P = ParamSpec("P")
# A unit of work: a function of a connection (and its own arguments).


class UnitObserver(Protocol):
    """Told how long each unit of work took and how units were grouped (the
    process's metrics, :class:`cirrus.metrics.DbMetrics`)."""

    def unit(self, write: bool, seconds: float) -> None:
        """A unit awaited through :meth:`Database.run` (write) or :meth:`Database.read`
        ended: ``seconds`` from submit to result."""

    def batch(self, size: int, seconds: float) -> None:
        """A group commit (SQLite) of ``size`` units took ``seconds`` (units and COMMIT)."""


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # Let SQLAlchemy, not pysqlite, decide where transactions begin, so that
    # SAVEPOINTs (begin_nested) work and reads are transactional too.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def make_engine(url: str) -> Engine:
    """An engine for ``url``; SQLite gets WAL and a created parent directory."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False},
                                  pool_size=4, max_overflow=4, json_serializer=json_dumps)
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        # Writers take the write lock up front (BEGIN IMMEDIATE): a deferred
        # transaction that reads first and writes later fails at once with
        # SQLITE_BUSY_SNAPSHOT when another connection committed in between.
        # Straight on the driver's connection: this runs once per transaction,
        # and SQLAlchemy's statement machinery would cost more than the BEGIN.
        sa.event.listen(engine, "begin", lambda conn: conn.connection.driver_connection.execute(
            conn.info.get("begin", "BEGIN")))
        return engine
    if parsed.get_backend_name() != "postgresql":
        return sa.create_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True,
                                json_serializer=json_dumps)
    # READ COMMITTED pinned, whatever the server's default: reads run without a
    # transaction (``Database._read_tx``), which is only the same thing under it.
    engine = sa.create_engine(url, pool_size=PG_WRITERS + PG_READERS, max_overflow=6,
                              isolation_level="READ COMMITTED",
                              pool_use_lifo=True,
                              json_serializer=json_dumps,
                              connect_args=_planned_once(parsed))
    sa.event.listen(engine, "checkout", _pg_alive)
    return engine


def _planned_once(parsed: sa.engine.URL) -> dict[str, Any]:
    """psycopg's connection arguments that make each statement planned once
    per connection: prepared at its first execution (psycopg's default waits
    for the fifth), and run by its generic plan from then on (the server's
    default plans the first five executions of a prepared statement afresh
    too). Until then a small or idle cloud parsed and planned every
    execution: ~11 ms of planning a single boot (its polls and delete
    included), as much as the statements' execution (the start fold: 1.2 ms
    planned, 0.55 ms run; docs/performance.md, round eight).
    The statements are key lookups a generic plan serves as well
    (tests/unit/test_pg_instance_plans.py); the one that needs its values
    planned in (the backlog count, ``compute/admission.py``) has them as
    literals. A URL's own ``options`` are kept."""
    options = parsed.query.get("options") or ""
    if isinstance(options, tuple):
        options = " ".join(options)
    return {"prepare_threshold": 0,
            "options": f"{options} -c plan_cache_mode=force_generic_plan".strip()}


# DB threads on PostgreSQL. Their units mostly wait on the network, so more than
# the cores; writers batch what queues behind them (``pgcommit``). Each thread
# is a backend with prepared statements of its own, each planned there once
# (``_planned_once``); round four measured 8 + 6 per process planning twice as
# often as 4 + 3, before statements were prepared at their first execution.
PG_WRITERS = 4
PG_READERS = 3


def _pg_alive(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """Check a pooled connection before use without a round trip (SQLAlchemy's
    ``pool_pre_ping`` sends a statement for every unit of work: ~15 % of a
    boot's round trips). An idle connection has nothing to read; if its socket
    is readable, the server closed it (a restart, a killed backend: the
    goodbye message or EOF is waiting), and the pool connects afresh."""
    try:
        poller = select.poll()
        poller.register(dbapi_conn.fileno(), select.POLLIN)
        readable = bool(poller.poll(0))
    except Exception as error:  # noqa: BLE001 - closed already: fileno() fails
        raise sa.exc.DisconnectionError(str(error)) from error
    if readable:
        raise sa.exc.DisconnectionError("the server closed the connection")


def _still_open(conn: Connection) -> bool:
    """Whether a held connection's server is still there (``_pg_alive``)."""
    try:
        _pg_alive(conn.connection.dbapi_connection, None, None)
    except sa.exc.DisconnectionError:
        return False
    return True


class Database:
    """Runs units of work, one transaction each (on SQLite possibly shared)."""

    def __init__(self, url: str, observer: UnitObserver | None = None, *,
                 check_units: bool = False) -> None:
        """``observer``: told each unit's time and each group commit's size.
        ``check_units``: a unit declared one statement that sends a second
        write fails (``onestatement.NotOneStatement``); for tests."""
        self.url = url
        self.observer = observer
        self.check_units = check_units
        self.engine = make_engine(url)
        self.is_sqlite = self.engine.dialect.name == "sqlite"
        self.is_postgresql = self.engine.dialect.name == "postgresql"
        self._local = threading.local()
        self._held: list[Connection] = []
        self._reader = WorkerPool(self._read_tx, 2 if self.is_sqlite else PG_READERS, "db-r")
        self._writer: WorkerPool | None = None
        self._group: GroupCommit | None = None
        self._checkpointer: checkpoint.Checkpointer | None = None
        if self.is_sqlite:
            # One writer anyway: a loop's queued writes share a transaction
            # (savepoint each) on its thread; WAL checkpoints run beside it.
            self._checkpointer = checkpoint.Checkpointer(self.engine.raw_connection)
            self._group = GroupCommit(self._loop_connection, on_commit=self._checkpointer.nudge,
                                      on_batch=observer.batch if observer else None)
        else:
            self._writer = WorkerPool(self._tx, PG_WRITERS, "db-w", max_batch=pgcommit.MAX_BATCH,
                                      batch=partial(pgcommit.run_batch, partial(self._own, False),
                                                    autocommit=partial(self._own, True)))
        # PostgreSQL: same-shaped one-statement units of concurrent callers as
        # one statement (``cirrus.db.coalesce``); None elsewhere.
        self.coalescer: Coalescer | None = None
        if self._writer is not None and self.is_postgresql:
            self.coalescer = Coalescer(self._writer.submit, check_units=check_units)

    def _connection(self) -> Connection:
        """This thread's connection (reads, ``run_sync``). SQLite keeps one per
        DB thread for good: checking a connection out of the pool and resetting
        it on return cost more than a small transaction. PostgreSQL's DB
        threads keep theirs through ``_own``."""
        conn = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self._local.conn = self.engine.connect()
            self._held.append(conn)
        return conn

    @contextlib.contextmanager
    def _own(self, autocommit: bool) -> Iterator[Connection]:
        """This DB thread's own connection (PostgreSQL), for one unit or one
        batch: in autocommit or not (psycopg's flag, switched without a round
        trip), and left with no transaction open. Checked before each use as
        the pool checks its connections (``_pg_alive``): one the server closed
        (a restart, a killed backend), or that a statement found broken, is
        dropped and the pool gives a fresh one. Not nested: a use inside
        another takes a pooled connection (the flag cannot change inside a
        transaction)."""
        local = self._local
        if getattr(local, "busy", False):
            with self.engine.connect() as pooled:
                if autocommit:
                    pooled.execution_options(isolation_level="AUTOCOMMIT")
                yield pooled
            return
        conn: Connection | None = getattr(local, "own", None)
        if conn is not None and (conn.closed or conn.invalidated or not _still_open(conn)):
            self._drop(conn)
            conn = None
        if conn is None:
            conn = local.own = self.engine.connect()
            self._held.append(conn)
        driver: Any = conn.connection.dbapi_connection
        if driver.autocommit != autocommit:
            driver.autocommit = autocommit
        local.busy = True
        try:
            yield conn
        finally:
            local.busy = False
            try:
                if conn.in_transaction():  # autobegun by a statement outside begin()
                    conn.rollback()
                # A transaction the driver was left in behind SQLAlchemy's
                # back would refuse the next use's autocommit switch.
                if getattr(getattr(driver, "pgconn", None), "transaction_status", 0):
                    driver.rollback()
            except Exception:  # noqa: BLE001 - a broken connection: the next use replaces it
                self._drop(conn)

    def _drop(self, conn: Connection) -> None:
        """Let go of a DB thread's own connection (broken, or closed by the server)."""
        if getattr(self._local, "own", None) is conn:
            self._local.own = None
        with contextlib.suppress(ValueError):
            self._held.remove(conn)
        with contextlib.suppress(Exception):
            if not conn.invalidated:
                conn.invalidate()
            conn.close()

    def _loop_connection(self) -> Connection:
        """The write connection of a loop's thread (group commits). It never
        waits for the write lock (the loop polls for it, ``groupcommit``) and
        leaves checkpoints to the checkpointer but for a bound
        (``cirrus.db.checkpoint``): either would stall the loop."""
        conn = getattr(self._local, "loop_conn", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self._local.loop_conn = self.engine.connect()
            driver = conn.connection.driver_connection
            driver.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
            driver.execute(  # type: ignore[union-attr]
                f"PRAGMA wal_autocheckpoint = {checkpoint.WRITER_CHECKPOINT_PAGES}")
            self._held.append(conn)
        return conn

    def _tx(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any],
            write: bool = True) -> T:
        if not self.is_sqlite:
            with self.engine.connect() as conn:
                conn.info["begin"] = "BEGIN IMMEDIATE" if write else "BEGIN"
                with conn.begin():
                    return fn(conn, *args, **kwargs)
        conn = self._connection()
        conn.info["begin"] = "BEGIN IMMEDIATE" if write else "BEGIN"
        with conn.begin():
            return fn(conn, *args, **kwargs)

    def _read_tx(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        if self.engine.dialect.name != "postgresql":
            return self._tx(fn, args, kwargs, False)
        # PostgreSQL's READ COMMITTED (pinned by ``make_engine``) gives each
        # statement its own snapshot, in a transaction or not: BEGIN and COMMIT
        # would add two round trips to a read and change nothing it sees. So a
        # read unit of several statements never had one snapshot for all of
        # them (each may see commits made after the one before), and none may
        # rely on it; without a transaction it sees exactly what it saw in one
        # (tests/unit/test_pg_database.py). Row locks are for write units.
        with self._own(True) as conn:
            return fn(conn, *args, **kwargs)

    async def run(self, fn: Callable[Concatenate[Connection, P], T], *args: P.args,
                  **kwargs: P.kwargs) -> T:
        """Run ``fn(conn, *args, **kwargs)`` atomically in a write transaction
        (on SQLite possibly shared with other units, each in its own savepoint;
        on PostgreSQL, a unit declared ``onestatement.one_statement`` runs in
        autocommit). A cancelled caller waits for the transaction to end
        before it unwinds."""
        if self.check_units and onestatement.is_one_statement(fn):
            fn = onestatement.checked(fn)
        if self._group is not None:
            future = self._group.submit(fn, args, kwargs)
        else:
            assert self._writer is not None
            future = self._writer.submit(fn, args, kwargs)
        if self.observer is None:
            return await settled(future)
        started = time.perf_counter()
        try:
            return await settled(future)
        finally:
            self.observer.unit(True, time.perf_counter() - started)

    async def run_row(self, unit: SetUnit[RowT, T], shape: Hashable, row: RowT) -> T:
        """``unit``'s ``row`` written: on PostgreSQL through :attr:`coalescer`,
        in one statement with the same-shaped rows of concurrent callers;
        elsewhere ``unit.run_one`` as a unit of its own. The same outcome
        either way, and timed as a write unit (the observer's metrics)."""
        if self.coalescer is None:
            return await self.run(unit.run_one, row)
        if self.observer is None:
            return await self.coalescer.run(unit, shape, row)
        started = time.perf_counter()
        try:
            return await self.coalescer.run(unit, shape, row)
        finally:
            self.observer.unit(True, time.perf_counter() - started)

    async def read(self, fn: Callable[Concatenate[Connection, P], T], *args: P.args,
                  **kwargs: P.kwargs) -> T:
        """Run a read-only ``fn(conn, ...)`` on the reader pool."""
        if self.observer is None:
            return await settled(self._reader.submit(fn, args, kwargs))
        started = time.perf_counter()
        try:
            return await settled(self._reader.submit(fn, args, kwargs))
        finally:
            self.observer.unit(False, time.perf_counter() - started)

    def run_sync(self, fn: Callable[Concatenate[Connection, P], T], *args: P.args,
                 **kwargs: P.kwargs) -> T:
        """Blocking variant for start-up code and scripts."""
        return self._tx(fn, args, kwargs)

    def close(self) -> None:
        if self._group is not None:
            self._group.shutdown()
        if self._checkpointer is not None:
            self._checkpointer.shutdown()
        if self._writer is not None:
            self._writer.shutdown()
        self._reader.shutdown()
        for conn in self._held:  # their threads have ended
            conn.close()
        self._held.clear()
        self.engine.dispose()


def fetch_one(conn: Connection, stmt: Any, params: dict[str, Any] | None = None
              ) -> dict[str, Any] | None:
    """The first row as a dict; ``params`` for a statement with bindparams."""
    row = conn.execute(stmt, params).mappings().first()
    return dict(row) if row is not None else None


def fetch_all(conn: Connection, stmt: Any, params: dict[str, Any] | None = None
              ) -> list[dict[str, Any]]:
    """Every row as a dict; ``params`` for a statement with bindparams."""
    return [dict(r) for r in conn.execute(stmt, params).mappings()]
