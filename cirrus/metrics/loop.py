"""Counters and histograms for the event loop's hot paths.

prometheus_client's own take a lock per value and scan the buckets in Python:
3.5 µs a histogram observation and 1–3 µs a counter increment measured here,
several per boot (docs/performance.md, "Metrics (issue 23)"). These keep plain
numbers instead — a ``bisect`` (in C) and two additions — and hand them to
prometheus_client as a custom collector when it is scraped.

They are written only from the thread of the event loop that observes them
(every observation in cirrus runs there), so no increment is lost; the
exporter's thread reads them, and a scrape that lands between a bucket's
increment and the sum's sees the two one observation apart, which the next
scrape makes good.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (CounterMetricFamily, HistogramMetricFamily,
                                            Metric)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class HistogramChild:
    """One label set's buckets (the last one: +Inf) and sum."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value


class CounterChild:
    """One label set's count."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class _Family(Collector):
    def __init__(self, name: str, documentation: str, labelnames: Sequence[str],
                 registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        registry.register(self)

    def _check(self, values: tuple[str, ...]) -> None:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, not {values}")


class Histogram(_Family):
    """A histogram family; bind a child with :meth:`labels` once, observe it often."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (), *,
                 buckets: Sequence[float], registry: CollectorRegistry) -> None:
        self.bounds = tuple(float(b) for b in buckets)
        self.children: dict[tuple[str, ...], HistogramChild] = {}
        super().__init__(name, documentation, labelnames, registry)

    def labels(self, *values: str) -> HistogramChild:
        self._check(values)
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = HistogramChild(self.bounds)
        return child

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        les = [floatToGoString(b) for b in self.bounds] + ["+Inf"]
        for values, child in list(self.children.items()):
            total, buckets = 0, []
            for le, count in zip(les, list(child.counts)):
                total += count
                buckets.append((le, float(total)))
            family.add_metric(list(values), buckets, child.sum)
        yield family


class Counter(_Family):
    """A counter family (exported as ``NAME_total``)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (), *,
                 registry: CollectorRegistry) -> None:
        self.children: dict[tuple[str, ...], CounterChild] = {}
        super().__init__(name, documentation, labelnames, registry)

    def labels(self, *values: str) -> CounterChild:
        self._check(values)
        child = self.children.get(values)
        if child is None:
            child = self.children[values] = CounterChild()
        return child

    def inc(self, amount: float = 1.0) -> None:
        """The unlabelled family's count."""
        self.labels().inc(amount)

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for values, child in list(self.children.items()):
            family.add_metric(list(values), child.value)
        yield family
