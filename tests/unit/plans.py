"""SQLite's query plan of a server listing, to check which indexes it uses."""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.compute import queries


def listing_plan(engine: sa.Engine, q: queries.ListQuery) -> str:
    """``EXPLAIN QUERY PLAN`` of the first statement ``list_instances(q)`` sends.

    Read from sqlite3's trace (the statement as run, its values in place):
    plain listings are Prepared statements, which go straight to the DBAPI
    cursor and past SQLAlchemy's execution events."""
    sent: list[str] = []
    with engine.connect() as conn:
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.set_trace_callback(sent.append)  # type: ignore[attr-defined]
        try:
            queries.list_instances(conn, q, columns=queries.BASIC_COLUMNS)
        finally:
            driver.set_trace_callback(None)  # type: ignore[attr-defined]
        stmt = next(s for s in sent if s.lstrip().upper().startswith("SELECT"))
        cursor = driver.cursor()
        return str(cursor.execute("EXPLAIN QUERY PLAN " + stmt).fetchall())
