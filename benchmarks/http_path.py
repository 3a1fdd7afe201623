"""HTTP path benchmark: the server's CPU per request on boot.py's hot routes.

Starts ``cirrus up --computes K`` (or uses ``--url`` with ``--pid``) and, for
``--rounds`` rounds, sends a fixed number of requests of each route from lean
keep-alive connections (benchmarks/_load.py, tens of µs per request on the
client side), reading the server process's CPU time (utime + stime of all its
threads, /proc/PID/stat) before and after each phase:

* ``create``: ``POST /servers`` with boot.py's body, ``--n`` of them over
  ``--c`` connections, then until none is BUILD — the figure includes the
  boot each POST starts;
* ``poll``: boot.py's wait loop, ``GET /servers?limit=1000&status=ACTIVE|ERROR
  &changes-since=…`` (ids only; the ACTIVE ones list this round's servers);
* ``show``: ``GET /servers/{id}``;
* ``detail``: ``GET /servers/detail`` (the round's ``--n`` servers);
* ``delete``: ``DELETE /servers/{id}``, then until none is left — includes
  the teardown.

Prints µs of server CPU per request of each route (median and range over the
rounds) and writes benchmarks/results/http_path.json (``--short``:
http_path-short.json, the CI smoke mode). The clock ticks of /proc are 10 ms:
phases are sized to hundreds of ticks. To compare two trees, run it with each
tree on PYTHONPATH (the cloud inherits it), alternating.

    python benchmarks/http_path.py
    python benchmarks/http_path.py --rounds 5 --port 19100
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import urlencode

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import running_cloud, token  # noqa: E402
from _load import Connection  # noqa: E402
from boot import cloud_env, ensure_image  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SERVERS = "/compute/v2.1/servers"
TICK = os.sysconf("SC_CLK_TCK")
# What httpx sends with boot.py's client, so uvicorn parses as many headers.
CLIENT_HEADERS = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate",
                  "Connection": "keep-alive", "User-Agent": f"python-httpx/{httpx.__version__}",
                  "OpenStack-API-Version": "compute 2.37"}


def cpu_seconds(pid: int) -> float:
    """utime + stime of process ``pid`` (every thread), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Phase:
    """Runs requests over a few connections; measures the server's CPU."""

    def __init__(self, url: str, headers: dict[str, str], pid: int, conns: int) -> None:
        self.url, self.headers, self.pid, self.conns = url, headers, pid, conns

    async def measure(self, requests: list[tuple[str, str, bytes | None]], expect: int,
                      settle: Callable[[Connection], Awaitable[bool]] | None = None
                      ) -> tuple[float, list[bytes]]:
        """(server CPU µs per request, bodies) for ``requests`` sent over the
        connections; then, if given, ``settle`` polled until it is true."""
        conns = [await Connection(self.url, self.headers).open() for _ in range(self.conns)]
        bodies: list[bytes] = []
        todo = iter(requests)

        async def client(conn: Connection) -> None:
            for method, path, body in todo:
                status, got = await conn.request(method, path, body)
                if status != expect:
                    raise RuntimeError(f"{method} {path}: {status} {got[:300]!r}")
                bodies.append(got)
        try:
            before = cpu_seconds(self.pid)
            await asyncio.gather(*(client(c) for c in conns))
            while settle is not None and not await settle(conns[0]):
                await asyncio.sleep(0.02)
            used = cpu_seconds(self.pid) - before
        finally:
            for conn in conns:
                await conn.close()
        return used / len(requests) * 1e6, bodies


async def _listing_empty(conn: Connection, query: str) -> bool:
    status, body = await conn.get(f"{SERVERS}?{query}")
    return status == 200 and not json.loads(body)["servers"]


