"""Where a single boot's time goes: servers booted one at a time on an idle
cloud, each POST→ACTIVE cut into segments by the stamps the cloud stores.

For each boot, milliseconds from the POST's send to: the API's answer
(``resp``), the instance row's ``created_at`` (the create), ``scheduled_at``
(the conductor's host save), the build event's start (the compute's handler),
each step of the boot timeline (claim, network, block devices, spawn, the
vif-plugged wait: their start ``_s`` and finish ``_f``), ``launched_at`` (the
ACTIVE save), and when the client's poll saw ACTIVE (``seen``; GET every 2 ms,
as ``boot.py``'s single boots). Prints the p50 and min of each mark, in order,
over the boots after ``--warmup``. On PostgreSQL also the statements per boot
of the run's own database (pg_stat_statements, when the server has it), with
their mean execution time: the boots, their deletes and the polls.

The stamps come from each process's clock (one machine: comparable). A
``created_at`` after ``resp`` or a step before ``scheduled`` would say a clock
moved, not the code.

    python benchmarks/single_trace.py --mode pg          # all-in-one on PostgreSQL
    python benchmarks/single_trace.py --mode procs       # processes on RabbitMQ + PostgreSQL
    python benchmarks/single_trace.py --mode sqlite --boots 40
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Iterator

import httpx
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _cloud  # noqa: E402
from boot import Lean, cloud_env, ensure_image, single_boot  # noqa: E402

Boot = tuple[str, float, float, float]  # server id, POST sent, answered, ACTIVE seen
_EVENTS = sa.text(
    "SELECT e.start_time, e.finish_time, e.steps FROM instance_actions_events AS e "
    "JOIN instance_actions AS a ON a.id = e.action_id "
    "WHERE a.instance_uuid = :u AND a.action = 'create' AND e.steps IS NOT NULL "
    "ORDER BY e.id DESC LIMIT 1")
_STAMPS = sa.text("SELECT created_at, scheduled_at, launched_at FROM instances WHERE uuid = :u")


async def single_boots(url: str, count: int) -> list[Boot]:
    """``count`` boots one at a time, each deleted before the next."""
    headers = {"X-Auth-Token": _cloud.token(url), "OpenStack-API-Version": "compute 2.37"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        image = await ensure_image(client)
    api = await Lean(url, headers).open()
    try:
        return [await single_boot(api, image, "auto", f"trace-{i}") for i in range(count)]
    finally:
        await api.close()


def _epoch(stamp: dt.datetime | str | None) -> float:
    """A stored naive UTC stamp (SQLite gives text) as Unix seconds."""
    if stamp is None:
        return float("nan")
    if isinstance(stamp, str):
        stamp = dt.datetime.fromisoformat(stamp)
    return stamp.replace(tzinfo=dt.timezone.utc).timestamp()


def marks(conn: sa.Connection, boot: Boot) -> dict[str, float]:
    """One boot's marks, in ms from its POST's send."""
    server_id, sent, answered, seen = boot
    created, scheduled, launched = conn.execute(_STAMPS, {"u": server_id}).one()
    out = {"resp": answered, "created": _epoch(created), "scheduled": _epoch(scheduled),
           "launched": _epoch(launched), "seen": seen}
    event = conn.execute(_EVENTS, {"u": server_id}).first()
    if event is not None:
        out["build_event"] = _epoch(event[0])
        out["build_event_end"] = _epoch(event[1])
        # The stored steps: [event name, start µs, finish µs, …] each.
        for step in json.loads(event[2]):
            name = step[0].removeprefix("compute_")
            out[f"{name}_s"], out[f"{name}_f"] = step[1] / 1e6, step[2] / 1e6
    return {key: (value - sent) * 1000 for key, value in out.items()}


def report(rows: list[dict[str, float]]) -> None:
    keys = sorted({k for row in rows for k in row},
                  key=lambda k: statistics.median([r[k] for r in rows if k in r]))
    print(f"{'mark (ms from the POST)':28s} {'p50':>7s} {'min':>7s}")
    for key in keys:
        values = sorted(r[key] for r in rows if key in r)
        print(f"{key:28s} {statistics.median(values):7.1f} {values[0]:7.1f}")


def statements(url: str, boots: int) -> None:
    """pg_stat_statements of the run's database, per boot (deletes and polls too)."""
    # The server-wide view, read where setup-postgres.sh created the extension.
    engine = sa.create_engine(_cloud.BENCH_PG)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                "SELECT calls, mean_exec_time, query FROM pg_stat_statements WHERE dbid = "
                "(SELECT oid FROM pg_database WHERE datname = :d) "
                "ORDER BY calls * mean_exec_time DESC LIMIT 30"),
                {"d": sa.make_url(url).database}).all()
    except sa.exc.DBAPIError as exc:
        print(f"(no pg_stat_statements: {exc.orig})")
        return
    finally:
        engine.dispose()
    print(f"{'per boot':>8s} {'mean µs':>8s}  statement")
    for calls, mean, query in rows:
        print(f"{calls / boots:8.2f} {mean * 1000:8.0f}  {' '.join(query.split())[:100]}")


@contextlib.contextmanager
def cloud(mode: str, env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """(API URL, database URL) of a fresh cloud of three fake hosts."""
    if mode == "procs":
        with _cloud.fresh_database() as db, \
                _cloud.running_deployment(3, 2, env, database=db) as (url, _procs):
            yield url, db
    elif mode == "pg":
        with _cloud.fresh_database() as db, \
                _cloud.running_cloud(3, {**env, "CIRRUS_DATABASE_URL": db}) as (url, _proc):
            yield url, db
    else:
        with tempfile.TemporaryDirectory() as state, \
                _cloud.running_cloud(3, env, state_dir=state) as (url, _proc):
            yield url, f"sqlite:///{state}/cirrus.db"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("pg", "procs", "sqlite"), default="pg")
    parser.add_argument("--boots", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    with cloud(args.mode, cloud_env(100, 3)) as (url, db_url):
        boots = asyncio.run(single_boots(url, args.warmup + args.boots))
        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            rows = [marks(conn, boot) for boot in boots[args.warmup:]]
        engine.dispose()
        print(f"{args.mode}: {args.boots} single boots after {args.warmup} warm-ups")
        report(rows)
        if args.mode != "sqlite":
            statements(db_url, len(boots))


if __name__ == "__main__":
    main()
