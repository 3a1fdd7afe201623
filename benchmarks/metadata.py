"""Metadata service benchmark: requests per second from a guest-like client.

Starts ``cirrus up`` (fake computes), boots one server, then measures
cloud-init's paths (``meta_data.json``, ``network_data.json``, ``user_data``,
EC2 ``instance-id`` …) two ways, each with ``--c`` keep-alive clients for
``--duration`` seconds:

* ``proxy`` (needs root): the real host proxy (network/backends/metadata_proxy.py)
  on a bridge in a namespace of its own, the client in a "guest" namespace
  plugged into it by a veth, asking ``http://169.254.169.254`` — the path a
  guest's request takes, proxy hop and signature included;
* ``direct``: signed requests straight to the API's ``/metadata`` (what the
  proxy sends), the handler's own cost.

Prints requests/s and latency percentiles of each and writes
benchmarks/results/metadata.json.

    python benchmarks/metadata.py
    python benchmarks/metadata.py --c 16 --duration 20
"""
from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _cloud import running_cloud, token  # noqa: E402
from _load import Connection, Run  # noqa: E402
from boot import ensure_image  # noqa: E402

from cirrus.metadata.signature import shared_secret, sign  # noqa: E402
from cirrus.network.backends.metadata_proxy import METADATA_ADDRESS, MetadataProxy  # noqa: E402
from cirrus.network.linux.netns import enter  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PATHS = ["/openstack/latest/meta_data.json", "/openstack/latest/network_data.json",
         "/openstack/latest/user_data", "/openstack/latest/vendor_data2.json",
         "/latest/meta-data/instance-id", "/latest/meta-data/local-ipv4"]
HOST_NS, GUEST_NS, BRIDGE, TAP = "mdbench-host", "mdbench-guest", "brmdbench", "tapmdbench"
GATEWAY, GUEST = "10.199.0.1", "10.199.0.5"


async def boot_server(url: str) -> dict[str, Any]:
    """One ACTIVE server with user data: its id and project."""
    async with httpx.AsyncClient(base_url=url, timeout=60,
                                 headers={"X-Auth-Token": token(url)}) as c:
        image = await ensure_image(c)
        resp = await c.post("/compute/v2.1/servers", json={"server": {
            "name": "md-bench", "flavorRef": "1", "imageRef": image, "networks": "auto",
            "user_data": base64.b64encode(b"#cloud-config\n{}\n").decode()}})
        resp.raise_for_status()
        uuid = resp.json()["server"]["id"]
        for _ in range(600):
            server = (await c.get(f"/compute/v2.1/servers/{uuid}")).json()["server"]
            if server["status"] == "ACTIVE":
                return dict(server)
            await asyncio.sleep(0.1)
    raise RuntimeError("the benchmark server did not become ACTIVE")


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def make_namespaces() -> None:
    """A host namespace with a bridge and a guest namespace plugged into it."""
    for ns in (HOST_NS, GUEST_NS):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "-n", HOST_NS, "link", "add", BRIDGE, "type", "bridge")
    sh("ip", "-n", HOST_NS, "addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
    sh("ip", "-n", HOST_NS, "link", "set", BRIDGE, "up")
    sh("ip", "link", "add", TAP, "netns", HOST_NS, "type", "veth", "peer", "name", "eth0",
       "netns", GUEST_NS)
    sh("ip", "-n", HOST_NS, "link", "set", TAP, "master", BRIDGE, "up")
    sh("ip", "-n", GUEST_NS, "addr", "add", f"{GUEST}/24", "dev", "eth0")
    sh("ip", "-n", GUEST_NS, "link", "set", "eth0", "up")
    sh("ip", "-n", GUEST_NS, "route", "add", f"{METADATA_ADDRESS}/32", "via", GATEWAY)


def remove_namespaces() -> None:
    for ns in (GUEST_NS, HOST_NS):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def guest_socket() -> socket.socket:
    """A TCP socket in the guest namespace (made on a thread that enters it)."""
    made: list[socket.socket] = []

    def run() -> None:
        enter(GUEST_NS)
        made.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    made[0].setblocking(False)
    return made[0]


class GuestConnection(Connection):
    """A keep-alive connection from the guest namespace to 169.254.169.254."""

    async def open(self) -> "GuestConnection":
        sock = guest_socket()
        await asyncio.get_running_loop().sock_connect(sock, (METADATA_ADDRESS, 80))
        self._reader, self._writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
        return self


async def closed_loop(conns: list[Connection], duration: float) -> Run:
    run = Run()
    start = time.perf_counter()
    deadline = start + duration

    async def client(conn: Connection, offset: int) -> None:
        i = offset
        while time.perf_counter() < deadline:
            t = time.perf_counter()
            status, body = await conn.get(PATHS[i % len(PATHS)])
            run.latencies.append(time.perf_counter() - t)
            run.body_bytes += len(body)
            run.errors += status != 200
            i += 1
    await asyncio.gather(*(client(c, n) for n, c in enumerate(conns)))
    run.seconds = time.perf_counter() - start
    for conn in conns:
        await conn.close()
    return run


async def measure_direct(url: str, state: str, server: dict[str, Any], clients: int,
                         duration: float) -> dict[str, Any]:
    secret = shared_secret(SimpleNamespace(state_dir=state, metadata_proxy_shared_secret=""))
    headers = {"X-Instance-ID": server["id"], "X-Tenant-ID": server["tenant_id"],
               "X-Instance-ID-Signature": sign(secret, server["id"])}

    class Prefixed(Connection):
        async def get(self, path: str) -> tuple[int, bytes]:
            return await super().get("/metadata" + path)
    conns: list[Connection] = [await Prefixed(url, headers).open() for _ in range(clients)]
    return (await closed_loop(conns, duration)).summary(mode="direct", clients=clients)


async def measure_proxy(url: str, state: str, server: dict[str, Any], clients: int,
                        duration: float) -> dict[str, Any]:
    settings = SimpleNamespace(state_dir=state, metadata_proxy_shared_secret="",
                               public_url=url, metadata_url="", host_netns=HOST_NS,
                               enable_isolated_metadata=True)
    proxy = MetadataProxy(settings)
    port = {"device_id": server["id"], "device_owner": "compute:nova",
            "project_id": server["tenant_id"], "fixed_ips": [{"ip_address": GUEST}]}
    make_namespaces()
    try:
        await proxy.sync("bench", [port], BRIDGE)
        conns: list[Connection] = [await GuestConnection(url, {}).open()
                                   for _ in range(clients)]
        return (await closed_loop(conns, duration)).summary(mode="proxy", clients=clients)
    finally:
        await proxy.stop_all()
        remove_namespaces()


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory() as state:
        with running_cloud(1, state_dir=state) as (url, _proc):
            server = await boot_server(url)
            for clients in (1, args.c):
                if os.geteuid() == 0:
                    results.append(await measure_proxy(url, state, server, clients,
                                                       args.duration))
                    print(json.dumps(results[-1]), flush=True)
                results.append(await measure_direct(url, state, server, clients, args.duration))
                print(json.dumps(results[-1]), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--c", type=int, default=8, help="concurrent clients")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("not root: measuring the handler directly, without the proxy", flush=True)
    results = asyncio.run(main_async(args))
    print(f"{'mode':8} {'clients':>7} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6}")
    for r in results:
        print(f"{r['mode']:8} {r['clients']:>7} {r['requests_per_s']:>8} {r['p50_ms']:>7} "
              f"{r['p99_ms']:>7} {r['errors']:>6}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "metadata.json").write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
