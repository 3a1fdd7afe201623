"""One fuzz campaign: a world, Hypothesis driving batches of cases into it.

The test and ``scripts/fuzz`` both call :func:`run`; its knobs come from the
environment so that the longer campaign is the same code as CI's:

* ``CIRRUS_FUZZ_EXAMPLES`` – examples (batches of requests) to run;
* ``CIRRUS_FUZZ_SEED`` – Hypothesis seed (unset: derandomized, CI's fixed run);
* ``CIRRUS_FUZZ_RECORD=1`` – record every distinct failure instead of stopping;
* ``CIRRUS_FUZZ_REPORT`` – where record mode writes its findings;
* ``CIRRUS_FUZZ_BATCH`` – most requests in one example (listings checked after);
* ``CIRRUS_FUZZ_RESET`` – a fresh world every so many examples;
* ``CIRRUS_FUZZ_SLOW`` – CPU seconds a request may take;
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, example, given, seed, settings

from tests.databases import SQLiteDatabases
from tests.fuzz.known import KNOWN
from tests.fuzz.routes import read_targets, write_targets
from tests.fuzz.runner import Finding, Fuzzer
from tests.fuzz.strategies import batches
from tests.fuzz.world import World

CI_EXAMPLES = 800


@dataclass(frozen=True)
class Options:
    examples: int = CI_EXAMPLES
    seed: int | None = None
    record: bool = False
    report: Path | None = None
    batch: int = 8
    reset_every: int = 150
    slow: float = 2.0

    @classmethod
    def from_env(cls) -> Options:
        env = os.environ
        return cls(examples=int(env.get("CIRRUS_FUZZ_EXAMPLES", CI_EXAMPLES)),
                   seed=int(env["CIRRUS_FUZZ_SEED"]) if env.get("CIRRUS_FUZZ_SEED") else None,
                   record=env.get("CIRRUS_FUZZ_RECORD", "") == "1",
                   report=Path(env["CIRRUS_FUZZ_REPORT"]) if env.get("CIRRUS_FUZZ_REPORT") else None,
                   batch=int(env.get("CIRRUS_FUZZ_BATCH", 8)),
                   reset_every=int(env.get("CIRRUS_FUZZ_RESET", 150)),
                   slow=float(env.get("CIRRUS_FUZZ_SLOW", 2.0)))


def run(root: Path, options: Options, on_new: Callable[[Finding], None] | None = None) -> Fuzzer:
    """Run a campaign in directories under ``root``; the fuzzer, with its
    findings and stats. Raises AssertionError at the first failure unless
    ``options.record`` (then ``on_new`` hears of each new distinct failure)."""
    databases = SQLiteDatabases(_mkdir(root / "template"))
    loop = asyncio.new_event_loop()
    world = World(root / "worlds", databases)
    fuzzer = Fuzzer(world, record=options.record, slow=options.slow,
                    reset_every=options.reset_every, on_new=on_new)
    phases = [Phase.explicit, Phase.generate] + ([] if options.record else [Phase.shrink])

    @settings(max_examples=options.examples, database=None, deadline=None,
              derandomize=options.seed is None, phases=phases, print_blob=False,
              suppress_health_check=list(HealthCheck))
    @given(batches(write_targets(), read_targets(), options.batch))
    def campaign(batch: list) -> None:
        loop.run_until_complete(fuzzer.example(batch))

    for batch in KNOWN:  # the requests issue #18 reports, first
        campaign = example(batch)(campaign)

    if options.seed is not None:
        campaign = seed(options.seed)(campaign)
    try:
        loop.run_until_complete(world.start())
        campaign()
        loop.run_until_complete(fuzzer.final_check())
    finally:
        try:
            loop.run_until_complete(world.stop())
        finally:
            world.close()
            loop.close()
            databases.close()
    if options.report is not None:
        fuzzer.findings.write(options.report)
    return fuzzer


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def examples_as_sent(root: Path) -> list[tuple[str, int, str]]:
    """Every valid example of bodies.py sent once, unmutated, as its usual
    persona, each on the world it was written for: (route, status, answer)."""
    from tests.fuzz.bodies import BODIES
    from tests.fuzz.routes import write_targets
    from tests.fuzz.strategies import FRESH, SEED, Case

    databases = SQLiteDatabases(_mkdir(root / "template"))
    loop = asyncio.new_event_loop()
    world = World(root / "worlds", databases)
    fuzzer = Fuzzer(world, record=True)
    out = []

    async def send_all() -> None:
        await world.start()
        # Deletes last: the seeds they may take away are the others' targets.
        order = {"POST": 0, "PUT": 1, "PATCH": 2, "DELETE": 3}
        for target in sorted(write_targets(), key=lambda t: (order[t.method], t.path)):
            for example in BODIES.get(target.key, ()):
                params = tuple((p, example.params.get(p) or (
                    FRESH if target.method == "DELETE" and p == target.params[-1] else SEED))
                    for p in target.params)
                case = Case(target, example.persona, params,
                            example.body, example.content_type,
                            tuple(example.headers.items()), example.query, ())
                sent = await fuzzer.send(case)
                assert sent is not None, (str(target), world_errors(fuzzer))
                out.append((str(target), sent.status, sent.response[:300]))
    try:
        loop.run_until_complete(send_all())
    finally:
        try:
            loop.run_until_complete(world.stop())
        finally:
            world.close()
            loop.close()
            databases.close()
    return out


def world_errors(fuzzer: Fuzzer) -> list[str]:
    return fuzzer.stats.setup_errors[-3:]
