"""The boot timeline: each seed step of a build, timed in memory.

A build records its steps here while it runs (claim, network allocation,
block devices, spawn, the vif-plugged wait). The transaction that ends the
build (ACTIVE, ERROR or a reschedule) stores them on the build event's row,
as one JSON text in its ``steps`` column (:meth:`BootTimeline.steps_json`),
and the API lists each as an event of its own after the build event
(:func:`step_events`): a boot's last unit, which runs under SQLite's one
writer, binds one more text instead of inserting five rows
(docs/performance.md). Each step event's ``details`` is a JSON object with
``start_ms``/``finish_ms`` (milliseconds since the Unix epoch) and
``duration_ms``, so ``openstack server event show`` (2.84) tells where a boot
spent its time. Every finished step is also reported to ``cirrus.observe``.
"""
from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import json
import time
from dataclasses import dataclass, field
from typing import Any, ContextManager, Iterator, Mapping, NamedTuple, TypedDict

import orjson

from cirrus import observe
from cirrus.compute.instance_actions import ERROR, SUCCESS, format_traceback
from cirrus.db.base import utcnow
from cirrus.observe import BootStep

# The event names of the steps: a contract with the dashboard, which renders them.
SCHEDULE_EVENT = "conductor_schedule_and_build_instances"
CLAIM_EVENT = "compute_claim_resources"
NETWORK_EVENT = "compute_allocate_network"
BLOCK_DEVICE_EVENT = "compute_prep_block_device"
SPAWN_EVENT = "compute_spawn"
VIF_PLUGGED_EVENT = "compute_wait_for_vif_plugged"
STEP_EVENTS = {BootStep.CLAIM: CLAIM_EVENT, BootStep.NETWORK: NETWORK_EVENT,
               BootStep.BLOCK_DEVICES: BLOCK_DEVICE_EVENT, BootStep.SPAWN: SPAWN_EVENT,
               BootStep.VIF_PLUGGED: VIF_PLUGGED_EVENT}

_EPOCH = dt.datetime(1970, 1, 1)
# A stored step's text up to its traceback, by step (see BootTimeline.steps_json).
_STEP_ROW = {step: f'["{event}",%d,%d,' for step, event in STEP_EVENTS.items()}


class Timing(TypedDict):
    """The timing keys of an event's ``details``."""

    start_ms: float
    finish_ms: float
    duration_ms: float


def timing(start: float, finish: float) -> Timing:
    """``start``/``finish`` (``time.time()`` seconds) as the details' keys, to
    the microsecond."""
    return {"start_ms": round(start * 1000.0, 3), "finish_ms": round(finish * 1000.0, 3),
            "duration_ms": round((finish - start) * 1000.0, 3)}


def as_datetime(seconds: float) -> dt.datetime:
    """``time.time()`` seconds as the naive UTC datetime the columns store."""
    return _EPOCH + dt.timedelta(seconds=seconds)


def timing_json(start: float, finish: float) -> str:
    """:func:`timing` as its JSON text, formatted directly: every step of
    every boot writes one, inside the write lock's unit (docs/performance.md)."""
    return (f'{{"start_ms": {start * 1000.0:.3f}, "finish_ms": {finish * 1000.0:.3f}, '
            f'"duration_ms": {(finish - start) * 1000.0:.3f}}}')


class Step(NamedTuple):
    """One finished step of a build (a tuple: five are made a boot)."""

    step: BootStep
    start: float  # time.time() seconds
    finish: float
    error: BaseException | None = None


class _Timed:
    """A step being timed (a class, not a generator: it runs five times a boot)."""

    __slots__ = ("timeline", "step", "start")

    def __init__(self, timeline: BootTimeline, step: BootStep) -> None:
        self.timeline, self.step, self.start = timeline, step, 0.0

    def __enter__(self) -> None:
        self.start = time.time()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 _tb: Any) -> None:
        self.timeline.add(Step(self.step, self.start, time.time(), error))


