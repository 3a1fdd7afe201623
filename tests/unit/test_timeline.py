"""The boot timeline's pieces (cirrus/compute/timeline.py): the timing keys,
a step timed with or without an error, the schedule's details."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from cirrus.compute import timeline
from cirrus.compute.instance_actions import ERROR, SUCCESS
from cirrus.observe import BootStep


@pytest.mark.parametrize("start, finish", [
    (0.0, 0.0), (1764130000.123456, 1764130000.125), (1764130000.0, 1764130012.5),
    (1.0000004, 1.0000006),
])
def test_the_formatted_details_read_as_the_timing(start: float, finish: float) -> None:
    assert json.loads(timeline.timing_json(start, finish)) == pytest.approx(
        timeline.timing(start, finish), abs=0.0011)


@pytest.mark.parametrize("seconds, expected", [
    (0.0, dt.datetime(1970, 1, 1)),
    (1764130000.25, dt.datetime(2025, 11, 26, 4, 6, 40, 250000)),
])
def test_epoch_seconds_as_the_columns_datetime(seconds: float, expected: dt.datetime) -> None:
    assert timeline.as_datetime(seconds) == expected


def test_a_step_is_recorded_with_its_outcome() -> None:
    t = timeline.BootTimeline()
    with t.step(BootStep.CLAIM):
        pass
    with pytest.raises(ValueError):
        with t.step(BootStep.SPAWN):
            raise ValueError("no guest")
    claim, spawn = timeline.step_events(t.steps_json(), "h1")
    assert (claim["event"], claim["result"], claim["traceback"]) == (
        timeline.CLAIM_EVENT, SUCCESS, None)
    assert (spawn["event"], spawn["result"]) == (timeline.SPAWN_EVENT, ERROR)
    assert spawn["traceback"] is not None and "ValueError: no guest" in spawn["traceback"]
    for event in (claim, spawn):
        details = json.loads(event["details"])
        assert event["host"] == "h1"
        assert event["start_time"] <= event["finish_time"]
        assert details["start_ms"] <= details["finish_ms"]
        assert t.start * 1000 <= details["start_ms"] + 0.001


def test_the_stored_steps_give_back_each_steps_times() -> None:
    t = timeline.BootTimeline()
    t.steps.append(timeline.Step(BootStep.NETWORK, 1764130000.123456, 1764130000.125))
    t.steps.append(timeline.Step(BootStep.SPAWN, 1764130000.125, 1764130012.5,
                                 RuntimeError('quote " and \\ backslash\nnewline')))
    network, spawn = timeline.step_events(t.steps_json(), None)
    assert network["start_time"] == timeline.as_datetime(1764130000.123456)
    assert network["finish_time"] == timeline.as_datetime(1764130000.125)
    assert json.loads(network["details"]) == pytest.approx(
        {"start_ms": 1764130000123.456, "finish_ms": 1764130000125.0, "duration_ms": 1.544})
    assert spawn["traceback"] is not None
    assert 'quote " and \\ backslash\nnewline' in spawn["traceback"]


def test_no_steps_are_stored_as_nothing() -> None:
    assert timeline.BootTimeline().steps_json() is None


@pytest.mark.parametrize("stored", [
    None, "", "not json", "{}", "[1]", '[["a", "x", 1, null]]', '[["a", 1, 2]]',
    '[["a", 1e400, 2, null]]', "[[null, 1, 2, null, 5]]",
])
def test_steps_that_do_not_read_as_steps_list_nothing(stored: str | None) -> None:
    assert timeline.step_events(stored, "h") == []


def test_the_schedule_keeps_the_decision_beside_its_timing() -> None:
    scheduled = timeline.ScheduleTiming()
    with scheduled:
        pass
    decision = {"filters": [{"name": "RamFilter", "removed": []}], "hosts": 2, "scanned": 2,
                "weighed": []}
    details = json.loads(scheduled.details(decision))
    assert {k: details[k] for k in decision} == decision
    assert details["duration_ms"] >= 0 and details["finish_ms"] >= details["start_ms"]
    assert set(json.loads(timeline.ScheduleTiming().details(None))) == {
        "start_ms", "finish_ms", "duration_ms"}
