"""Block storage benchmark: the volume cycle through compute, and boot from volume.

Against a ``cirrus up`` with the fake compute driver and the file volume
backend (started here unless ``--url``), two measurements:

1. ``--clients`` concurrent clients, each with its own ACTIVE server, run
   ``--cycles`` cycles in all of::

       POST   /volumes (1 GiB, empty)                      → available
       POST   /servers/{id}/os-volume_attachments          → the volume in-use
       DELETE /servers/{id}/os-volume_attachments/{vol}    → the volume available
       DELETE /volumes/{id}

   (attach and detach are timed until the volume's status says they are done:
   the host's export, plug and ``attachment_complete``), and print cycles per
   second with p50/p99 of a cycle and of each step.
2. ``--boots`` servers booted from a new volume made from an image
   (``block_device_mapping_v2`` image → volume, boot_index 0), ``--boot-clients``
   at a time: POST→ACTIVE p50/p99 and boots per second.

    python benchmarks/volumes.py                            # 200 cycles, 4 clients; 200 boots, 10 at a time
    python benchmarks/volumes.py --cycles 1000 --clients 8 --format qcow2
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cloud import percentile, running_cloud, token  # noqa: E402
from boot import cloud_env, ensure_image  # noqa: E402

SERVERS = "/compute/v2.1/servers"
POLL = 0.005  # seconds between status reads: well below a step's time


async def _json(resp: httpx.Response, what: str) -> Any:
    if resp.status_code >= 300:
        raise RuntimeError(f"{what}: {resp.status_code} {resp.text[:200]}")
    return resp.json() if resp.content else None


async def _until(client: httpx.AsyncClient, url: str, key: str, status: str,
                 timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        body = await _json(await client.get(url), f"GET {url}")
        if body[key]["status"] == status:
            return
        if body[key]["status"] in ("error", "ERROR") or time.monotonic() > deadline:
            raise RuntimeError(f"{url} is {body[key]['status']}, not {status}")
        await asyncio.sleep(POLL)


async def cycle(client: httpx.AsyncClient, base: str, server: str,
                steps: dict[str, list[float]]) -> None:
    """One create → attach → detach → delete of a volume on ``server``."""
    async def timed(name: str, call: Any) -> Any:
        start = time.perf_counter()
        result = await call
        steps[name].append(time.perf_counter() - start)
        return result

    async def attach(volume_id: str) -> None:
        await _json(await client.post(f"{SERVERS}/{server}/os-volume_attachments", json={
            "volumeAttachment": {"volumeId": volume_id}}), "attach")
        await _until(client, f"{base}/volumes/{volume_id}", "volume", "in-use")

    async def detach(volume_id: str) -> None:
        await _json(await client.delete(f"{SERVERS}/{server}/os-volume_attachments/{volume_id}"),
                    "detach")
        await _until(client, f"{base}/volumes/{volume_id}", "volume", "available")

    made = await timed("create", client.post(f"{base}/volumes", json={"volume": {"size": 1}}))
    volume = (await _json(made, "create"))["volume"]
    if volume["status"] != "available":
        raise RuntimeError(f"volume {volume['id']} is {volume['status']}")
    await timed("attach", attach(volume["id"]))
    await timed("detach", detach(volume["id"]))
    await _json(await timed("delete", client.delete(f"{base}/volumes/{volume['id']}")), "delete")


async def _server(client: httpx.AsyncClient, image: str, name: str) -> str:
    body = {"server": {"name": name, "imageRef": image, "flavorRef": "1", "networks": "none"}}
    server = (await _json(await client.post(SERVERS, json=body), "boot"))["server"]["id"]
    await _until(client, f"{SERVERS}/{server}", "server", "ACTIVE")
    return str(server)


async def volume_cycles(client: httpx.AsyncClient, base: str, image: str, cycles: int,
                        clients: int) -> dict[str, Any]:
    servers = await asyncio.gather(*(_server(client, image, f"vol-bench-{i}")
                                     for i in range(clients)))
    steps: dict[str, list[float]] = defaultdict(list)
    totals: list[float] = []
    todo = iter(range(cycles))

    async def worker(server: str) -> None:
        for _ in todo:
            start = time.perf_counter()
            await cycle(client, base, server, steps)
            totals.append(time.perf_counter() - start)
    start = time.perf_counter()
    await asyncio.gather(*(worker(s) for s in servers))
    elapsed = time.perf_counter() - start
    return {"cycles": cycles, "clients": clients, "seconds": elapsed,
            "per_s": cycles / elapsed, "cycle": totals, "steps": steps, "servers": servers}


async def boots_from_volume(client: httpx.AsyncClient, image: str, boots: int,
                            clients: int) -> dict[str, Any]:
    """POST→ACTIVE of servers whose root is a new volume made from ``image``."""
    latencies: list[float] = []
    made: list[str] = []
    todo = iter(range(boots))

    async def worker() -> None:
        for i in todo:
            body = {"server": {"name": f"bfv-{i}", "flavorRef": "1", "networks": "none",
                               "block_device_mapping_v2": [{
                                   "boot_index": 0, "uuid": image, "source_type": "image",
                                   "destination_type": "volume", "volume_size": 1,
                                   "delete_on_termination": True}]}}
            start = time.perf_counter()
            server = (await _json(await client.post(SERVERS, json=body), "boot"))["server"]["id"]
            await _until(client, f"{SERVERS}/{server}", "server", "ACTIVE")
            latencies.append(time.perf_counter() - start)
            made.append(server)
    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    elapsed = time.perf_counter() - start
    return {"boots": boots, "clients": clients, "seconds": elapsed, "per_s": boots / elapsed,
            "latency": latencies, "servers": made}


async def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=120,
                                 headers={"X-Auth-Token": token(url, "demo", "demo"),
                                          "OpenStack-API-Version": "compute 2.37"}) as client:
        catalog = (await client.get("/identity/v3/auth/catalog")).json()["catalog"]
        endpoint = next(s for s in catalog if s["type"] == "block-storage")["endpoints"][0]["url"]
        base = "/volume" + endpoint.split("/volume", 1)[1]
        # Room for the run's volumes (admin): demo's defaults allow 10.
        quota = await client.put(f"{base}/os-quota-sets/{base.rsplit('/', 1)[1]}", headers={
            "X-Auth-Token": token(url)}, json={"quota_set": {"volumes": -1, "gigabytes": -1}})
        await _json(quota, "quota")
        async with httpx.AsyncClient(base_url=url, timeout=120,
                                     headers={"X-Auth-Token": token(url)}) as admin:
            image = await ensure_image(admin)  # public: only an admin makes one
        result = {"cycles": await volume_cycles(client, base, image, args.cycles, args.clients)}
        if args.boots:
            result["bfv"] = await boots_from_volume(client, image, args.boots, args.boot_clients)
    return result


def _line(name: str, values: list[float]) -> str:
    return (f"  {name:<10} p50 {percentile(values, 50) * 1000:7.1f} ms   "
            f"p99 {percentile(values, 99) * 1000:7.1f} ms")


def report(result: dict[str, Any]) -> None:
    c = result["cycles"]
    print(f"volume create+attach+detach+delete: {c['cycles']} cycles, {c['clients']} clients, "
          f"{c['seconds']:.1f} s: {c['per_s']:.1f} cycles/s")
    print(_line("cycle", c["cycle"]))
    for name, values in c["steps"].items():
        print(_line(name, values))
    if "bfv" in result:
        b = result["bfv"]
        print(f"boot from volume (image → new volume): {b['boots']} boots, {b['clients']} at "
              f"a time, {b['seconds']:.1f} s: {b['per_s']:.1f} boots/s")
        print(_line("POST→ACTIVE", b["latency"]))


@contextlib.contextmanager
def cloud(args: argparse.Namespace) -> Iterator[str]:
    if args.url:
        yield args.url
        return
    env = {**cloud_env(args.boots + args.clients, 1), "CIRRUS_VOLUME_FORMAT": args.format}
    with running_cloud(1, env=env, extra=("--driver", "fake")) as (url, _proc):
        yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="an existing cloud (default: start cirrus up)")
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--boots", type=int, default=200, help="0: no boot-from-volume run")
    parser.add_argument("--boot-clients", type=int, default=10)
    parser.add_argument("--format", choices=("raw", "qcow2"), default="raw")
    args = parser.parse_args()
    with cloud(args) as url:
        report(asyncio.run(run(url, args)))


if __name__ == "__main__":
    main()
