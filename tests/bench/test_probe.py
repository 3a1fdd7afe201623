"""benchmarks/_probe.py: the machine's speed sampled beside a run."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _probe  # noqa: E402


def test_the_trimmed_mean_drops_the_interrupted_chunks() -> None:
    # One chunk the kernel interrupted (40) and one that ran cold (1) of ten.
    samples = [1.0] + [2.0] * 8 + [40.0]
    assert _probe.trimmed_mean(samples) == 2.0
    assert _probe.trimmed_mean([3.0]) == 3.0  # too few to cut: all kept
    with pytest.raises(ValueError):
        _probe.trimmed_mean([])


def test_a_cost_in_probes_divides_the_machine_speed_out() -> None:
    # The same work measured on a machine half as fast: twice the CPU ms,
    # twice the probe's ms, the same count of probes.
    assert _probe.in_probes(10.0, 1.25) == _probe.in_probes(20.0, 2.5) == 8.0
    with pytest.raises(ValueError):
        _probe.in_probes(10.0, 0.0)


def test_a_probe_process_reports_its_chunk_time_and_ends() -> None:
    probe = _probe.SpeedProbe()
    probe.start()
    proc = probe._proc
    assert proc is not None
    time.sleep(_probe.INTERVAL * 4)
    took = probe.stop()
    assert took is not None and took > 0
    assert proc.poll() is not None  # gone, not left behind
    assert probe.stop() is None  # stopping twice is harmless


def test_a_probe_stopped_before_it_started_says_nothing() -> None:
    assert _probe.SpeedProbe().stop() is None
