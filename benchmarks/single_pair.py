"""Single boot POST→ACTIVE of two trees measured side by side: both clouds run at
once and boot one server each in turn (the order swapped every round), so a
busy machine slows both alike — the fair pair a shared machine gives.

Each boot is polled with GET /servers/{id} every 2 ms and deleted before the
next, as ``boot.py``'s single boots; 5 warm-up boots per cloud go first.

    python benchmarks/single_pair.py --mode pg A=/work/wt-x B=/work/main
    python benchmarks/single_pair.py --mode procs --boots 30 A=/work/wt-x B=/work/main
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import boot as B  # noqa: E402
from _cloud import fresh_database, running_cloud, running_deployment, token  # noqa: E402

WARM_UP = 5


async def _client(url: str) -> tuple[B.Lean, str]:
    headers = {"X-Auth-Token": token(url), "OpenStack-API-Version": "compute 2.37"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
        image = await B.ensure_image(client)
    return await B.Lean(url, headers).open(), image


async def _one(api: B.Lean, image: str, name: str) -> float:
    """POST→ACTIVE of one server (ms), then its delete waited for."""
    start = time.perf_counter()
    _, body = await api.call("POST", B.SERVERS, B._server_body(name, image, "auto"))
    server_id = body["server"]["id"]
    while (await api.call("GET", f"{B.SERVERS}/{server_id}"))[1]["server"]["status"] \
            not in ("ACTIVE", "ERROR"):
        await asyncio.sleep(0.002)
    took = (time.perf_counter() - start) * 1000
    await api.call("DELETE", f"{B.SERVERS}/{server_id}")
    while (await api.call("GET", f"{B.SERVERS}/{server_id}"))[0] != 404:
        await asyncio.sleep(0.01)
    return took


async def _alternate(urls: dict[str, str], boots: int) -> dict[str, list[float]]:
    clients = {name: await _client(url) for name, url in urls.items()}
    for name, (api, image) in clients.items():
        for i in range(WARM_UP):
            await _one(api, image, f"warm-{i}")
    times: dict[str, list[float]] = {name: [] for name in urls}
    names = list(urls)
    for i in range(boots):
        for name in (names if i % 2 == 0 else names[::-1]):
            api, image = clients[name]
            times[name].append(await _one(api, image, f"single-{i}"))
            await asyncio.sleep(0.03)
    for api, _ in clients.values():
        await api.close()
    return times


def _start(stack: contextlib.ExitStack, mode: str, tree: str) -> str:
    env: dict[str, Any] = {**B.cloud_env(100, 3), "PYTHONPATH": tree}
    os.environ["PYTHONPATH"] = tree  # running_deployment's `db upgrade` reads os.environ
    if mode == "procs":
        url, _ = stack.enter_context(running_deployment(3, 2, env))
        return str(url)
    if mode == "pg":
        env["CIRRUS_DATABASE_URL"] = stack.enter_context(fresh_database())
    url, _ = stack.enter_context(running_cloud(3, env))
    return str(url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("sqlite", "pg", "procs"), default="pg",
                        help="all-in-one on SQLite or PostgreSQL, or processes on RabbitMQ + PG")
    parser.add_argument("--boots", type=int, default=20, help="single boots per tree")
    parser.add_argument("trees", nargs=2, help="NAME=PATH of each tree")
    args = parser.parse_args()
    trees = dict(t.split("=", 1) for t in args.trees)
    with contextlib.ExitStack() as stack:
        urls = {name: _start(stack, args.mode, path) for name, path in trees.items()}
        load = os.getloadavg()[0]
        times = asyncio.run(_alternate(urls, args.boots))
    for name, values in times.items():
        values.sort()
        print(f"{args.mode} {name}: single boot p50 {statistics.median(values):.1f} "
              f"min {values[0]:.1f} p90 {values[int(len(values) * 0.9)]:.1f} ms "
              f"(n={len(values)}, load {load:.1f}–{os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