async def one_round(phase: Phase, image: str, n: int, requests: int) -> dict[str, float]:
    """µs of server CPU per request of each route, for one round."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 2))
    out: dict[str, float] = {}
    creates = [("POST", SERVERS, json.dumps({"server": {
        "name": f"http-{i}", "imageRef": image, "flavorRef": "1", "networks": "auto"}}).encode())
        for i in range(n)]
    out["create"], bodies = await phase.measure(
        creates, 202, lambda c: _listing_empty(c, "status=BUILD&limit=1"))
    ids = [json.loads(b)["server"]["id"] for b in bodies]
    polls = [("GET", f"{SERVERS}?" + urlencode({"limit": 1000, "status": status,
                                                "changes-since": since}), None)
             for _ in range(requests // 2) for status in ("ACTIVE", "ERROR")]
    out["poll"], _ = await phase.measure(polls, 200)
    out["show"], _ = await phase.measure(
        [("GET", f"{SERVERS}/{ids[i % n]}", None) for i in range(requests * 2)], 200)
    out["detail"], _ = await phase.measure(
        [("GET", f"{SERVERS}/detail", None)] * max(1, requests // 20), 200)
    out["delete"], _ = await phase.measure(
        [("DELETE", f"{SERVERS}/{i}", None) for i in ids], 204,
        lambda c: _listing_empty(c, "limit=1"))
    return out


async def run(url: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    headers = {**CLIENT_HEADERS, "X-Auth-Token": token(url)}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        image = await ensure_image(client)
    phase = Phase(url, headers, pid, args.c)
    idle0 = cpu_seconds(pid)
    await asyncio.sleep(2.0)
    idle_percent = (cpu_seconds(pid) - idle0) / 2.0 * 100
    rounds = []
    for r in range(args.rounds):
        rounds.append(await one_round(phase, image, args.n, args.requests))
        print(f"round {r + 1}: " + "  ".join(f"{k} {v:.0f}" for k, v in rounds[-1].items()),
              flush=True)
    # The idle cloud's own CPU (heartbeats, periodic tasks) is in every phase.
    result: dict[str, Any] = {"n": args.n, "requests": args.requests, "connections": args.c,
                              "idle_cpu_percent": round(idle_percent, 1)}
    for route in rounds[0]:
        values = [r[route] for r in rounds]
        result[route] = {"cpu_us_median": round(statistics.median(values), 1),
                         "cpu_us_min": round(min(values), 1), "cpu_us_max": round(max(values), 1),
                         "rounds": [round(v, 1) for v in values]}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running cloud (admin/admin); needs --pid")
    parser.add_argument("--pid", type=int, help="the process of --url's cloud")
    parser.add_argument("--port", type=int, help="for the cloud started here (default: free)")
    parser.add_argument("--k", type=int, default=10, help="compute hosts of the cloud started")
    parser.add_argument("--n", type=int, default=300, help="servers created per round")
    parser.add_argument("--c", type=int, default=10, help="connections")
    parser.add_argument("--requests", type=int, default=1000,
                        help="polls per round (twice as many shows, 1/20 as many details)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--short", action="store_true", help="CI smoke: N=10, 1 round")
    args = parser.parse_args()
    if args.short:
        args.n, args.requests, args.rounds, args.k, args.c = 10, 100, 1, 2, 4
    if args.url:
        if not args.pid:
            parser.error("--url needs --pid (the CPU measured is that process's)")
        result = asyncio.run(run(args.url, args.pid, args))
    else:
        with running_cloud(args.k, cloud_env(args.n * args.rounds, args.k),
                           port=args.port) as (url, proc):
            result = asyncio.run(run(url, proc.pid, args))
    print(f"server CPU per request, µs (median [min–max] of {args.rounds} rounds; "
          f"idle cloud {result['idle_cpu_percent']} % of a core):")
    for route in ("create", "poll", "show", "detail", "delete"):
        r = result[route]
        print(f"  {route:8s} {r['cpu_us_median']:8.0f}  [{r['cpu_us_min']:.0f}–{r['cpu_us_max']:.0f}]")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"http_path{'-short' if args.short else ''}.json").write_text(
        json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
