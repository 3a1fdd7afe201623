"""Block storage benchmark: the volume cycle Nova drives, on the file backend.

Against a ``cirrus up`` (started here unless ``--url``), ``--clients``
concurrent clients each run cycles of:

    POST /volumes (1 GiB, empty)          → available
    POST /attachments (3.44)              → reserved
    PUT  /attachments/{id} (connector)    → attaching, connection info
    POST /attachments/{id}/action complete → in-use
    DELETE /attachments/{id}              → available
    DELETE /volumes/{id}

and prints cycles per second with p50/p99 of one cycle and of each step.

    python benchmarks/volumes.py                  # 200 cycles, 4 clients
    python benchmarks/volumes.py --cycles 1000 --clients 8 --format qcow2
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import percentile, running_cloud, token  # noqa: E402

HEADERS = {"OpenStack-API-Version": "volume 3.44"}
CONNECTOR = {"host": "bench-host", "ip": "127.0.0.1", "initiator": "iqn.bench"}


async def cycle(client: httpx.AsyncClient, base: str, steps: dict[str, list[float]]) -> None:
    async def step(name: str, method: str, path: str, **kw: Any) -> Any:
        start = time.perf_counter()
        resp = await client.request(method, base + path, headers=HEADERS, **kw)
        steps[name].append(time.perf_counter() - start)
        if resp.status_code >= 300:
            raise RuntimeError(f"{name}: {resp.status_code} {resp.text[:200]}")
        return resp.json() if resp.content else None

    vol = (await step("create", "POST", "/volumes", json={"volume": {"size": 1}}))["volume"]
    if vol["status"] != "available":
        raise RuntimeError(f"volume {vol['id']} is {vol['status']}")
    att = (await step("attachment_create", "POST", "/attachments", json={"attachment": {
        "volume_uuid": vol["id"], "instance_uuid": str(uuid.uuid4())}}))["attachment"]
    await step("attachment_update", "PUT", f"/attachments/{att['id']}",
               json={"attachment": {"connector": CONNECTOR}})
    await step("attachment_complete", "POST", f"/attachments/{att['id']}/action",
               json={"os-complete": None})
    await step("attachment_delete", "DELETE", f"/attachments/{att['id']}")
    await step("delete", "DELETE", f"/volumes/{vol['id']}")


async def run(url: str, cycles: int, clients: int) -> dict[str, Any]:
    tok = token(url, "demo", "demo")
    async with httpx.AsyncClient(headers={"X-Auth-Token": tok}, timeout=120) as client:
        catalog = (await client.get(f"{url}/identity/v3/auth/catalog")).json()["catalog"]
        base = next(s for s in catalog if s["type"] == "block-storage")["endpoints"][0]["url"]
        # Room for the run's volumes (admin): demo's defaults allow 10.
        admin = token(url)
        project = base.rsplit("/", 1)[1]
        quota = await client.put(f"{base}/os-quota-sets/{project}", headers={
            "X-Auth-Token": admin}, json={"quota_set": {"volumes": -1, "gigabytes": -1}})
        quota.raise_for_status()
        steps: dict[str, list[float]] = defaultdict(list)
        totals: list[float] = []
        todo = iter(range(cycles))

        async def worker() -> None:
            for _ in todo:
                start = time.perf_counter()
                await cycle(client, base, steps)
                totals.append(time.perf_counter() - start)
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - start
    return {"cycles": cycles, "clients": clients, "seconds": elapsed,
            "cycles_per_s": cycles / elapsed, "cycle": totals, "steps": steps}


def report(result: dict[str, Any]) -> None:
    ms = 1000.0
    print(f"volume cycles: {result['cycles']} with {result['clients']} clients in "
          f"{result['seconds']:.1f} s: {result['cycles_per_s']:.1f} cycles/s")
    print(f"  {'cycle':<22} p50 {percentile(result['cycle'], 50) * ms:7.1f} ms   "
          f"p99 {percentile(result['cycle'], 99) * ms:7.1f} ms")
    for name, values in result["steps"].items():
        print(f"  {name:<22} p50 {percentile(values, 50) * ms:7.1f} ms   "
              f"p99 {percentile(values, 99) * ms:7.1f} ms")


@contextlib.contextmanager
def cloud(args: argparse.Namespace) -> Iterator[str]:
    if args.url:
        yield args.url
        return
    with running_cloud(1, env={"CIRRUS_VOLUME_FORMAT": args.format}) as (url, _proc):
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an existing cloud (default: start cirrus up)")
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--format", choices=("raw", "qcow2"), default="raw")
    args = parser.parse_args()
    with cloud(args) as url:
        report(asyncio.run(run(url, args.cycles, args.clients)))


if __name__ == "__main__":
    main()
