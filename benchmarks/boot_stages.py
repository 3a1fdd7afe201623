"""Where boots queue under load: per-boot stage times of an all-in-one on PostgreSQL.

Runs ``cirrus up --computes K`` on a fresh PostgreSQL database, POSTs N servers
from C clients (as ``boot.py`` does) and, before anything is deleted, joins
what the cloud stored for each boot (``created_at``, the conductor's schedule
event, the compute's build event, the host) with the client's POST times.
Prints each stage's p50/p90/p99, how many boots overtook a boot in each stage
(entered it later, left it earlier: 0 for a FIFO stage), the stages by decile
of the run, and each host's queue of boots placed but not yet started.

    python benchmarks/boot_stages.py --n 1000 --c 50 --k 3
    CIRRUS_BUILD_BACKLOG_LIMIT=10 python benchmarks/boot_stages.py   # a setting tried
"""
from __future__ import annotations

import argparse
import asyncio
import bisect
import collections
import contextlib
import datetime as dt
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import boot as B  # noqa: E402
from _cloud import fresh_database, percentile, running_cloud, token  # noqa: E402

STAGES = ("POST start → row created", "row created → POST answered",
          "row created → scheduling starts", "scheduling + host recorded",
          "host recorded → build starts", "build (start → ACTIVE)", "POST start → ACTIVE")
_ROWS = sa.text("""
  SELECT i.uuid, i.created_at, s.start_time, s.finish_time, b.start_time, b.finish_time, i.host
  FROM instances i
  JOIN instance_actions a ON a.instance_uuid = i.uuid AND a.action = 'create'
  JOIN instance_actions_events s ON s.action_id = a.id
       AND s.event = 'conductor_schedule_and_build_instances'
  JOIN instance_actions_events b ON b.action_id = a.id
       AND b.event = 'compute__do_build_and_run_instance'
  WHERE b.finish_time IS NOT NULL""")


async def post_all(url: str, n: int, c: int) -> tuple[dict[str, float], dict[str, float]]:
    """POST n servers from c clients: (start, answered) wall times by server id."""
    headers = {"X-Auth-Token": token(url), "OpenStack-API-Version": "compute 2.37"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        image = await B.ensure_image(client)
    started: dict[str, float] = {}
    answered: dict[str, float] = {}
    todo = collections.deque(range(n))

    async def worker() -> None:
        api = await B.Lean(url, headers).open()
        try:
            while todo:
                i = todo.popleft()
                t = time.time()
                code, body = await api.call("POST", B.SERVERS,
                                            B._server_body(f"stage-{i}", image, "auto"))
                if code != 202:
                    raise RuntimeError(f"POST failed: {code} {body}")
                started[body["server"]["id"]] = t
                answered[body["server"]["id"]] = time.time()
        finally:
            await api.close()
    await asyncio.gather(*(worker() for _ in range(c)))
    return started, answered


def _epoch(value: dt.datetime) -> float:
    return value.replace(tzinfo=dt.timezone.utc).timestamp()


def wait_built(db_url: str, count: int, timeout: float) -> list[tuple[Any, ...]]:
    """The stored stage times once ``count`` builds finished (or at ``timeout``)."""
    engine = sa.create_engine(db_url)
    deadline = time.time() + timeout
    try:
        while True:
            with engine.connect() as conn:
                rows = [(r[0], *(_epoch(t) for t in r[1:6]), r[6]) for r in conn.execute(_ROWS)]
            if len(rows) >= count or time.time() > deadline:
                return rows
            time.sleep(0.5)
    finally:
        engine.dispose()


def overtakes(enter: list[float], leave: list[float]) -> float:
    """Mean number of boots that entered a stage after a boot and left it before."""
    order = sorted(range(len(enter)), key=enter.__getitem__)
    seen: list[float] = []
    total = 0
    for i in order:
        total += len(seen) - bisect.bisect_right(seen, leave[i])
        bisect.insort(seen, leave[i])
    return total / max(1, len(order))


def report(rows: list[tuple[Any, ...]], started: dict[str, float],
           answered: dict[str, float]) -> None:
    rows = sorted((r for r in rows if r[0] in started), key=lambda r: started[r[0]])
    post = [started[r[0]] for r in rows]
    ans = [answered[r[0]] for r in rows]
    created, s0, s1, b0, b1 = ([r[k] for r in rows] for k in range(1, 6))
    spans = {STAGES[0]: (post, created), STAGES[1]: (created, ans), STAGES[2]: (created, s0),
             STAGES[3]: (s0, s1), STAGES[4]: (s1, b0), STAGES[5]: (b0, b1),
             STAGES[6]: (post, b1)}
    seconds = max(b1) - min(post)
    print(f"{len(rows)} boots, {len(rows) / seconds:.1f} boots/s")
    for name, (a, b) in spans.items():
        ms = [(y - x) * 1000 for x, y in zip(a, b)]
        print(f"{name:34s} p50 {percentile(ms, 50):7.0f}  p90 {percentile(ms, 90):7.0f}  "
              f"p99 {percentile(ms, 99):7.0f} ms   overtaken by {overtakes(a, b):4.1f}")
    for q in range(10):
        part = range(len(rows) * q // 10, len(rows) * (q + 1) // 10)
        med = [statistics.median((spans[n][1][i] - spans[n][0][i]) * 1000 for i in part)
               for n in (STAGES[0], STAGES[3], STAGES[4], STAGES[5], STAGES[6])]
        print(f"decile {q}: POST wait {med[0]:5.0f}  scheduling {med[1]:5.0f}  "
              f"host slot {med[2]:5.0f}  build {med[3]:5.0f}  total {med[4]:5.0f} ms")
    hosts = sorted({r[6] for r in rows})
    for q in range(1, 10):
        t = s1[len(rows) * q // 10]
        waiting = collections.Counter(r[6] for r in rows if r[3] <= t < r[4])
        print(f"at decile {q}: boots waiting for a build slot " +
              " ".join(f"{h}={waiting.get(h, 0)}" for h in hosts))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--c", type=int, default=50)
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        db_url = stack.enter_context(fresh_database())
        url, _ = stack.enter_context(running_cloud(
            args.k, {**B.cloud_env(args.n, args.k), "CIRRUS_DATABASE_URL": db_url}))
        started, answered = asyncio.run(post_all(url, args.n, args.c))
        rows = wait_built(db_url, len(started), timeout=max(60, args.n / 5))
    report(rows, started, answered)
    return 0 if len(rows) == len(started) else 1


if __name__ == "__main__":
    sys.exit(main())
