"""The revocation generation, read fresh for every token validation (and the
catalog's with it: :attr:`GenerationReader.catalog`).

A validation must see every revocation committed before its request arrived,
through whichever API process (``cirrus up --api-workers N``, or ``cirrus api``
processes on one database): so each one reads the ``revocation_generation`` row
(:mod:`cirrus.identity.revocation`), and only when it moved are events loaded.

* On SQLite the row is read right on the event loop's thread, on a connection
  of this reader's own in autocommit: one statement, ~8 µs. Handing it to a
  DB thread would cost ~0.3 ms of CPU (``cirrus.db.rows.read_here``). WAL
  readers do not wait on writers; a busy database sends the read to the DB
  threads instead.
* Elsewhere a round trip must not block the loop, and every validation that
  arrives while no read has begun joins the next one (one in flight, one
  gathering): under load a round trip serves many requests, and still none is
  answered from a read that began before it came. With psycopg (PostgreSQL's
  driver cirrus documents) the read goes over an asyncio connection of its
  own, as a statement prepared on it and sent through libpq directly (no
  cursor: ~0.12 ms of CPU against ~0.17–0.2 ms through ``execute``); with
  another driver, through the DB threads, ~0.45 ms.

The same statement reads the catalog's generation (bumped with every change of
a flavor or an image, migration 0042): :attr:`GenerationReader.catalog` is the
highest any read returned, so once a request's token is checked it is at least
the catalog's generation as the request arrived. The compute API keys its
flavor and image lookups by it (``cirrus/compute/catalog_cache.py``).
"""
from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from typing import Any

import sqlalchemy as sa

from cirrus.db.engine import Database

LOG = logging.getLogger(__name__)
_SQL = "SELECT generation, catalog_generation FROM revocation_generation WHERE id = 1"
# The name of _SQL prepared on the asyncio psycopg connection.
_PREPARED = b"cirrus_generations"
_ROW = sa.text(_SQL)
Generations = tuple[int, int]  # (revocation, catalog)
# After the asyncio connection failed, reads go to the DB threads this long
# before it is tried again (a connect per validation would cost more).
REMOTE_RETRY = 30.0


class GenerationReader:
    """``await current()``: the generation as committed when it was called, or
    later; :attr:`catalog`: the catalog's generation as the latest read found
    it (None before the first)."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._here: Any = None  # SQLite: the loop's own DBAPI connection
        self._remote: Any = None  # psycopg: an asyncio connection of its own
        self._remote_retry_at = 0.0
        self._reading: asyncio.Future[Generations] | None = None  # the read in flight
        self._gathering: asyncio.Future[Generations] | None = None  # the next one, not begun
        self.catalog: int | None = None

    async def current(self) -> int:
        found = self._read_here() if getattr(self._db, "is_sqlite", False) else None
        if found is None:
            found = await self._shared_read()
        revocations, catalog = found
        # The highest seen: reads on the loop's thread and shared reads may
        # end out of order, and a generation never goes back.
        if self.catalog is None or catalog > self.catalog:
            self.catalog = catalog
        return revocations

    def _read_here(self) -> Generations | None:
        """The row, read on this thread; None when the database is busy."""
        if self._here is None:
            self._here = _own_connection(self._db.engine)
        try:
            rows = self._here.execute(_SQL).fetchall()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            return None
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    async def _shared_read(self) -> Generations:
        gathering = self._gathering
        if gathering is None:
            gathering = self._gathering = asyncio.ensure_future(self._read_next(self._reading))
        return await asyncio.shield(gathering)

    async def _read_next(self, previous: asyncio.Future[Generations] | None) -> Generations:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])  # one read at a time
        # From here on, callers gather for the next read, not this one: it may
        # already see the database as it was before they came.
        self._reading, self._gathering = self._gathering, None
        if self._psycopg() and time.monotonic() >= self._remote_retry_at:
            value = await self._read_psycopg()
            if value is not None:
                return value
        return await self._db.read(read_generations)

    def _psycopg(self) -> bool:
        engine = getattr(self._db, "engine", None)
        return engine is not None and engine.dialect.driver == "psycopg"

    async def _read_psycopg(self) -> Generations | None:
        """The row over this reader's asyncio connection; None (read it on the
        DB threads) when that connection cannot be had or broke."""
        import psycopg

        try:
            if self._remote is None or self._remote.closed:
                self._remote = await _psycopg_connection(self._db.engine)
            value = await _read_prepared(self._remote)
        except psycopg.Error as exc:
            LOG.warning("revocation generation: reading on the DB threads for %.0f s (%s)",
                        REMOTE_RETRY, exc)
            if self._remote is not None:
                self._remote.pgconn.finish()
            self._remote = None
            self._remote_retry_at = time.monotonic() + REMOTE_RETRY
            return None
        return value


def read_generations(conn: sa.Connection) -> Generations:
    """Both generations, on a DB thread (0 for a database without the row)."""
    row = conn.execute(_ROW).first()
    return (int(row[0]), int(row[1])) if row else (0, 0)


async def _read_prepared(conn: Any) -> Generations:
    """Both generations, read over ``conn`` (see :func:`_psycopg_connection`)
    by its prepared statement, through libpq; psycopg's errors as from
    ``execute``. Only one read at a time uses the connection."""
    from psycopg import errors, generators, pq

    pgconn = conn.pgconn
    pgconn.send_query_prepared(_PREPARED, None)
    results = await conn.wait(generators.execute(pgconn))
    if not results or results[-1].status != pq.ExecStatus.TUPLES_OK:
        raise errors.OperationalError(
            results[-1].get_error_message() if results else "no result")
    found = results[-1]
    if not found.ntuples:
        return 0, 0
    return int(found.get_value(0, 0)), int(found.get_value(0, 1))


def _own_connection(engine: sa.Engine) -> sqlite3.Connection:
    """A DBAPI connection for reads on the loop's thread, closed with ``engine``.
    It never waits for a lock (busy: the caller reads on a DB thread)."""
    conn = engine.connect()
    driver = conn.connection.driver_connection
    driver.execute("PRAGMA busy_timeout = 0")  # type: ignore[union-attr]
    sa.event.listen(engine, "engine_disposed", lambda _engine: conn.close(), once=True)
    return driver  # type: ignore[return-value]


async def _psycopg_connection(engine: sa.Engine) -> Any:
    """An autocommit asyncio psycopg connection to ``engine``'s database,
    closed with the engine."""
    import psycopg

    url = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        await conn.execute(f"PREPARE {_PREPARED.decode()} AS {_SQL}")
    except psycopg.Error:
        conn.pgconn.finish()
        raise
    # Disposal is synchronous: libpq's own close, without the loop.
    sa.event.listen(engine, "engine_disposed", lambda _engine: conn.pgconn.finish(), once=True)
    return conn
