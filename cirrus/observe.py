"""Where the boot timeline meets the metrics.

The compute and the conductor time each seed step of a boot (schedule, claim,
network allocation, block devices, spawn, the vif-plugged wait, and the whole
POST→ACTIVE) for the instance-action events; a metrics exporter, when one runs
in the process, wants the same durations. Neither should import the other, so
the steps are reported here and whoever listens registers a sink.
"""
from __future__ import annotations

from enum import Enum
from typing import Protocol


class BootStep(str, Enum):
    """A step of the boot pipeline, named as the seeds name it."""

    SCHEDULE = "schedule"
    CLAIM = "claim"
    NETWORK = "network_allocation"
    BLOCK_DEVICES = "block_devices"
    SPAWN = "spawn"
    VIF_PLUGGED = "vif_plugged_wait"
    TOTAL = "total"  # POST accepted → ACTIVE (or ERROR)


class StepSink(Protocol):
    """Receives each finished boot step (a metrics exporter, a test's recorder)."""

    def boot_step(self, step: BootStep, seconds: float, failed: bool) -> None: ...


_sinks: list[StepSink] = []


def add_sink(sink: StepSink) -> None:
    """Report every boot step of this process to ``sink`` from now on."""
    if sink not in _sinks:
        _sinks.append(sink)


def remove_sink(sink: StepSink) -> None:
    if sink in _sinks:
        _sinks.remove(sink)


def boot_step(step: BootStep, seconds: float, failed: bool = False) -> None:
    """Report a finished step; costs a loop over no sinks when nobody listens."""
    for sink in _sinks:
        sink.boot_step(step, seconds, failed)
