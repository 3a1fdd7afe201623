"""The benchmarks' short modes run in CI: each must finish and print sane figures.

Only that the numbers exist, are finite and positive is checked — timings on
these shared machines are not test material (they live in docs/performance.md).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
pytestmark = pytest.mark.slow


def _run(script: str, result: str) -> Any:
    out = BENCH / "results" / result
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, str(BENCH / script), "--short"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads(out.read_text())


def _positive(*values: Any) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in values)


def test_boot_benchmark_short() -> None:
    r = _run("boot.py", "boot-short.json")
    assert r["errors"] == 0 and r["active"] == r["n"]
    assert _positive(r["boots_per_s"], r["post_p50_ms"], r["post_to_active_p99_ms"],
                     r["servers_detail_ms"], r["deletes_per_s"], r["peak_rss_mb"],
                     r["single_boot_p50_ms"], r["single_boot_min_ms"],
                     r["single_boot_first_ms"])
    assert r["single_boot_min_ms"] <= r["single_boot_p50_ms"]
    # the machine's speed, sampled beside the boot phase (benchmarks/_probe.py)
    assert _positive(r["probe_ms"], r["boot_cpu_in_probes"])


def test_schedule_benchmark_short() -> None:
    rows = _run("schedule.py", "schedule.json")
    assert rows
    for row in rows:
        assert _positive(row["hosts"], row["decisions_per_s"], row["p50_ms"], row["p99_ms"])


def test_startup_benchmark_short() -> None:
    best = _run("startup.py", "startup.json")["best"]
    assert _positive(best["fresh_s"], best["existing_s"], best["idle_pss_mb"], best["idle_rss_mb"])


def test_api_benchmark_short() -> None:
    r = _run("api.py", "api-short.json")
    for key in ("detail_all", "show_load", "show_rate", "detail_limit_load"):
        assert r[key]["errors"] == 0, key
        assert _positive(r[key]["requests_per_s"], r[key]["p50_ms"], r[key]["p99_ms"]), key
    assert _positive(r["peak_rss_mb"])


def test_http_path_benchmark_short() -> None:
    r = _run("http_path.py", "http_path-short.json")
    assert r["requests"] > 0
    for route in ("create", "poll", "show", "detail", "delete"):
        # CPU comes from /proc in 10-ms ticks, less the idle rate: a short run
        # of a cheap route can measure 0 (it once did in CI).
        value = r[route]["cpu_us_median"]
        assert isinstance(value, (int, float)) and math.isfinite(value) and value >= 0, route
