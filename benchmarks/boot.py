"""Boot benchmark: N servers through the HTTP API with C concurrent clients.

First boots ``--singles`` servers one at a time on the idle cloud (single boot
POST→ACTIVE, p50 and min), after ``--warm-singles`` not counted: the first
boots on a fresh cloud pay one-time costs (each process's pooled connections
prepare each statement once, code run for the first time); the very first
boot's time is printed apart (``single_boot_first_ms``). Then prints boots/s, POST latency p50/p99, POST→ACTIVE p50/p99, the time of
GET /servers/detail with all N present, deletes/s and peak RSS; writes
benchmarks/results/boot.json. ``--short`` is the CI smoke mode.

``--transport amqp`` runs the same workload twice over in one run: first with
every service its own process — 1 API, ``--conductors``, 1 scheduler and K
compute processes on RabbitMQ and PostgreSQL (a fresh vhost and database) —
then all-in-one (``cirrus up --computes K``) on each of ``--aio-databases``;
prints the figures side by side and writes benchmarks/results/boot-amqp.json.

    python benchmarks/boot.py                 # N=1000, C=50, K=10
    python benchmarks/boot.py --url http://127.0.0.1:8774 --n 200
    python benchmarks/boot.py --transport amqp --n 200 --c 20 --k 10
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import (BENCH_PG, fresh_database, percentile, rss_mb, running_cloud,  # noqa: E402
                    running_deployment, token, with_children)
from _load import Connection  # noqa: E402
from _probe import SpeedProbe, in_probes  # noqa: E402
from _statements import StatementCounter  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
# Quotas set (and checked, as in a default cloud) but out of the way.
BIG_QUOTAS = {f"CIRRUS_QUOTA_{r}": "1000000" for r in ("INSTANCES", "CORES", "RAM", "PORTS")}
SERVERS = "/compute/v2.1/servers"
# wait_active's check of the servers its polls have not seen finish: once a
# second, up to 10 of those POSTed over 2 s before (a few cheap GETs, next to
# the polls' load; a boot takes well under a second when the cloud keeps up).
STRAGGLER_S = 2.0
STRAGGLER_EVERY_S = 1.0
STRAGGLER_READS = 10


class Lean:
    """JSON calls over one lean keep-alive connection (``_load.Connection``).
    httpx spent as much CPU per boot in the client as the cloud did in the
    server (15 against 13 s for a whole run): on 2 cores the benchmark would
    measure its own client."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.conn = Connection(url, headers)

    async def open(self) -> "Lean":
        await self.conn.open()
        return self

    async def call(self, method: str, path: str, obj: Any = None,
                   params: dict[str, Any] | None = None) -> tuple[int, Any]:
        """(status, parsed JSON body or None)."""
        if params:
            path += "?" + urlencode(params)
        body = json.dumps(obj).encode() if obj is not None else None
        status, raw = await self.conn.request(method, path, body)
        return status, (json.loads(raw) if raw else None)

    async def close(self) -> None:
        await self.conn.close()


def _role(proc: psutil.Process) -> str:
    """A cloud process's name in the report: ``api``, ``compute bench-compute1``…"""
    args = proc.cmdline()
    if "cirrus.cli.main" not in args:
        return f"worker {proc.pid}"  # a forked API worker of cirrus up
    rest = args[args.index("cirrus.cli.main") + 1:]
    host = rest[rest.index("--host") + 1] if "--host" in rest else ""
    return f"{rest[0]} {host}".strip()


