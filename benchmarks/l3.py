"""L3 agent benchmark: floating IP associate → reachable, and what a sync costs.

Builds the host test's world (``tests/host``: a host namespace with a tenant
and an external bridge, a guest behind a router, an "outside" namespace on
the external bridge), then per round associates a new floating IP with the
guest (``L3Agent.sync``) and pings it from the outside until it answers.
Also times a sync with unchanged specs (cached: no command at all) and one by
a freshly started agent (reads the namespace, changes nothing). Needs root;
writes benchmarks/results/l3.json.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Awaitable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from cirrus.config import Settings  # noqa: E402
from cirrus.network.l3.agent import L3Agent  # noqa: E402
from cirrus.network.l3.spec import (FloatingIP, Gateway, RouterPort, RouterSpec,  # noqa: E402
                                    namespace_name)
from tests.host.netns import Guest, Namespaces, sh, why_not  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
GUEST_IP = "10.91.0.10"


def spec(router_id: str, floating: str | None) -> RouterSpec:
    inside = RouterPort("a" + router_id[1:], "net", "fa:16:3e:00:02:01", ("10.91.0.1/24",), "brqt")
    gateway = RouterPort("b" + router_id[1:], "ext", "fa:16:3e:00:02:02", ("198.51.100.2/24",),
                         "brqx")
    fips = (FloatingIP(floating, GUEST_IP),) if floating else ()
    return RouterSpec(router_id, interfaces=(inside,),
                      gateway=Gateway(gateway, ("198.51.100.1",)), floating_ips=fips)


async def answered(ns: str, address: str) -> bool:
    done = await sh("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "0.2", address,
                    check=False)
    return done.returncode == 0


async def timed(what: Awaitable[None]) -> float:
    start = time.perf_counter()
    await what
    return (time.perf_counter() - start) * 1000


async def run(rounds: int, state: Path) -> dict[str, object]:
    spaces, router_id = Namespaces(), str(uuid.uuid4())
    try:
        host = spaces.create("host")
        for bridge in ("brqt", "brqx"):
            await sh("ip", "-n", host, "link", "add", bridge, "type", "bridge")
            await sh("ip", "-n", host, "link", "set", bridge, "up")
        guest = Guest(spaces.create("guest"), host, "tapguest", "fa:16:3e:00:02:10")
        await guest.plug("brqt")
        await guest.configure(GUEST_IP, 24)
        await sh("ip", "-n", guest.ns, "route", "add", "default", "via", "10.91.0.1")
        outside = Guest(spaces.create("out"), host, "tapout", "fa:16:3e:00:02:11")
        await outside.plug("brqx")
        await outside.configure("198.51.100.1", 24)
        settings = Settings(state_dir=state, host_netns=host)
        agent = L3Agent(settings)
        create_ms = await timed(agent.sync([spec(router_id, None)]))
        reach, sync_ms = [], []
        for n in range(rounds):
            floating = f"198.51.100.{10 + n % 200}"
            start = time.perf_counter()
            await agent.sync([spec(router_id, floating)])
            sync_ms.append((time.perf_counter() - start) * 1000)
            while not await answered(outside.ns, floating):
                if time.perf_counter() - start > 10:
                    raise RuntimeError(f"{floating} never answered")
            reach.append((time.perf_counter() - start) * 1000)
        last = spec(router_id, f"198.51.100.{10 + (rounds - 1) % 200}")
        cached = [await timed(agent.sync([last])) for _ in range(20)]
        fresh = [await timed(L3Agent(settings).sync([last])) for _ in range(5)]
        return {"rounds": rounds, "router_create_ms": round(create_ms, 1),
                "associate_sync_ms_median": round(statistics.median(sync_ms), 1),
                "associate_to_reachable_ms_median": round(statistics.median(reach), 1),
                "associate_to_reachable_ms_max": round(max(reach), 1),
                "unchanged_sync_ms_median": round(statistics.median(cached), 3),
                "restarted_agent_sync_ms_median": round(statistics.median(fresh), 1)}
    finally:
        await sh("ip", "netns", "del", namespace_name(router_id), check=False)
        spaces.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    reason = why_not()
    if reason is not None:
        print(f"skipped: {reason}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as state:
        result = asyncio.run(run(args.rounds, Path(state)))
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "l3.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
