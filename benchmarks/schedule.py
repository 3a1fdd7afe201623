"""Scheduler benchmark: ``select_destinations`` alone over many hosts.

Prints decisions/s and p50/p99 latency per decision (filters, weighers and the
atomic claim included, one request after the other) for each host count, and
the first decision's time (it loads every host); writes
benchmarks/results/schedule.json. Targets (issue 8): p99 < 5 ms at 10,000
hosts, ≥ 700 decisions/s at 5,000.

The scheduler runs with the default settings (host cache looked at every
second), except that services never go down: nothing heartbeats here.
``--full-scan`` turns the host index off (every decision filters and weighs
every host, as before it existed); ``--churn`` releases an earlier claim
after each decision, outside the scheduler and untimed, as deletes on the
computes would, so that the scheduler has changes to pick up.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import sys
import tempfile
import time
import uuid
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _cloud import percentile  # noqa: E402

from cirrus.compute.models import compute_nodes  # noqa: E402
from cirrus.config import Settings  # noqa: E402
from cirrus.db import migrate  # noqa: E402
from cirrus.db.base import utcnow  # noqa: E402
from cirrus.db.engine import Database  # noqa: E402
from cirrus import claims  # noqa: E402
from cirrus.scheduler.host_manager import HostManager  # noqa: E402
from cirrus.scheduler.manager import FilterScheduler  # noqa: E402
from cirrus.service_models import services  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CHURN_LAG = 50  # with --churn, each decision releases the claim made this many decisions earlier

SPEC = {"flavor": {"flavorid": "1", "name": "m1.tiny", "vcpus": 1, "memory_mb": 512,
                   "root_gb": 1, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}},
        "image": {"id": None, "properties": {}}, "availability_zone": "nova",
        "scheduler_hints": {}, "retry": {"num_attempts": 1, "hosts": []}}


def populate(conn, hosts: int) -> None:
    """Hosts of 64 vCPUs, 256 GiB and 4 TB, partly used in uneven amounts,
    registered an hour ago (rows created moments before would count as
    changes in the scheduler's first looks, as they would in a cloud whose
    hosts all came up at once)."""
    now = utcnow()
    created = now - dt.timedelta(hours=1)
    conn.execute(services.insert(), [
        {"uuid": str(uuid.uuid4()), "host": f"h{i}", "binary": "cirrus-compute", "topic": "compute",
         "availability_zone": "nova", "disabled": False, "forced_down": False,
         "last_seen_up": now, "report_count": 0, "created_at": created} for i in range(hosts)])
    conn.execute(compute_nodes.insert(), [
        {"uuid": str(uuid.uuid4()), "host": f"h{i}", "hypervisor_hostname": f"h{i}",
         "hypervisor_type": "fake", "hypervisor_version": 1, "cpu_arch": "x86_64",
         "vcpus": 64, "memory_mb": 262144, "local_gb": 4000, "vcpus_used": i % 7,
         "memory_mb_used": (i * 512) % 131072, "local_gb_used": i % 300, "reserved_memory_mb": 0,
         "cpu_allocation_ratio": 16.0, "ram_allocation_ratio": 1.5, "disk_allocation_ratio": 1.0,
         "running_vms": 0, "created_at": created} for i in range(hosts)])


def _release(conn, consumer: str) -> None:
    claims.release(conn, consumer)


async def run(hosts: int, decisions: int, cache_seconds: float | None, full_scan: bool,
              churn: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp), service_down_time=86400.0)
        if cache_seconds is not None:
            settings.scheduler_cache_seconds = cache_seconds
        migrate.upgrade(settings.database_url)
        db = Database(settings.database_url)
        await db.run(populate, hosts)
        scheduler = FilterScheduler(settings, db, HostManager(settings, db),
                                    use_index=not full_scan)
        t = time.perf_counter()
        await scheduler.select_destinations({**SPEC, "instance_uuids": [str(uuid.uuid4())]})
        first = time.perf_counter() - t
        latencies, placed = [], deque()
        wall = 0.0
        for _ in range(decisions):
            consumer = str(uuid.uuid4())
            t = time.perf_counter()
            result = await scheduler.select_destinations({**SPEC, "instance_uuids": [consumer]})
            took = time.perf_counter() - t
            wall += took
            latencies.append(took)
            assert len(result["destinations"]) == 1, result
            placed.append(consumer)
            if churn and len(placed) > CHURN_LAG:
                await db.run(_release, placed.popleft())
        db.close()
    return {"hosts": hosts, "decisions": decisions, "index": not full_scan, "churn": churn,
            "scheduler_cache_seconds": settings.scheduler_cache_seconds,
            "decisions_per_s": round(decisions / wall, 1),
            "p50_ms": round(percentile(latencies, 50) * 1000, 3),
            "p99_ms": round(percentile(latencies, 99) * 1000, 3),
            "max_ms": round(max(latencies) * 1000, 3),
            "first_decision_ms": round(first * 1000, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 5000, 10000, 50000])
    parser.add_argument("--decisions", type=int, default=1000)
    parser.add_argument("--cache-seconds", type=float, default=None,
                        help="scheduler_cache_seconds (default: the setting's default)")
    parser.add_argument("--full-scan", action="store_true",
                        help="no host index: filter and weigh every host per decision")
    parser.add_argument("--churn", action="store_true",
                        help=f"after each decision release the claim made {CHURN_LAG} earlier")
    parser.add_argument("--short", action="store_true",
                        help="CI smoke: 200 hosts, 50 decisions, with churn")
    args = parser.parse_args()
    if args.short:
        args.hosts, args.decisions, args.churn = [200], 50, True
    results = []
    for count in args.hosts:
        result = asyncio.run(run(count, args.decisions, args.cache_seconds, args.full_scan,
                                 args.churn))
        results.append(result)
        print(f"{count:>6} hosts: {result['decisions_per_s']:8.1f} decisions/s, "
              f"p50 {result['p50_ms']:.3f} ms, p99 {result['p99_ms']:.3f} ms, "
              f"max {result['max_ms']:.1f} ms (first decision {result['first_decision_ms']:.0f} ms)")
        if not all(math.isfinite(result[k]) and result[k] > 0
                   for k in ("decisions_per_s", "p50_ms", "p99_ms")):
            print("figures are not finite and positive", file=sys.stderr)
            return 1
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "schedule.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
