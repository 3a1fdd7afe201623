"""Statements a boot sends to PostgreSQL, counted by the server.

CPU figures move with the machine and with the run (docs/performance.md, round
eleven); a count of statements does not. ``pg_stat_statements`` (loaded by
scripts/setup-postgres.sh) counts each statement's executions per database,
the trigger statements and transaction control included; two snapshots around
the boot phase, restricted to the cloud's own database, give its statements a
boot — what a change that folds or removes a statement shows, run after run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

_CALLS = sa.text(
    "SELECT query, calls FROM pg_stat_statements "
    "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = :database)")


@dataclass(frozen=True)
class StatementCount:
    """One statement's executions a boot (``query`` shortened to one line)."""

    per_boot: float
    query: str


def per_boot(before: dict[str, int], after: dict[str, int], boots: int,
             top: int = 15) -> tuple[float, float, list[StatementCount]]:
    """Statements a boot between two snapshots, BEGINs a boot (transactions),
    and the ``top`` statements by executions. Statements that ran only before
    (or whose entry was evicted meanwhile) count nothing."""
    grew = {query: calls - before.get(query, 0) for query, calls in after.items()}
    grew = {query: calls for query, calls in grew.items() if calls > 0}
    boots = max(1, boots)
    total = sum(grew.values()) / boots
    begins = sum(calls for query, calls in grew.items()
                 if query.lstrip().upper().startswith("BEGIN")) / boots
    ranked = sorted(grew.items(), key=lambda item: -item[1])[:top]
    return total, begins, [StatementCount(round(calls / boots, 2), " ".join(query.split())[:160])
                           for query, calls in ranked]


class StatementCounter:
    """Snapshots of ``pg_stat_statements`` for one database of the server at
    ``url``; :meth:`snapshot` is None where the view cannot be read (the
    module not loaded, the extension not created)."""

    def __init__(self, url: str, database: str) -> None:
        self.url = url
        self.database = database

    def snapshot(self) -> dict[str, int] | None:
        engine = sa.create_engine(self.url, poolclass=sa.NullPool)
        try:
            with engine.connect() as conn:
                rows = conn.execute(_CALLS, {"database": self.database}).all()
        except sa.exc.DBAPIError:
            return None
        finally:
            engine.dispose()
        counts: dict[str, int] = {}
        for query, calls in rows:  # one text may have several entries (users, plans)
            counts[query] = counts.get(query, 0) + int(calls)
        return counts

    def figures(self, before: dict[str, int] | None, boots: int) -> dict[str, Any]:
        """``statements_per_boot`` and ``begins_per_boot`` since ``before``,
        and the top statements (``statements``); nothing without snapshots."""
        after = self.snapshot() if before is not None else None
        if before is None or after is None:
            return {}
        total, begins, top = per_boot(before, after, boots)
        return {"statements_per_boot": round(total, 2), "begins_per_boot": round(begins, 2),
                "statements": [[count.per_boot, count.query] for count in top]}