def _busy_s(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


class CpuMeter:
    """CPU seconds of each process of the cloud between ``start`` and ``stop``,
    so the cost of a boot shows apart from the machine's noise (boots/s moves
    with what else runs; CPU per boot much less). Beside the cloud's own
    processes: the PostgreSQL backends serving its database (found by the
    database name in their process title), and the RabbitMQ broker whole (it
    may serve others too)."""

    def __init__(self, pids: list[int]) -> None:
        self.procs = [psutil.Process(pid) for pid in pids]
        # A forked API worker of ``cirrus up`` has its parent's command line:
        # named apart, or its CPU would replace the engine's in the report.
        pids_here = set(pids)
        self.roles = {proc.pid: _role(proc) + (" worker" if proc.ppid() in pids_here else "")
                      for proc in self.procs}
        self.database = self._database_name()
        self.before: dict[str, float] = {}
        self.probe = SpeedProbe()

    def _database_name(self) -> str | None:
        for proc in self.procs:
            url = proc.environ().get("CIRRUS_DATABASE_URL", "")
            if url.startswith("postgresql"):
                return url.rsplit("/", 1)[-1]
        return None

    def _sample(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for proc in self.procs:
            out[self.roles[proc.pid]] = _busy_s(proc)
        for proc in psutil.process_iter(["name", "cmdline"]):
            try:
                title = " ".join(proc.info["cmdline"] or [])
                if self.database and proc.info["name"] == "postgres" and f" {self.database} " in title:
                    out["postgres"] = out.get("postgres", 0.0) + _busy_s(proc)
                elif proc.info["name"] == "beam.smp" and self.database:
                    out["rabbitmq"] = out.get("rabbitmq", 0.0) + _busy_s(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return out

    def start(self) -> None:
        self.probe.start()
        self.before = self._sample()

    def per_boot_ms(self, boots: int) -> dict[str, Any]:
        """CPU ms per boot of each process since ``start`` (a backend that
        started meanwhile counts from zero, one that ended is missed)."""
        after = self._sample()
        probe_ms = self.probe.stop()
        spent = {name: (value - self.before.get(name, 0.0)) * 1000 / max(1, boots)
                 for name, value in after.items()}
        figures = {**{f"cpu_ms_per_boot {name}": round(ms, 2) for name, ms in spent.items()},
                   "cpu_ms_per_boot all": round(sum(spent.values()), 2)}
        if probe_ms:  # the machine's speed meanwhile (benchmarks/_probe.py)
            figures["probe_ms"] = round(probe_ms, 3)
            figures["boot_cpu_in_probes"] = round(in_probes(sum(spent.values()), probe_ms), 2)
        return figures


def _server_body(name: str, image: str, network: Any, **extra: Any) -> dict[str, Any]:
    return {"server": {"name": name, "imageRef": image, "flavorRef": "1", "networks": network,
                       **extra}}


async def ensure_image(client: httpx.AsyncClient) -> str:
    resp = await client.get("/image/v2/images", params={"name": "bench"})
    images = resp.json().get("images", [])
    if images:
        return images[0]["id"]
    resp = await client.post("/image/v2/images", json={"name": "bench", "disk_format": "raw",
                                                       "container_format": "bare",
                                                       "visibility": "public"})
    image_id = resp.json()["id"]
    await client.put(f"/image/v2/images/{image_id}/file", content=b"bench" * 100,
                     headers={"Content-Type": "application/octet-stream"})
    return image_id


BENCH_NETWORK = "bench-net"


async def ensure_network(client: httpx.AsyncClient) -> str:
    """``--network explicit``: the project's network ``bench-net`` (made once,
    a /16 subnet: room for any run's addresses), booted by its id as the
    ``openstack`` CLI's ``--network`` boots."""
    resp = await client.get("/network/v2.0/networks", params={"name": BENCH_NETWORK})
    found = resp.json().get("networks", [])
    if found:
        return str(found[0]["id"])
    resp = await client.post("/network/v2.0/networks", json={"network": {"name": BENCH_NETWORK}})
    net_id = str(resp.json()["network"]["id"])
    await client.post("/network/v2.0/subnets", json={"subnet": {
        "name": BENCH_NETWORK, "network_id": net_id, "ip_version": 4, "cidr": "10.99.0.0/16"}})
    return net_id


async def boot_all(url: str, headers: dict[str, str], image: str, n: int, c: int,
                   network: Any, posted: dict[str, float]) -> tuple[list[float], float]:
    """POST n servers with c workers, a connection each; returns (post
    latencies, start). ``posted`` gets each server's POST time as it returns."""
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n):
        queue.put_nowait(i)

    async def worker() -> None:
        api = await Lean(url, headers).open()
        try:
            while not queue.empty():
                i = queue.get_nowait()
                start = time.perf_counter()
                status, body = await api.call("POST", SERVERS, _server_body(f"bench-{i}", image, network))
                latencies.append(time.perf_counter() - start)
                if status != 202:
                    raise RuntimeError(f"POST failed: {status} {body}")
                posted[body["server"]["id"]] = start
        finally:
            await api.close()
    start = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(c)])
    return latencies, start


