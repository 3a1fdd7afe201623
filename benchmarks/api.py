"""Read benchmark: the compute API's server reads with many servers in the database.

Puts ``--servers`` servers (default 10,000) in the database through the API —
multi-create requests (``min_count``/``max_count``) after raising the quotas of
both projects with ``os-quota-sets`` as admin — ``--detail-servers`` (1,000) of
them in project admin, the rest in project demo; waits until none is building,
then measures:

* ``GET /servers/detail`` as admin, whose project holds 1,000 servers (one
  client, back to back): p50/p99 — target (issue 8) under 60 ms;
* ``GET /servers/{id}`` as demo over demo's servers, ``--clients`` concurrent
  clients: requests/s, p50/p99;
* ``GET /servers/{id}`` sent at a fixed ``--rate`` (1,000/s): p50/p99 —
  target p99 under 5 ms;
* ``GET /servers/detail?limit=1000`` as demo, ``--detail-clients`` concurrent
  clients: requests/s, p50/p99;

and the cloud's peak RSS. Prints the figures and writes
benchmarks/results/api.json (``--short``: api-short.json, the CI smoke mode).
Servers already in the projects count (a re-run on the same cloud or
``--state-dir`` only tops up).

    python benchmarks/api.py                     # starts cirrus up --computes 10
    python benchmarks/api.py --state-dir /tmp/api10k   # keep the populated cloud
    python benchmarks/api.py --url http://127.0.0.1:8774 --servers 2000
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import rss_mb, running_cloud, with_children  # noqa: E402
from _load import closed_loop, fixed_rate  # noqa: E402
from boot import ensure_image  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SERVERS = "/compute/v2.1/servers"


async def login(url: str, user: str, password: str) -> tuple[str, str]:
    """(token, project id) of ``user`` scoped to the project of the same name."""
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": user, "domain": {"id": "default"}}}}}
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(f"{url}/identity/v3/auth/tokens", json=body)
    resp.raise_for_status()
    return resp.headers["X-Subject-Token"], resp.json()["token"]["project"]["id"]


async def server_ids(client: httpx.AsyncClient, status: str | None = None) -> list[str]:
    """Ids of the caller's project's servers (paging the cheap list)."""
    ids: list[str] = []
    params: dict[str, Any] = {"limit": 1000}
    if status:
        params["status"] = status
    while True:
        servers = (await client.get(SERVERS, params=params)).json()["servers"]
        ids += [s["id"] for s in servers]
        if len(servers) < 1000:
            return ids
        params["marker"] = servers[-1]["id"]


async def populate(client: httpx.AsyncClient, image: str, want: int, batch: int,
                   network: str, building_max: int) -> dict[str, Any]:
    """Top the caller's project up to ``want`` servers with multi-create requests
    of ``batch``, keeping at most ``building_max`` building at a time (a longer
    queue only waits, and an instance that waits past instance_build_timeout
    fails); returns what it did."""
    have = len(await server_ids(client))
    created, start = 0, time.perf_counter()
    while have + created < want:
        while len(await server_ids(client, "BUILD")) > building_max:
            await asyncio.sleep(0.5)
        count = min(batch, want - have - created)
        resp = await client.post(SERVERS, json={"server": {
            "name": f"api-bench-{have + created}", "imageRef": image, "flavorRef": "1",
            "networks": network, "min_count": count, "max_count": count,
            "return_reservation_id": True}})
        if resp.status_code != 202:
            raise RuntimeError(f"multi-create of {count}: {resp.status_code} {resp.text}")
        created += count
    while await server_ids(client, "BUILD"):
        await asyncio.sleep(0.5)
    return {"existing": have, "created": created,
            "seconds": round(time.perf_counter() - start, 1),
            "errors": len(await server_ids(client, "ERROR"))}


async def prepare(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Log in as admin and demo, raise both quotas, populate; the sessions."""
    admin_token, admin_project = await login(url, "admin", args.admin_password)
    demo_token, demo_project = await login(url, "demo", args.demo_password)
    version = {"OpenStack-API-Version": f"compute {args.microversion}"}
    sessions = {"admin": {"X-Auth-Token": admin_token, **version},
                "demo": {"X-Auth-Token": demo_token, **version}}
    wants = {"admin": args.detail_servers, "demo": args.servers - args.detail_servers}
    report: dict[str, Any] = {}
    async with httpx.AsyncClient(base_url=url, headers=sessions["admin"], timeout=600) as admin:
        for project in (admin_project, demo_project):
            resp = await admin.put(f"/compute/v2.1/os-quota-sets/{project}", json={
                "quota_set": {"instances": -1, "cores": -1, "ram": -1}})
            resp.raise_for_status()
        image = await ensure_image(admin)
    for who in ("admin", "demo"):
        async with httpx.AsyncClient(base_url=url, headers=sessions[who], timeout=600) as client:
            print(f"populating project {who} up to {wants[who]} servers", flush=True)
            report[who] = await populate(client, image, wants[who], args.batch, args.network,
                                         args.building_max)
            report[who]["ids"] = await server_ids(client)
    return {"sessions": sessions, "populate": report}


