"""Boot steps (the :mod:`cirrus.observe` sink) and the builds in flight and waiting."""
from __future__ import annotations

from typing import Protocol, Sized

from prometheus_client import CollectorRegistry, Gauge

from cirrus.metrics import buckets
from cirrus.metrics.loop import Histogram, HistogramChild
from cirrus.observe import BootStep


class Waiting(Protocol):
    """What the API's build admission shows: the creates held for their turn."""

    @property
    def waiting(self) -> int: ...


class BootMetrics:
    """``cirrus_boot_step_seconds{step, outcome}`` (fed by :func:`cirrus.observe.boot_step`
    through :meth:`boot_step`), ``cirrus_builds_in_flight{host}``,
    ``cirrus_builds_waiting{host}`` and ``cirrus_build_admission_waiting``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.step_seconds = Histogram(
            "cirrus_boot_step_seconds", "Boot steps: seconds each took, by step and outcome "
            "(total: POST accepted to ACTIVE or ERROR).", ("step", "outcome"),
            buckets=buckets.BOOT_STEP, registry=registry)
        # Keyed by ``_value_`` (a plain attribute, an interned str): an enum
        # member's ``.value`` is a descriptor and its hash a Python call.
        # Every step's ``ok`` series is exported from the start; a ``failed``
        # one when a step first fails (each series costs every scrape 20 lines).
        self._steps: dict[tuple[str, bool], HistogramChild] = {
            (step.value, False): self.step_seconds.labels(step.value, "ok") for step in BootStep}
        self.in_flight = Gauge(
            "cirrus_builds_in_flight", "Builds a compute host is running now (holding one "
            "of its max_concurrent_builds slots).", ("host",), registry=registry)
        self.waiting = Gauge(
            "cirrus_builds_waiting", "Builds a compute host has received that wait for a "
            "free max_concurrent_builds slot.", ("host",), registry=registry)
        self.admission_waiting = Gauge(
            "cirrus_build_admission_waiting", "Server creates the API holds back while the "
            "backlog of instances waiting to be scheduled is deep.", registry=registry)

    def boot_step(self, step: BootStep, seconds: float, failed: bool) -> None:
        """The :class:`cirrus.observe.StepSink` method: one finished step."""
        key = (step._value_, failed)
        child = self._steps.get(key)
        if child is None:  # a first failure, or a step newer than this module
            child = self._steps[key] = self.step_seconds.labels(
                key[0], "failed" if failed else "ok")
        child.observe(seconds)

    def watch_host(self, host: str, builds: Sized, slots: int) -> None:
        """Report ``host``'s builds, read when scraped: ``builds`` holds every build the
        host has started (running or waiting for one of its ``slots``)."""
        self.in_flight.labels(host).set_function(lambda: min(len(builds), slots))
        self.waiting.labels(host).set_function(lambda: max(0, len(builds) - slots))

    def watch_admission(self, admission: Waiting) -> None:
        """Report the API's held creates, read when scraped."""
        self.admission_waiting.set_function(lambda: admission.waiting)