async def wait_active(api: Lean, posted: dict[str, float], timeout: float,
                      posting: asyncio.Event | None = None) -> tuple[dict[str, float], int]:
    """Poll until every server is ACTIVE or ERROR; (when each was first seen
    so, error count). ``posting``: the POSTs are still going on (``posted``
    grows) until it is set — the poll runs beside them, so a server's time to
    ACTIVE is its own, not the time until the last POST returned.

    Each poll lists only the servers changed since shortly before the previous
    one (``changes-since``, ids only, with a status filter), so its cost
    follows the boots per poll, not N. A server may be seen before its POST's
    response gives its id: every server seen is remembered.

    The overlap cannot catch every change: a server's ``updated_at`` is taken
    when its save runs, and the save becomes visible only at its commit. A
    commit later than the overlap (a writer thread starved on a loaded
    machine) lands behind the next poll's ``changes-since`` for good, and the
    run waited out ``timeout`` for a server that was ACTIVE all along ("999 of
    1,000 active", the cloud idle for minutes). So the stragglers are also
    read one by one (:func:`_read_stragglers`)."""
    seen: dict[str, tuple[float, bool]] = {}  # id -> (first seen, in ERROR)
    deadline = time.perf_counter() + timeout
    since: str | None = None
    next_straggler_read = 0.0

    def finished() -> bool:
        return (posting is None or posting.is_set()) and all(i in seen for i in posted)

    while not finished() and time.perf_counter() < deadline:
        # Half a second of overlap: the filter compares updated_at >= since,
        # and an overlap only re-reads servers already seen.
        next_since = datetime.datetime.fromtimestamp(
            time.time() - 0.5, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for status in ("ACTIVE", "ERROR"):
            path: str | None = SERVERS
            params: dict[str, Any] | None = {"limit": 1000, "status": status}
            if since is not None:
                params["changes-since"] = since
            while path:
                _, body = await api.call("GET", path, params=params)
                now = time.perf_counter()
                for s in body["servers"]:
                    seen.setdefault(s["id"], (now, status == "ERROR"))
                links = body.get("servers_links")
                path, params = (_path_of(links[0]["href"]), None) if links else (None, None)
        since = next_since
        if time.perf_counter() >= next_straggler_read:
            next_straggler_read = time.perf_counter() + STRAGGLER_EVERY_S
            await _read_stragglers(api, posted, seen)
        await asyncio.sleep(0.05)
    done = {i: seen[i][0] for i in posted if i in seen}
    return done, sum(seen[i][1] for i in done)


async def _read_stragglers(api: Lean, posted: dict[str, float],
                           seen: dict[str, tuple[float, bool]]) -> None:
    """GET the oldest servers not seen ACTIVE or ERROR ``STRAGGLER_S`` after
    their POST (at most ``STRAGGLER_READS``), remembering those that are: a
    change the ``changes-since`` polls missed. A server still building is read
    again at a later round; one that truly never finishes stays unseen."""
    old = time.perf_counter() - STRAGGLER_S
    unseen = sorted((t, i) for i, t in list(posted.items()) if i not in seen and t < old)
    for _, server_id in unseen[:STRAGGLER_READS]:
        code, body = await api.call("GET", f"{SERVERS}/{server_id}")
        status = body["server"]["status"] if code == 200 else None
        if status in ("ACTIVE", "ERROR"):
            seen.setdefault(server_id, (time.perf_counter(), status == "ERROR"))


async def report_unfinished(api: Lean, server_ids: list[str], most: int = 10) -> None:
    """Print the state of servers that never finished (up to ``most``): a boot
    left in BUILD is a bug to chase, with these to start from."""
    for server_id in server_ids[:most]:
        _, body = await api.call("GET", f"{SERVERS}/{server_id}")
        server = (body or {}).get("server", {})
        print(f"unfinished: {server_id} status={server.get('status')} "
              f"task_state={server.get('OS-EXT-STS:task_state')} "
              f"host={server.get('OS-EXT-SRV-ATTR:host')} updated={server.get('updated')}",
              file=sys.stderr, flush=True)


def _path_of(href: str) -> str:
    parts = urlsplit(href)
    return parts.path + ("?" + parts.query if parts.query else "")


async def single_boot(api: Lean, image: str, network: Any, name: str
                      ) -> tuple[str, float, float, float]:
    """One server booted on the idle cloud, polled with GET /servers/{id}
    every 2 ms (finer than the bulk poll, and light: one cheap read per poll),
    then deleted: (its id, and the ``time.time()`` of the POST's send, of its
    answer, and of the poll that saw it ACTIVE)."""
    sent = time.time()
    code, body = await api.call("POST", SERVERS, _server_body(name, image, network))
    answered = time.time()
    if code != 202:
        raise RuntimeError(f"POST failed: {code} {body}")
    server_id = body["server"]["id"]
    while True:
        status = (await api.call("GET", f"{SERVERS}/{server_id}"))[1]["server"]["status"]
        if status in ("ACTIVE", "ERROR"):
            break
        await asyncio.sleep(0.002)
    seen = time.time()
    if status != "ACTIVE":
        raise RuntimeError(f"single boot {server_id} ended {status}")
    await api.call("DELETE", f"{SERVERS}/{server_id}")
    while (await api.call("GET", f"{SERVERS}/{server_id}"))[0] != 404:
        await asyncio.sleep(0.01)
    return server_id, sent, answered, seen


async def single_boots(api: Lean, image: str, network: Any, count: int) -> list[float]:
    """POST→ACTIVE of ``count`` servers booted one at a time on the idle cloud
    (issue 8: under 25 ms), each deleted before the next boots."""
    times = []
    for i in range(count):
        _id, sent, _answered, seen = await single_boot(api, image, network, f"single-{i}")
        times.append(seen - sent)
    return times


async def delete_all(url: str, headers: dict[str, str], ids: list[str], c: int) -> None:
    """DELETE every server with c workers, then wait until none is listed."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for server_id in ids:
        queue.put_nowait(server_id)

    async def worker() -> None:
        api = await Lean(url, headers).open()
        try:
            while not queue.empty():
                server_id = queue.get_nowait()
                status, body = await api.call("DELETE", f"{SERVERS}/{server_id}")
                if status != 204:
                    raise RuntimeError(f"DELETE failed: {status} {body}")
        finally:
            await api.close()
    await asyncio.gather(*[worker() for _ in range(c)])
    api = await Lean(url, headers).open()
    try:
        remaining = set(ids)
        while remaining:
            _, body = await api.call("GET", SERVERS, params={"limit": 1000})
            remaining &= {s["id"] for s in body["servers"]}
            await asyncio.sleep(0.02)
    finally:
        await api.close()


async def run(url: str, n: int, c: int, network: Any, pids: list[int],
              singles: int = 10, warm: int = 5) -> dict[str, Any]:
    headers = {"X-Auth-Token": token(url), "OpenStack-API-Version": "compute 2.37"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        image = await ensure_image(client)
        if network == "explicit":
            network = [{"uuid": await ensure_network(client)}]
    api = await Lean(url, headers).open()
    cpu = CpuMeter(pids)
    try:
        cold = await single_boots(api, image, network, warm)
        single = await single_boots(api, image, network, singles)
        t0 = time.perf_counter()
        posting = asyncio.Event()
        posted: dict[str, float] = {}
        # PostgreSQL: the statements of the boot phase, counted by the server
        counter = StatementCounter(BENCH_PG, cpu.database) if cpu.database else None
        statements_before = counter.snapshot() if counter else None
        cpu.start()
        poller = asyncio.ensure_future(wait_active(api, posted, max(60, n / 5), posting))
        try:
            latencies, start = await boot_all(url, headers, image, n, c, network, posted)
        finally:
            posting.set()
        active, errors = await poller
        wall = time.perf_counter() - t0
        await report_unfinished(api, [i for i in posted if i not in active])
        cpu_per_boot = cpu.per_boot_ms(len(active))
        if counter is not None:
            cpu_per_boot.update(counter.figures(statements_before, len(active)))
        to_active = [active[i] - posted[i] for i in active]
        d0 = time.perf_counter()
        await api.call("GET", f"{SERVERS}/detail", params={"limit": 1000})
        detail_s = time.perf_counter() - d0
        # one multi-create request of the same size
        m0 = time.perf_counter()
        status, body = await api.call("POST", SERVERS, _server_body(
            "multi", image, network, min_count=min(n, 100), max_count=min(n, 100),
            return_reservation_id=True))
        multi_ids: dict[str, float] = {}
        if status == 202:
            _, listed = await api.call("GET", SERVERS, params={"reservation_id": body["reservation_id"]})
            multi_ids = {s["id"]: m0 for s in listed["servers"]}
            await wait_active(api, multi_ids, timeout=120)
        multi_s = time.perf_counter() - m0
    finally:
        cpu.probe.stop()  # stopped already unless the boots failed
        await api.close()
    ids = list(posted) + list(multi_ids)
    x0 = time.perf_counter()
    await delete_all(url, headers, ids, c)
    delete_s = time.perf_counter() - x0
    return {
        "n": n, "concurrency": c, "errors": errors, "active": len(active) - errors,
        "boots_per_s": round(len(active) / wall, 1),
        "post_p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "post_p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "post_to_active_p50_ms": round(percentile(to_active, 50) * 1000, 1),
        "post_to_active_p99_ms": round(percentile(to_active, 99) * 1000, 1),
        "single_boot_p50_ms": round(percentile(single, 50) * 1000, 1) if single else None,
        "single_boot_min_ms": round(min(single) * 1000, 1) if single else None,
        "single_boot_first_ms": round((cold or single)[0] * 1000, 1) if cold or single else None,
        "servers_detail_ms": round(detail_s * 1000, 1),
        "multi_create_boots_per_s": round(len(multi_ids) / multi_s, 1) if multi_ids else None,
        "deletes_per_s": round(len(ids) / delete_s, 1),
        # summed over the processes of the cloud
        "peak_rss_mb": round(sum(rss_mb(pid, "VmHWM") for pid in pids), 1) if pids else None,
        **cpu_per_boot,
    }


def cloud_env(n: int, k: int) -> dict[str, str]:
    """Room for n servers on k fake hosts; quotas out of the way."""
    hosts = max(1, k)
    per_host = 2 * (n + 100) // hosts + 1  # the n, the multi-create's 100, room to spare
    return {**BIG_QUOTAS, "CIRRUS_AUTO_ALLOCATE_CIDR": "10.0.0.0/16",
            "CIRRUS_FAKE_HOST_MEMORY_MB": str(max(32768, per_host * 512)),
            # 16 per vCPU (the allocation ratio); flavor 1 takes 1 GB of disk
            "CIRRUS_FAKE_HOST_VCPUS": str(max(16, per_host // 16 + 1)),
            "CIRRUS_FAKE_HOST_DISK_GB": str(max(1024, per_host))}


def compare(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The workload on separate processes over AMQP, then all-in-one."""
    env = cloud_env(args.n, args.k)
    results: dict[str, dict[str, Any]] = {}
    if not args.no_processes:
        print(f"== processes: 1 api, {args.conductors} conductors, 1 scheduler, {args.k} "
              f"computes on RabbitMQ + PostgreSQL", flush=True)
        with running_deployment(args.k, args.conductors, env) as (url, procs):
            results["processes/amqp/postgresql"] = asyncio.run(
                run(url, args.n, args.c, args.network, [p.pid for p in procs], args.singles,
                    args.warm_singles))
    for database in [d.strip() for d in args.aio_databases.split(",") if d.strip()]:
        print(f"== all-in-one: cirrus up --computes {args.k} on {database}", flush=True)
        with contextlib.ExitStack() as stack:
            extra = {}
            if database == "postgresql":
                extra["CIRRUS_DATABASE_URL"] = stack.enter_context(fresh_database())
            elif database != "sqlite":
                raise SystemExit(f"--aio-databases: unknown database {database!r}")
            url, proc = stack.enter_context(running_cloud(args.k, {**env, **extra}))
            results[f"all-in-one/inprocess/{database}"] = asyncio.run(
                run(url, args.n, args.c, args.network, with_children(proc.pid), args.singles,
                    args.warm_singles))
    return results


def print_side_by_side(results: dict[str, dict[str, Any]]) -> None:
    names = list(results)
    width = max(26, *(len(n) + 2 for n in names))
    keys = list(dict.fromkeys(key for result in results.values() for key in result))
    label = max(28, *(len(k) + 1 for k in keys))
    print(f"{'':{label}s}" + "".join(f"{n:>{width}s}" for n in names))
    for key in keys:
        if any(isinstance(r.get(key), list) for r in results.values()):
            continue  # a list (the top statements): in the JSON only
        print(f"{key:{label}s}" + "".join(f"{str(results[n].get(key, '')):>{width}s}"
                                          for n in names))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running cloud (admin/admin); default: start one")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--c", type=int, default=50)
    parser.add_argument("--k", type=int, default=10, help="compute hosts (simulated, or processes)")
    parser.add_argument("--network", default="auto", help="auto, none, or explicit (a network of the project's "
                        "own, by its id)")
    parser.add_argument("--transport", choices=("inprocess", "amqp"), default="inprocess",
                        help="amqp: services as processes on RabbitMQ + PostgreSQL, then "
                             "all-in-one, side by side")
    parser.add_argument("--conductors", type=int, default=2, help="with --transport amqp")
    parser.add_argument("--aio-databases", default="sqlite,postgresql",
                        help="with --transport amqp: the all-in-one runs to compare against")
    parser.add_argument("--no-processes", action="store_true",
                        help="with --transport amqp: only the all-in-one runs (e.g. "
                             "--aio-databases postgresql for the all-in-one on PostgreSQL)")
    parser.add_argument("--singles", type=int, default=10,
                        help="servers booted one at a time first (single boot latency)")
    parser.add_argument("--warm-singles", type=int, default=5,
                        help="single boots before those counted (the first is printed apart)")
    parser.add_argument("--api-workers", type=int, default=0,
                        help="cirrus up --api-workers: the API in this many processes beside "
                             "the engine's (figures are for all the processes)")
    parser.add_argument("--short", action="store_true", help="CI smoke: N=20, C=5, K=2")
    args = parser.parse_args()
    if args.short:
        args.n, args.c, args.k, args.singles, args.warm_singles = 20, 5, 2, 2, 1
    RESULTS.mkdir(exist_ok=True)
    suffix = "-short" if args.short else ""
    if args.transport == "amqp":
        results = compare(args)
        print_side_by_side(results)
        setup = {"n": args.n, "concurrency": args.c, "computes": args.k,
                 "conductors": args.conductors, "schedulers": 1, "apis": 1}
        (RESULTS / f"boot-amqp{suffix}.json").write_text(
            json.dumps({"setup": setup, "results": results}, indent=2))
        return 0 if all(r["errors"] == 0 and r["active"] == args.n
                        for r in results.values()) else 1
    if args.url:
        result = asyncio.run(run(args.url, args.n, args.c, args.network, [], args.singles,
                                     args.warm_singles))
    else:
        extra = ("--api-workers", str(args.api_workers)) if args.api_workers else ()
        with running_cloud(args.k, cloud_env(args.n, args.k), extra=extra) as (url, proc):
            result = asyncio.run(run(url, args.n, args.c, args.network,
                                     with_children(proc.pid), args.singles, args.warm_singles))
    for key, value in result.items():
        if not isinstance(value, list):  # the top statements: in the JSON only
            print(f"{key:36s} {value}")
    (RESULTS / f"boot{suffix}.json").write_text(json.dumps(result, indent=2))
    return 0 if result["errors"] == 0 and result["active"] == args.n else 1


if __name__ == "__main__":
    sys.exit(main())