async def measure(url: str, args: argparse.Namespace, prepared: dict[str, Any]) -> dict[str, Any]:
    sessions, report = prepared["sessions"], prepared["populate"]
    demo_ids = report["demo"]["ids"]
    shuffled = random.Random(8).sample(demo_ids, len(demo_ids))

    def show_path(i: int) -> str:
        return f"{SERVERS}/{shuffled[i % len(shuffled)]}"

    results: dict[str, Any] = {}
    # Warm-up: first requests pay for imports, caches and connection set-up.
    await closed_loop(url, sessions["demo"], show_path, 4, 1.0, max_requests=200)

    run = await closed_loop(url, sessions["admin"], lambda i: f"{SERVERS}/detail",
                            1, args.duration * 3, max_requests=args.detail_requests)
    results["detail_all"] = run.summary(servers=len(report["admin"]["ids"]), clients=1)
    print(f"GET /servers/detail ({len(report['admin']['ids'])} servers), one client: "
          f"p50 {run.summary()['p50_ms']} ms, p99 {run.summary()['p99_ms']} ms", flush=True)

    run = await closed_loop(url, sessions["demo"], show_path, args.clients, args.duration)
    results["show_load"] = run.summary(clients=args.clients)
    print(f"GET /servers/{{id}}, {args.clients} clients: {results['show_load']['requests_per_s']}"
          f" req/s, p50 {results['show_load']['p50_ms']} ms, "
          f"p99 {results['show_load']['p99_ms']} ms", flush=True)

    run = await fixed_rate(url, sessions["demo"], show_path, args.rate, args.duration)
    results["show_rate"] = run.summary(target_per_s=args.rate)
    print(f"GET /servers/{{id}} at {args.rate}/s: {results['show_rate']['requests_per_s']} req/s,"
          f" p50 {results['show_rate']['p50_ms']} ms, p99 {results['show_rate']['p99_ms']} ms",
          flush=True)

    run = await closed_loop(url, sessions["demo"], lambda i: f"{SERVERS}/detail?limit=1000",
                            args.detail_clients, args.duration * 2)
    results["detail_limit_load"] = run.summary(clients=args.detail_clients, limit=1000)
    print(f"GET /servers/detail?limit=1000, {args.detail_clients} clients: "
          f"{results['detail_limit_load']['requests_per_s']} req/s, "
          f"p50 {results['detail_limit_load']['p50_ms']} ms, "
          f"p99 {results['detail_limit_load']['p99_ms']} ms", flush=True)
    return results


