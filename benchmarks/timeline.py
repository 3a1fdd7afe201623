"""What the boot timeline costs a boot, in the process that builds it.

A build times its five steps (claim, network allocation, block devices,
spawn, the vif-plugged wait), then its last unit closes the build event with
the steps stored on it (``close_build_event``). This runs that part of a build
for ``--n`` boots on SQLite, ten closings per transaction as a group commit
gathers them, twice, alternating: with the five steps and with none (the
build event alone). The difference is the timeline's CPU per boot; compare it
with ``cpu_ms_per_boot`` of ``benchmarks/boot.py`` (~1.8 ms all-in-one).

    python benchmarks/timeline.py            # --n 3000 --rounds 5
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

import sqlalchemy as sa

import cirrus.compute.models  # noqa: F401 - the tables, on the metadata
from cirrus.compute import instance_actions
from cirrus.compute.build import BUILD_EVENT
from cirrus.compute.build_failure import BuildClosing, Started, close_build_event
from cirrus.compute.timeline import BootTimeline
from cirrus.context import RequestContext
from cirrus.db.base import metadata
from cirrus.db.engine import make_engine
from cirrus.observe import BootStep

STEPS = [BootStep.CLAIM, BootStep.NETWORK, BootStep.BLOCK_DEVICES, BootStep.SPAWN,
         BootStep.VIF_PLUGGED]
GROUP = 10  # closings per transaction


def open_builds(conn: sa.Connection, n: int) -> list[tuple[str, int | None]]:
    """``n`` create actions, each with its build event open."""
    builds = []
    with conn.begin():
        for _ in range(n):
            ctx, uuid_ = RequestContext(user_id="u", project_id="p"), str(uuid.uuid4())
            instance_actions.action_start(conn, ctx, uuid_, "create")
            builds.append((uuid_, instance_actions.event_start(conn, ctx, uuid_, BUILD_EVENT,
                                                               host="h")))
    return builds


def close(conn: sa.Connection, builds: list[tuple[str, int | None]], steps: bool) -> float:
    """CPU seconds per build of timing its steps (or none) and closing it."""
    started_at = time.process_time()
    for first in range(0, len(builds), GROUP):
        with conn.begin():
            for uuid_, event_id in builds[first:first + GROUP]:
                timeline = BootTimeline()
                for step in STEPS if steps else ():
                    with timeline.step(step):
                        pass
                started = Started({"uuid": uuid_}, event_id=event_id, timeline=timeline)
                close_build_event(conn, BuildClosing.of(started), "h")
    return (time.process_time() - started_at) / len(builds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="boots per measurement")
    parser.add_argument("--rounds", type=int, default=5, help="alternating pairs")
    args = parser.parse_args()
    engine = make_engine(f"sqlite:///{tempfile.mkdtemp(prefix='cirrus-timeline-')}/bench.db")
    metadata.create_all(engine)
    with engine.connect() as conn:
        # Actions of no instance: the rows the closings update, without instances.
        conn.connection.dbapi_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore
        with_steps, without = [], []
        for _ in range(args.rounds):
            with_steps.append(close(conn, open_builds(conn, args.n), steps=True))
            without.append(close(conn, open_builds(conn, args.n), steps=False))
    cost = [a - b for a, b in zip(with_steps, without)]
    print(f"{'boots per measurement':34} {args.n}")
    print(f"{'close, five steps (us/boot)':34} {statistics.median(with_steps) * 1e6:.1f}")
    print(f"{'close, no steps (us/boot)':34} {statistics.median(without) * 1e6:.1f}")
    print(f"{'timeline cost, median (us/boot)':34} {statistics.median(cost) * 1e6:.1f}")


if __name__ == "__main__":
    main()
