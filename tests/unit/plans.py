"""SQLite's query plan of a server listing, to check which indexes it uses."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute import queries


def listing_plan(engine: sa.Engine, q: queries.ListQuery) -> str:
    """``EXPLAIN QUERY PLAN`` of the first statement ``list_instances(q)`` sends."""
    sent: list[tuple[str, Any]] = []
    with engine.connect() as conn:
        sa.event.listen(conn, "before_cursor_execute",
                        lambda _c, _cur, stmt, params, *_: sent.append((stmt, params)))
        queries.list_instances(conn, q, columns=queries.BASIC_COLUMNS)
        stmt, params = sent[0]
        cursor = conn.connection.driver_connection.cursor()
        return str(cursor.execute("EXPLAIN QUERY PLAN " + stmt, params).fetchall())
