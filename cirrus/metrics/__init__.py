"""Prometheus metrics of one cirrus process (docs/operations.md lists them).

Each :class:`~cirrus.bootstrap.Cloud` makes one :class:`Metrics`: its own
registry (not prometheus_client's global one, so clouds side by side in a
test process, or several of its services, never count into each other's
families), the families grouped by the part of cirrus that observes them, and
the exporter that serves them on ``metrics_listen``, off the public API.

Observations on hot paths go to label children bound in advance: no label
dict is built and no lock taken beyond the one prometheus_client holds for
each value.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from cirrus.metrics.api import ApiMetrics
from cirrus.metrics.boot import BootMetrics
from cirrus.metrics.bus import BusMetrics, MeteredTransport
from cirrus.metrics.db import DbMetrics
from cirrus.metrics.exporter import Exporter, worker_listen
from cirrus.metrics.scheduler import SchedulerMetrics


class Metrics:
    """Every metric family of one process, on a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.api = ApiMetrics(self.registry)
        self.boot = BootMetrics(self.registry)
        self.scheduler = SchedulerMetrics(self.registry)
        self.db = DbMetrics(self.registry)
        self.bus = BusMetrics(self.registry)


__all__ = ["Metrics", "ApiMetrics", "BootMetrics", "BusMetrics", "DbMetrics", "Exporter",
           "MeteredTransport", "SchedulerMetrics", "worker_listen"]
