"""Hostile-request benchmark (issue #18): what one tenant's worst requests
cost the cloud, and everyone else on it.

Puts ``--servers`` servers (default 1,000, fake driver, no network) in
project demo, one of them named 30 × ``a`` + ``!``, waits until none is
building, then measures:

* ``GET /servers?name=^(a+)+$`` and ``/servers/detail?name=…`` (a pattern that
  takes a backtracking engine ~37 s on that name): p50/max — target p50
  under 50 ms; the same for ``?ip=`` with a nested quantifier;
* ``GET /servers/{id}`` at ``--rate`` per second, first on the idle cloud,
  then while the catastrophic listing is sent at ``--hostile-rate`` per
  second: p50/p99 of both — target: p99 under load within 2× idle;
* ``POST /servers`` with ``min_count`` = ``max_count`` = 1,000,000 (over
  ``max_instances_per_request``: 400) and = 1,000 (over demo's quota: 403),
  ``--posts`` of each: p50/max — target under 10 ms — and the cloud's RSS
  before and after (target: no growth).

Prints the figures and writes benchmarks/results/hostile.json.

    python benchmarks/hostile.py                  # starts cirrus up --computes 4
    python benchmarks/hostile.py --short          # CI smoke: 100 servers, 1 s runs
    python benchmarks/hostile.py --url http://127.0.0.1:8774
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import percentile, rss_mb, running_cloud, with_children  # noqa: E402
from _load import Connection, closed_loop, fixed_rate  # noqa: E402
from api import cloud_env, login, populate, server_ids  # noqa: E402
from boot import ensure_image  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SERVERS = "/compute/v2.1/servers"
EVIL_NAME = "a" * 30 + "!"
NAME_PATTERN = "^(a+)+$"
IP_PATTERN = r"^(\d+)+\.x$"  # nested quantifier over an address's digits


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


async def prepare(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Demo's servers (quota raised for the setup, then put back), the evil one
    among them; the sessions and the ids."""
    admin_token, _ = await login(url, "admin", args.admin_password)
    demo_token, demo_project = await login(url, "demo", args.demo_password)
    admin = {"X-Auth-Token": admin_token}
    demo = {"X-Auth-Token": demo_token, "OpenStack-API-Version": "compute 2.37"}
    quota_url = f"/compute/v2.1/os-quota-sets/{demo_project}"
    async with httpx.AsyncClient(base_url=url, headers=admin, timeout=600) as client:
        (await client.put(quota_url, json={"quota_set": {
            "instances": -1, "cores": -1, "ram": -1}})).raise_for_status()
        image = await ensure_image(client)
    async with httpx.AsyncClient(base_url=url, headers=demo, timeout=600) as client:
        named = (await client.get(SERVERS, params={"name": f"^{EVIL_NAME}$"})).json()["servers"]
        if not named:
            resp = await client.post(SERVERS, json={"server": {
                "name": EVIL_NAME, "imageRef": image, "flavorRef": "1", "networks": "none"}})
            resp.raise_for_status()
        print(f"populating project demo up to {args.servers} servers", flush=True)
        report = await populate(client, image, args.servers, args.batch, "none", 400)
        ids = await server_ids(client)
    async with httpx.AsyncClient(base_url=url, headers=admin, timeout=600) as client:
        # Back to the default quota: the 1,000-server POST below is over it.
        (await client.delete(quota_url)).raise_for_status()
    return {"sessions": {"admin": admin, "demo": demo}, "ids": ids, "populate": report}


async def timed_gets(url: str, headers: dict[str, str], path: str, count: int) -> dict[str, Any]:
    conn = await Connection(url, headers).open()
    latencies, statuses = [], set()
    try:
        for _ in range(count):
            started = time.perf_counter()
            status, _body = await conn.get(path)
            latencies.append(time.perf_counter() - started)
            statuses.add(status)
    finally:
        await conn.close()
    return {"requests": count, "statuses": sorted(statuses),
            "p50_ms": _ms(percentile(latencies, 50)), "max_ms": _ms(max(latencies))}


async def catastrophic_listings(url: str, sessions: dict[str, Any],
                                args: argparse.Namespace) -> dict[str, Any]:
    out = {}
    for label, path in (("index_name", f"{SERVERS}?name={quote(NAME_PATTERN)}"),
                        ("detail_name", f"{SERVERS}/detail?name={quote(NAME_PATTERN)}"),
                        ("detail_ip", f"{SERVERS}/detail?ip={quote(IP_PATTERN)}")):
        out[label] = await timed_gets(url, sessions["demo"], path, args.listings)
        print(f"GET {path}: p50 {out[label]['p50_ms']} ms, max {out[label]['max_ms']} ms "
              f"(answers {out[label]['statuses']})", flush=True)
    return out


async def show_under_attack(url: str, sessions: dict[str, Any], ids: list[str],
                            args: argparse.Namespace) -> dict[str, Any]:
    """GET /servers/{id} at a fixed rate, idle and then with the catastrophic
    listing sent alongside at ``--hostile-rate``."""
    def show(i: int) -> str:
        return f"{SERVERS}/{ids[i % len(ids)]}"

    demo = sessions["demo"]
    await closed_loop(url, demo, show, 2, 1.0, max_requests=200)  # warm-up
    idle = (await fixed_rate(url, demo, show, args.rate, args.duration, 8)).summary()
    hostile_path = f"{SERVERS}/detail?name={quote(NAME_PATTERN)}"
    attack, loaded = await asyncio.gather(
        fixed_rate(url, demo, lambda i: hostile_path, args.hostile_rate, args.duration, 4),
        fixed_rate(url, demo, show, args.rate, args.duration, 8))
    under = loaded.summary()
    ratio = round(under["p99_ms"] / idle["p99_ms"], 2) if idle["p99_ms"] else None
    print(f"GET /servers/{{id}} at {args.rate:g}/s idle: p50 {idle['p50_ms']} ms, "
          f"p99 {idle['p99_ms']} ms; with ?name={NAME_PATTERN} at {args.hostile_rate:g}/s "
          f"(p99 {attack.summary()['p99_ms']} ms): p50 {under['p50_ms']} ms, "
          f"p99 {under['p99_ms']} ms ({ratio}× idle)", flush=True)
    return {"idle": idle, "under_attack": under, "attack": attack.summary(),
            "p99_ratio": ratio}


