"""The compute's network path alone: ``allocate_for_instance`` then
``deallocate_for_instance`` for N instances of one project on its ``auto``
network, C at a time, on PostgreSQL or SQLite. Prints statements per
instance for each phase (pg_stat_statements of a fresh database, or
sqlite3's trace), the process's CPU per instance and, on PostgreSQL, the
backends' CPU per instance.

    PYTHONPATH=$TREE python benchmarks/network_alloc.py --db postgresql --n 600 --c 24
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
import time
import uuid
from collections import Counter
from typing import Any, Callable

import sqlalchemy as sa

PG_ADMIN = "postgresql+psycopg://cirrus:cirrus@127.0.0.1:5432/cirrus"
TICKS = os.sysconf("SC_CLK_TCK")


def _backend_cpu(engine: sa.Engine, dbname: str) -> float:
    """CPU seconds of the backends connected to ``dbname`` (their /proc)."""
    with engine.connect() as conn:
        pids = conn.execute(sa.text("SELECT pid FROM pg_stat_activity WHERE datname = :d"),
                            {"d": dbname}).scalars().all()
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / TICKS


def _pg_statements(engine: sa.Engine, dbname: str) -> tuple[Counter[str], Counter[str]]:
    """Calls and total execution ms per statement (by its first characters)."""
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM "
            "pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = :d)"),
            {"d": dbname}).all()
    calls: Counter[str] = Counter()
    ms: Counter[str] = Counter()
    for count, total, query in rows:  # statements alike in their first characters: summed
        calls[query] += int(count)
        ms[query] += float(total)
    return calls, ms


def _once(traced: list[str]) -> list[str]:
    """sqlite3 traces a statement again as each trigger program of it starts."""
    return [s for i, s in enumerate(traced) if i == 0 or s != traced[i - 1]]


def _shape(statement: str) -> str:
    """A traced SQLite statement without its values (as pg_stat_statements shows them)."""
    return re.sub(r"'[^']*'|\b\d+(\.\d+)?\b", "?", statement)[:110]


def _setup(url: str, n: int) -> list[dict[str, Any]]:
    from cirrus.compute.models import instance_info_caches, instances
    from cirrus.db.base import utcnow
    from cirrus.network.auto_allocate import get_or_create_auto_network
    from cirrus.network.security_groups import resolve
    from cirrus.network.segments import SegmentConfig
    from types import SimpleNamespace

    engine = sa.create_engine(url)
    out = []
    with engine.begin() as conn:
        get_or_create_auto_network(conn, SimpleNamespace(auto_allocate_cidr="10.0.0.0/16"), "p",
                                   SegmentConfig())
        resolve(conn, "p", ["default"])
        for i in range(n):
            uuid_ = str(uuid.uuid4())
            conn.execute(instances.insert().values(
                uuid=uuid_, project_id="p", user_id="u", display_name=f"vm{i}",
                hostname=f"vm{i}", flavor={}, vcpus=1, memory_mb=64, root_gb=0,
                vm_state="building", task_state="networking", reservation_id="r",
                created_at=utcnow()))
            conn.execute(instance_info_caches.insert().values(
                instance_uuid=uuid_, network_info=[], created_at=utcnow()))
            out.append({"uuid": uuid_, "project_id": "p", "hostname": f"vm{i}",
                        "availability_zone": "nova"})
    engine.dispose()
    return out


async def _phase(instances: list[dict[str, Any]], c: int,
                 one: Callable[[dict[str, Any]], Any]) -> float:
    sem = asyncio.Semaphore(c)

    async def run(inst: dict[str, Any]) -> None:
        async with sem:
            await one(inst)
    start = time.monotonic()
    await asyncio.gather(*(run(i) for i in instances))
    return time.monotonic() - start


async def _run(url: str, instances: list[dict[str, Any]], c: int,
               measure: Callable[[str], Any]) -> None:
    from cirrus.config import Settings
    from cirrus.context import RequestContext
    from cirrus.db.engine import Database
    from cirrus.network.api import make_network_api

    settings = Settings(quota_ports=1000000, network_backend="noop")
    db = Database(url)
    apis = [make_network_api(settings, db, f"h{i}", None) for i in range(3)]  # three computes
    ctx = RequestContext(project_id="p", user_id="u", roles=["member"])
    nets = [{"network_id": "auto", "port_id": None, "fixed_ip": None}]

    def api_of(inst: dict[str, Any]) -> Any:
        return apis[int(inst["uuid"][:2], 16) % 3]

    async def allocate(inst: dict[str, Any]) -> None:
        info = await api_of(inst).allocate_for_instance(
            ctx, inst, requested_networks=[dict(r) for r in nets], security_groups=["default"],
            bind_host_id=f"h{apis.index(api_of(inst))}")
        assert len(info) == 1

    async def deallocate(inst: dict[str, Any]) -> None:
        await api_of(inst).deallocate_for_instance(ctx, inst, [dict(r) for r in nets])

    for name, fn in (("allocate", allocate), ("deallocate", deallocate)):
        measure("start")
        t0 = time.process_time()
        wall = await _phase(instances, c, fn)
        cpu = time.process_time() - t0
        measure(name)
        n = len(instances)
        print(f"{name}: {n / wall:.0f}/s, process CPU {1000 * cpu / n:.3f} ms per instance")
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--n", type=int, default=600)
    parser.add_argument("--c", type=int, default=24)
    parser.add_argument("--show", action="store_true", help="print each statement's count")
    args = parser.parse_args()
    from cirrus.db import migrate

    if args.db == "postgresql":
        name = f"net6_micro_{uuid.uuid4().hex[:8]}"
        admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
        stats = sa.create_engine(PG_ADMIN.rsplit("/", 1)[0] + "/postgres", poolclass=sa.NullPool)
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        url = PG_ADMIN.rsplit("/", 1)[0] + "/" + name
    else:
        tmp = tempfile.mkdtemp()
        url = f"sqlite:///{tmp}/micro.db"
    try:
        migrate.upgrade(url)
        instances = _setup(url, args.n)
        seen: dict[str, Any] = {}
        traced: list[str] = []
        if args.db == "sqlite":
            from sqlalchemy import event

            @event.listens_for(sa.engine.Engine, "connect")
            def _trace(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.set_trace_callback(traced.append)

        def measure(label: str) -> None:
            if args.db == "postgresql":
                now = (_pg_statements(stats, name), _backend_cpu(admin, name))
            else:
                now = ((Counter(_shape(s) for s in _once(traced)), Counter()), 0.0)
            if label == "start":
                seen["start"] = now
                return
            ((before, ms0), cpu0), ((after, ms1), cpu1) = seen["start"], now
            diff, ms = after - before, ms1 - ms0
            n = len(instances)
            core = {q: c for q, c in diff.items()
                    if q.split()[0].upper() not in ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE")}
            print(f"{label}: {sum(core.values()) / n:.2f} statements per instance "
                  f"(BEGIN/COMMIT/SAVEPOINT aside; all {sum(diff.values()) / n:.2f})"
                  + (f", backends CPU {1000 * (cpu1 - cpu0) / n:.3f} ms" if cpu1 else ""))
            if args.show:
                for q, c in sorted(diff.items(), key=lambda kv: -kv[1]):
                    mean = f"{ms[q] / c:6.3f} ms" if ms[q] else ""
                    print(f"  {c / n:6.2f} {mean:>9}  {q}")
        asyncio.run(_run(url, instances, args.c, measure))
    finally:
        if args.db == "postgresql":
            with admin.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))


if __name__ == "__main__":
    main()
