"""Scheduler benchmark: ``select_destinations`` alone over many hosts.

Prints decisions/s and p99 latency per decision (filters, weighers and the
atomic claim included) for each host count; writes benchmarks/results/schedule.json.
Targets (issue 8): p99 < 5 ms at 10,000 hosts, ≥ 700 decisions/s at 5,000.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _cloud import percentile  # noqa: E402

from cirrus.compute.models import compute_nodes  # noqa: E402
from cirrus.config import Settings  # noqa: E402
from cirrus.db import migrate  # noqa: E402
from cirrus.db.base import utcnow  # noqa: E402
from cirrus.db.engine import Database  # noqa: E402
from cirrus.scheduler.host_manager import HostManager  # noqa: E402
from cirrus.scheduler.manager import FilterScheduler  # noqa: E402
from cirrus.service_models import services  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def populate(conn, hosts: int) -> None:
    now = utcnow()
    conn.execute(services.insert(), [
        {"uuid": str(uuid.uuid4()), "host": f"h{i}", "binary": "cirrus-compute", "topic": "compute",
         "availability_zone": "nova", "disabled": False, "forced_down": False,
         "last_seen_up": now, "report_count": 0, "created_at": now} for i in range(hosts)])
    conn.execute(compute_nodes.insert(), [
        {"uuid": str(uuid.uuid4()), "host": f"h{i}", "hypervisor_hostname": f"h{i}",
         "hypervisor_type": "fake", "hypervisor_version": 1, "cpu_arch": "x86_64",
         "vcpus": 64, "memory_mb": 262144, "local_gb": 4000, "vcpus_used": i % 7,
         "memory_mb_used": (i * 512) % 131072, "local_gb_used": i % 300, "reserved_memory_mb": 0,
         "cpu_allocation_ratio": 16.0, "ram_allocation_ratio": 1.5, "disk_allocation_ratio": 1.0,
         "running_vms": 0, "created_at": now} for i in range(hosts)])


async def run(hosts: int, decisions: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(state_dir=Path(tmp), scheduler_cache_seconds=3600.0)
        migrate.upgrade(settings.database_url)
        db = Database(settings.database_url)
        await db.run(populate, hosts)
        scheduler = FilterScheduler(settings, db, HostManager(settings, db))
        spec = {"flavor": {"flavorid": "1", "name": "m1.tiny", "vcpus": 1, "memory_mb": 512,
                           "root_gb": 1, "ephemeral_gb": 0, "swap": 0, "extra_specs": {}},
                "image": {"id": None, "properties": {}}, "availability_zone": "nova",
                "scheduler_hints": {}, "retry": {"num_attempts": 1, "hosts": []}}
        await scheduler.select_destinations({**spec, "instance_uuids": [str(uuid.uuid4())]})
        latencies = []
        start = time.perf_counter()
        for _ in range(decisions):
            t = time.perf_counter()
            await scheduler.select_destinations({**spec, "instance_uuids": [str(uuid.uuid4())]})
            latencies.append(time.perf_counter() - t)
        wall = time.perf_counter() - start
        db.close()
    return {"hosts": hosts, "decisions": decisions,
            "decisions_per_s": round(decisions / wall, 1),
            "p50_ms": round(percentile(latencies, 50) * 1000, 2),
            "p99_ms": round(percentile(latencies, 99) * 1000, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--short", action="store_true", help="CI smoke: 100 hosts, 20 decisions")
    args = parser.parse_args()
    if args.short:
        args.hosts, args.decisions = [100], 20
    results = []
    for count in args.hosts:
        result = asyncio.run(run(count, args.decisions))
        results.append(result)
        print(f"{count:>6} hosts: {result['decisions_per_s']:8.1f} decisions/s, "
              f"p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "schedule.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