def run(url: str, args: argparse.Namespace, pid: int | None) -> dict[str, Any]:
    async def both() -> dict[str, Any]:
        prepared = await prepare(url, args)
        return {"prepared": prepared, "results": await measure(url, args, prepared)}
    out = _loop_runner()(both())
    report = out["prepared"]["populate"]
    setup = {"servers": sum(len(r["ids"]) for r in report.values()),
             "admin_servers": len(report["admin"]["ids"]),
             "demo_servers": len(report["demo"]["ids"]), "microversion": args.microversion,
             "network": args.network, "computes": args.k if pid else None,
             "duration_s": args.duration}
    populate = {who: {k: v for k, v in r.items() if k != "ids"} for who, r in report.items()}
    return {"setup": setup, "populate": populate, **out["results"],
            # summed over the cloud's processes (the engine and its API workers)
            "peak_rss_mb": round(sum(rss_mb(p, "VmHWM") for p in with_children(pid)), 1)
            if pid else None}


def _loop_runner() -> Any:
    """uvloop's runner when it is there: the client then costs less CPU."""
    try:
        import uvloop

        return uvloop.run
    except ImportError:
        return asyncio.run


def cloud_env(servers: int, k: int) -> dict[str, str]:
    """Room for ``servers`` m1.tiny servers on ``k`` fake hosts, with headroom
    for an uneven spread; no port quota (every server has one)."""
    per_host = 2 * servers // max(1, k) + 16
    return {"CIRRUS_FAKE_HOST_VCPUS": str(max(16, per_host // 16 + 1)),
            "CIRRUS_FAKE_HOST_MEMORY_MB": str(max(32768, per_host * 512)),
            "CIRRUS_FAKE_HOST_DISK_GB": str(max(1024, per_host)),
            "CIRRUS_QUOTA_PORTS": "-1", "CIRRUS_AUTO_ALLOCATE_CIDR": "10.0.0.0/16"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running cloud; default: start one")
    parser.add_argument("--state-dir", help="start the cloud on this state dir (kept: a "
                                            "second run finds its servers there)")
    parser.add_argument("--admin-password", default="admin")
    parser.add_argument("--demo-password", default="demo")
    parser.add_argument("--servers", type=int, default=10000, help="in the database in all")
    parser.add_argument("--detail-servers", type=int, default=1000,
                        help="of them in project admin, listed whole by GET /servers/detail")
    parser.add_argument("--k", type=int, default=10, help="fake compute hosts")
    parser.add_argument("--network", default="auto", help="auto, none")
    # 500 per request made a scheduler call outlast its 60 s RPC timeout
    # (the whole batch in ERROR) on a loaded machine.
    parser.add_argument("--batch", type=int, default=200, help="servers per multi-create")
    parser.add_argument("--building-max", type=int, default=400)
    parser.add_argument("--microversion", default="2.90")
    parser.add_argument("--clients", type=int, default=16, help="for GET /servers/{id}")
    parser.add_argument("--detail-clients", type=int, default=4,
                        help="for GET /servers/detail?limit=1000")
    parser.add_argument("--rate", type=float, default=1000.0,
                        help="GET /servers/{id} per second in the fixed-rate run")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per load run")
    parser.add_argument("--detail-requests", type=int, default=200,
                        help="at most, GET /servers/detail with one client")
    parser.add_argument("--short", action="store_true",
                        help="CI smoke: 40 servers (10 admin), K=2, 1 s runs at 200/s")
    args = parser.parse_args()
    if args.short:
        args.servers, args.detail_servers, args.k, args.batch = 40, 10, 2, 20
        args.clients, args.detail_clients, args.rate, args.duration = 4, 2, 200.0, 1.0
        args.detail_requests = 20
    if not 0 < args.detail_servers < args.servers:
        parser.error("--detail-servers must be between 0 and --servers")
    if args.url:
        result = run(args.url.rstrip("/"), args, None)
    else:
        with running_cloud(args.k, cloud_env(args.servers, args.k),
                           state_dir=args.state_dir) as (url, proc):
            result = run(url, args, proc.pid)
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"api{'-short' if args.short else ''}.json").write_text(json.dumps(result, indent=2))
    failed = sum(r["errors"] for r in result["populate"].values()) + sum(
        result[k]["errors"] for k in ("detail_all", "show_load", "show_rate", "detail_limit_load"))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
