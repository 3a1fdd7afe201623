"""The scheduler's decisions: their time, and how many hosts each filter removed."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from cirrus.metrics import buckets
from cirrus.metrics.loop import Counter, CounterChild, Histogram
from cirrus.scheduler.selection import Decision


class SchedulerMetrics:
    """``cirrus_scheduler_decision_seconds{outcome}`` and
    ``cirrus_scheduler_filter_removed_hosts_total{filter}``; the scheduler's
    :class:`~cirrus.scheduler.manager.DecisionObserver`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.decision_seconds = Histogram(
            "cirrus_scheduler_decision_seconds", "select_destinations: seconds from the "
            "request to the claimed hosts (or NoValidHost), by outcome.", ("outcome",),
            buckets=buckets.SHORT, registry=registry)
        self._outcomes = {True: self.decision_seconds.labels("selected"),
                          False: self.decision_seconds.labels("no_valid_host")}
        self.removed = Counter(
            "cirrus_scheduler_filter_removed_hosts", "Hosts each scheduler filter removed "
            "from the hosts it was given (as the decision reports them).", ("filter",),
            registry=registry)
        self._filters: dict[str, CounterChild] = {}

    def decided(self, seconds: float, decision: Decision | None, selected: bool) -> None:
        """One ``select_destinations`` answered (``selected``) or refused."""
        self._outcomes[selected].observe(seconds)
        for step in decision["filters"] if decision else ():
            removed = step["hosts_in"] - step["hosts_out"]
            if removed <= 0:
                continue
            child = self._filters.get(step["name"])
            if child is None:  # filter names come from the FILTERS table: bounded
                child = self._filters[step["name"]] = self.removed.labels(step["name"])
            child.inc(removed)
