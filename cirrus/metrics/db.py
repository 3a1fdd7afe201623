"""Units of work: their time as their callers see it, and the group commits."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from cirrus.metrics import buckets
from cirrus.metrics.loop import Histogram


class DbMetrics:
    """``cirrus_db_unit_seconds{kind}``, ``cirrus_db_group_size`` and
    ``cirrus_db_commit_seconds``; the :class:`~cirrus.db.engine.UnitObserver`
    of the process's :class:`~cirrus.db.engine.Database`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.unit_seconds = Histogram(
            "cirrus_db_unit_seconds", "Units of work: seconds from submit to result (queue, "
            "transaction, commit), by kind (write: Database.run, read: Database.read).",
            ("kind",), buckets=buckets.SHORT, registry=registry)
        self._kinds = {True: self.unit_seconds.labels("write"),
                       False: self.unit_seconds.labels("read")}
        self.group_size = Histogram(
            "cirrus_db_group_size", "Units of work per group-committed transaction (SQLite).",
            buckets=buckets.GROUP_SIZE, registry=registry)
        self.commit_seconds = Histogram(
            "cirrus_db_commit_seconds", "Group-committed transactions (SQLite): seconds of "
            "their units and the COMMIT, on the event loop.", buckets=buckets.SHORT,
            registry=registry)
        self._size, self._commit = self.group_size.labels(), self.commit_seconds.labels()

    def unit(self, write: bool, seconds: float) -> None:
        self._kinds[write].observe(seconds)

    def batch(self, size: int, seconds: float) -> None:
        self._size.observe(size)
        self._commit.observe(seconds)