async def huge_creates(url: str, sessions: dict[str, Any], pid: int | None,
                       args: argparse.Namespace) -> dict[str, Any]:
    """POST /servers for a million (and a thousand) servers, ``--posts`` each."""
    def rss() -> float:
        return round(sum(rss_mb(p) for p in with_children(pid)), 1) if pid else float("nan")

    async with httpx.AsyncClient(base_url=url, headers=sessions["demo"], timeout=600) as client:
        image = await ensure_image(client)
    out: dict[str, Any] = {"rss_before_mb": rss()}
    conn = await Connection(url, sessions["demo"]).open()
    try:
        for count in (1_000_000, 1000):
            body = json.dumps({"server": {"name": "huge", "imageRef": image, "flavorRef": "1",
                                          "networks": "none", "min_count": count,
                                          "max_count": count}}).encode()
            latencies, statuses = [], set()
            for _ in range(args.posts):
                started = time.perf_counter()
                status, _body = await conn.request("POST", SERVERS, body)
                latencies.append(time.perf_counter() - started)
                statuses.add(status)
            out[f"count_{count}"] = {"statuses": sorted(statuses), "posts": args.posts,
                                     "p50_ms": _ms(percentile(latencies, 50)),
                                     "max_ms": _ms(max(latencies))}
            print(f"POST /servers min_count=max_count={count:,}: answers {sorted(statuses)}, "
                  f"p50 {out[f'count_{count}']['p50_ms']} ms, "
                  f"max {out[f'count_{count}']['max_ms']} ms", flush=True)
    finally:
        await conn.close()
    out["rss_after_mb"] = rss()
    print(f"cloud RSS before {out['rss_before_mb']} MiB, after {out['rss_after_mb']} MiB",
          flush=True)
    return out


def run(url: str, args: argparse.Namespace, pid: int | None) -> dict[str, Any]:
    async def all_of_it() -> dict[str, Any]:
        prepared = await prepare(url, args)
        sessions, ids = prepared["sessions"], prepared["ids"]
        return {"setup": {"servers": len(ids), "computes": args.k if pid else None,
                          "populate": prepared["populate"]},
                "listings": await catastrophic_listings(url, sessions, args),
                "show": await show_under_attack(url, sessions, ids, args),
                "creates": await huge_creates(url, sessions, pid, args)}
    return asyncio.run(all_of_it())


def verdict(result: dict[str, Any]) -> dict[str, bool]:
    """Each target of issue #18 met or not."""
    creates = result["creates"]
    return {
        # p50: the machine's noise (two cores shared with the client) is in the max.
        "listing_under_50_ms": all(r["p50_ms"] < 50 and r["statuses"] == [200]
                                   for r in result["listings"].values()),
        "show_p99_within_2x": (result["show"]["p99_ratio"] or 0) <= 2.0,
        "huge_create_under_10_ms": all(creates[k]["p50_ms"] < 10
                                       for k in ("count_1000000", "count_1000")),
        "huge_create_refused": creates["count_1000000"]["statuses"] == [400]
        and creates["count_1000"]["statuses"] == [403],
        "no_rss_growth": not creates["rss_after_mb"] > creates["rss_before_mb"] + 5,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running cloud (admin/admin, demo/demo); default: "
                                      "start one")
    parser.add_argument("--admin-password", default="admin")
    parser.add_argument("--demo-password", default="demo")
    parser.add_argument("--servers", type=int, default=1000, help="in project demo")
    parser.add_argument("--k", type=int, default=4, help="fake compute hosts")
    parser.add_argument("--batch", type=int, default=200, help="servers per multi-create")
    parser.add_argument("--listings", type=int, default=20,
                        help="catastrophic listings timed, one after another")
    parser.add_argument("--rate", type=float, default=200.0,
                        help="GET /servers/{id} per second")
    parser.add_argument("--hostile-rate", type=float, default=5.0,
                        help="catastrophic listings per second alongside")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per load run")
    parser.add_argument("--posts", type=int, default=20, help="of each huge POST /servers")
    parser.add_argument("--short", action="store_true",
                        help="CI smoke: 100 servers, K=2, 1 s runs")
    args = parser.parse_args()
    if args.short:
        args.servers, args.k, args.duration, args.listings, args.posts = 100, 2, 1.0, 5, 5
    if args.url:
        result = run(args.url.rstrip("/"), args, None)
    else:
        env = {**cloud_env(args.servers, args.k), "CIRRUS_QUOTA_PORTS": "500"}
        with running_cloud(args.k, env) as (url, proc):
            result = run(url, args, proc.pid)
    result["targets_met"] = verdict(result)
    print(json.dumps(result["targets_met"], indent=2))
    RESULTS.mkdir(exist_ok=True)
    name = f"hostile{'-short' if args.short else ''}.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2))
    return 0 if all(result["targets_met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
