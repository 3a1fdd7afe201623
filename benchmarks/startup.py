"""Startup benchmark: ``cirrus up`` to the first successful token request, and idle memory.

Targets (issue 2): under 1.5 s and under 150 MB (issue 8: idle under 120 MB). Runs a fresh
state dir (migrations + bootstrap) and an existing one; writes benchmarks/results/startup.json.
Memory is summed over the cloud's processes (the engine and its API workers): PSS, which
counts a page the forked processes share once, and RSS, which counts it in each.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import free_port, pss_mb, rss_mb, with_children  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
BODY = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
    "name": "demo", "domain": {"id": "default"}, "password": "demo"}}},
    "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}}


def one_start(state_dir: str, computes: int, workers: int | None) -> tuple[float, float, float]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/identity/v3/auth/tokens"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir",
                             state_dir, "--bind", f"127.0.0.1:{port}", "--computes", str(computes),
                             *(("--api-workers", str(workers)) if workers is not None else ())],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ)
    try:
        while True:
            try:
                if httpx.post(url, json=BODY, timeout=5).status_code == 201:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.perf_counter() - start > 60:
                raise RuntimeError("cirrus up did not come up")
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        time.sleep(2)  # idle
        pids = with_children(proc.pid)
        return elapsed, sum(pss_mb(p) for p in pids), sum(rss_mb(p) for p in pids)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--computes", type=int, default=1)
    parser.add_argument("--api-workers", type=int, help="cirrus up --api-workers "
                        "(default: cirrus up's own default)")
    parser.add_argument("--short", action="store_true", help="one run each (CI smoke)")
    args = parser.parse_args()
    runs = 1 if args.short else args.runs
    result: dict[str, list[float]] = {"fresh_s": [], "existing_s": [], "idle_pss_mb": [],
                                      "idle_rss_mb": []}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as state:
            fresh, _pss, _rss = one_start(state, args.computes, args.api_workers)
            existing, pss, rss = one_start(state, args.computes, args.api_workers)
        result["fresh_s"].append(round(fresh, 3))
        result["existing_s"].append(round(existing, 3))
        result["idle_pss_mb"].append(round(pss, 1))
        result["idle_rss_mb"].append(round(rss, 1))
    summary = {k: min(v) for k, v in result.items()}
    print(f"start → first token, fresh state dir:    {summary['fresh_s']:.3f} s (target < 1.5 s)")
    print(f"start → first token, existing state dir: {summary['existing_s']:.3f} s (target < 1.5 s)")
    print(f"idle memory (PSS, all processes):         {summary['idle_pss_mb']:.1f} MB "
          "(target < 120 MB)")
    print(f"idle RSS (summed, shared pages counted in each process): "
          f"{summary['idle_rss_mb']:.1f} MB")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "startup.json").write_text(json.dumps({"runs": result, "best": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
