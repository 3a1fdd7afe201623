"""boot.py's ``wait_active`` against a fake cloud that commits a change late.

A save's ``updated_at`` is taken when it runs; the change is visible only at
its commit. Committed after the poll that set the next ``changes-since`` past
it, a server's ACTIVE is never listed by a ``changes-since`` poll: the
benchmark waited out its whole timeout for a server that was ACTIVE all along.
The fake forces that interleaving; no sleep decides the outcome.
"""
from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import boot  # noqa: E402

SERVERS = boot.SERVERS


def _parse(since: str) -> float:
    return datetime.datetime.strptime(since, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


class LateCommitCloud:
    """Servers with a status and an ``updated_at`` (wall time). One server's
    ACTIVE is saved before the first poll but committed only after that poll
    has listed: its ``updated_at`` is older than every later ``changes-since``."""

    def __init__(self, prompt: list[str], late: str) -> None:
        self.updated = time.time() - 10  # saved long before any poll's overlap
        self.status = {uuid: "ACTIVE" for uuid in prompt}
        self.status[late] = "BUILD"  # until its commit
        self.late = late
        self.lists = 0
        self.gets: list[str] = []

    async def call(self, method: str, path: str, obj: Any = None,
                   params: dict[str, Any] | None = None) -> tuple[int, Any]:
        assert method == "GET"
        if path == SERVERS:
            return 200, self._list(params or {})
        uuid = path.rsplit("/", 1)[1]
        self.gets.append(uuid)
        return 200, {"server": {"id": uuid, "status": self.status[uuid]}}

    def _list(self, params: dict[str, Any]) -> dict[str, Any]:
        since = params.get("changes-since")
        listed = [{"id": uuid} for uuid, status in self.status.items()
                  if status == params["status"]
                  and (since is None or self.updated >= _parse(since))]
        self.lists += 1
        if self.lists == 2:  # the first poll (ACTIVE, then ERROR) is over
            self.status[self.late] = "ACTIVE"  # the commit
        return {"servers": listed}


async def test_a_change_committed_behind_changes_since_is_still_seen() -> None:
    cloud = LateCommitCloud(prompt=["a", "b"], late="late")
    posted = {uuid: time.perf_counter() - 60 for uuid in ("a", "b", "late")}
    # Without the straggler reads this waits out the timeout and misses "late".
    done, errors = await boot.wait_active(cloud, posted, timeout=60)  # type: ignore[arg-type]
    assert sorted(done) == ["a", "b", "late"] and errors == 0
    assert "late" in cloud.gets


async def test_stragglers_are_read_oldest_first_and_a_few_at_a_time() -> None:
    cloud = LateCommitCloud(prompt=[], late="x")
    cloud.status = {f"s{n:02d}": "BUILD" for n in range(boot.STRAGGLER_READS + 5)}
    now = time.perf_counter()
    posted = {uuid: now - 100 + n for n, uuid in enumerate(sorted(cloud.status))}
    posted["fresh"] = now + 60  # POSTed just now: not a straggler yet
    cloud.status["fresh"] = "BUILD"
    seen: dict[str, tuple[float, bool]] = {}
    await boot._read_stragglers(cloud, posted, seen)  # type: ignore[arg-type]
    assert cloud.gets == sorted(posted, key=posted.__getitem__)[:boot.STRAGGLER_READS]
    assert seen == {}  # still building: nothing is taken for finished


async def test_a_straggler_in_error_counts_as_an_error() -> None:
    cloud = LateCommitCloud(prompt=[], late="x")
    cloud.status = {"failed": "ERROR", "building": "BUILD"}
    posted = {"failed": time.perf_counter() - 60, "building": time.perf_counter() - 60}
    seen: dict[str, tuple[float, bool]] = {}
    await boot._read_stragglers(cloud, posted, seen)  # type: ignore[arg-type]
    assert list(seen) == ["failed"] and seen["failed"][1] is True


async def test_servers_that_never_finish_are_reported_with_their_state(capsys: Any) -> None:
    cloud = LateCommitCloud(prompt=[], late="x")
    cloud.status = {f"s{n}": "BUILD" for n in range(12)}
    await boot.report_unfinished(cloud, sorted(cloud.status), most=3)  # type: ignore[arg-type]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split()[1] for line in lines] == ["s0", "s1", "s10"]
    assert all("status=BUILD" in line for line in lines)