@dataclass
class BootTimeline:
    """The steps one build finished so far (in the order they finished).

    ``start``: when the build began on this host (the build event's start).
    """

    start: float = field(default_factory=time.time)
    steps: list[Step] = field(default_factory=list)

    def step(self, step: BootStep) -> ContextManager[None]:
        """Time the body as ``step``; an exception (a cancellation too)
        records the step failed and goes on."""
        return _Timed(self, step)

    def add(self, step: Step) -> None:
        self.steps.append(step)
        observe.boot_step(step.step, step.finish - step.start, step.error is not None)

    def build_details(self, finish: float) -> str:
        """The build event's details: its own timing."""
        return timing_json(self.start, finish)

    def steps_json(self) -> str | None:
        """The finished steps as the build event's ``steps`` column holds
        them: ``[[event, start, finish, traceback or null], …]``, times in
        microseconds since the Unix epoch; None when there is none. Formatted
        with ``%d`` (a float's shortest repr costs several times more): every
        boot writes one."""
        if not self.steps:
            return None
        return "[" + ",".join(
            _STEP_ROW[s.step] % (s.start * 1e6, s.finish * 1e6)
            + ("null]" if s.error is None else json.dumps(format_traceback(s.error)) + "]")
            for s in self.steps) + "]"


class StepEvent(TypedDict):
    """A step stored on its build event, as the API lists events."""

    event: str
    start_time: dt.datetime
    finish_time: dt.datetime
    result: str
    traceback: str | None
    host: str | None
    details: str


def step_events(steps: str | None, host: str | None) -> list[StepEvent]:
    """The steps a build event's ``steps`` column holds (see
    :meth:`BootTimeline.steps_json`) as events of their own, on the build
    event's ``host``; text that does not read as steps gives none (a reader
    of an action never fails on what a build left)."""
    if not steps:
        return []
    try:
        rows = [(event, int(start) / 1e6, int(finish) / 1e6, traceback)
                for event, start, finish, traceback in json.loads(steps)]
        return [{"event": str(event), "start_time": as_datetime(start),
                 "finish_time": as_datetime(finish),
                 "result": SUCCESS if traceback is None else ERROR,
                 "traceback": None if traceback is None else str(traceback), "host": host,
                 "details": timing_json(start, finish)} for event, start, finish, traceback in rows]
    except (TypeError, ValueError, OverflowError):
        return []


class ScheduleTiming:
    """The conductor's schedule step: ``with`` it around the scheduler's
    decision; its details are the decision's keys and the timing keys."""

    def __init__(self) -> None:
        self.started = time.time()  # until the decision is asked for: this request's arrival
        self.finished: float | None = None

    def __enter__(self) -> None:
        self.started = time.time()

    def __exit__(self, kind: type[BaseException] | None, *_: Any) -> None:
        self.finished = time.time()
        observe.boot_step(BootStep.SCHEDULE, self.finished - self.started, kind is not None)

    @property
    def start(self) -> dt.datetime:
        return as_datetime(self.started)

    def details(self, decision: Mapping[str, object] | None) -> str:
        """The event's details: ``decision`` (the scheduler's, if any) and the
        timing, as compact JSON (orjson: the decision's filter report and weights
        are the largest text a boot's conductor encodes, json.dumps several times
        slower)."""
        finished = self.finished if self.finished is not None else time.time()
        return orjson.dumps({**(decision or {}), **timing(self.started, finished)}).decode()


# The build whose steps the running task records. The virt driver's ``spawn``
# has Nova's signature, so the vif-plugged wait inside it (``VirtAPI``) finds
# the build's timeline here rather than in an argument.
current: contextvars.ContextVar[BootTimeline | None] = contextvars.ContextVar(
    "boot_timeline", default=None)


@contextlib.contextmanager
def current_step(step: BootStep) -> Iterator[None]:
    """Time the body as ``step`` of the running build, if there is one."""
    timeline = current.get()
    if timeline is None:
        yield
        return
    with timeline.step(step):
        yield


def report_total(created_at: dt.datetime | None, failed: bool) -> None:
    """POST accepted (``created_at``) → now, the build's end, to ``observe``."""
    if created_at is not None:
        seconds = (utcnow() - created_at).total_seconds()
        observe.boot_step(BootStep.TOTAL, seconds, failed)
