"""Admission of new builds: the API holds a create back while the backlog of
instances waiting to build is deep.

Without it a burst of creates is accepted as fast as the API inserts rows,
faster than the conductor, scheduler and hosts turn them into servers, and
every server accepted waits behind the whole backlog (1000 creates from 50
clients: up to ~580 instances waiting in SCHEDULING, POST→ACTIVE p99 5.7 s
while a boot needs milliseconds of work). Holding the POST instead bounds what
is in flight: a server's time to ACTIVE is then about ``limit`` divided by the
build rate, plus its POST's wait, and the build rate stays the same (the
pipeline always has ``limit`` builds to work on).

The backlog is the instances in BUILD still in SCHEDULING: not yet placed, or
placed and waiting for their host to start them (a host starts
``max_concurrent_builds`` at a time). Instances a host is building do not
count: a real guest may take minutes to spawn, and hosts busy spawning are no
reason to hold the API back. The backlog is counted in the database, which
every API process and every host share: once, and then only while creates wait, every
``RECOUNT_S`` (an index-only count). In between, each admission adds its count
to the last one; instances that other API processes insert meanwhile are seen
at the next count, so with several API processes the bound is approximate. A
create waits its turn (first come, first admitted) at most ``max_wait``
seconds, then goes ahead anyway: a backlog that does not move (a host that
hangs) is the build timeout's business, not a reason to refuse service.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from collections import deque

import sqlalchemy as sa

from cirrus.compute.exception import ServiceShuttingDown
from cirrus.compute.models import instances
from cirrus.compute.states import TaskState, VmState
from cirrus.db.engine import Database
from cirrus.db.prepared import Prepared
from cirrus.db.rows import read_here
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)
RECOUNT_S = 0.02  # while creates wait: 50 index-only counts a second

# The states as literals, not parameters: PostgreSQL's connections run prepared
# statements by their generic plan (``db.engine._planned_once``), and only a
# plan with the values in it can use the partial index of waiting instances.
_BACKLOG = Prepared(sa.select(sa.func.count()).select_from(instances).where(
    instances.c.vm_state == sa.literal_column(f"'{VmState.BUILDING.value}'"),
    instances.c.task_state == sa.literal_column(f"'{TaskState.SCHEDULING.value}'"),
    instances.c.deleted.is_(False)))


def count_backlog(conn: sa.Connection) -> int:
    """Instances waiting to build (BUILD, SCHEDULING), every project's."""
    return int(_BACKLOG.execute(conn).fetchone()[0])


class BuildAdmission:
    """``await admit(n)`` before inserting ``n`` instances to build."""

    def __init__(self, db: Database, limit: int, max_wait: float) -> None:
        self.db = db
        self.limit = limit  # 0: no limit
        self.max_wait = max_wait
        self._backlog: int | None = None  # the last count + what was admitted since
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()
        self._recounting: asyncio.Task[None] | None = None
        # Admitted, their rows not yet committed: a count cannot see them.
        self._unrecorded = 0
        self.closed = False  # shutting down: every new build is refused

    def close(self) -> None:
        """Refuse every build from now on (a stop was asked for): creates and
        the actions that start a build get 503 while those in flight finish.
        Creates waiting for their turn get it at once, and with it the 503."""
        self.closed = True
        while self._waiting:
            _count, turn = self._waiting.popleft()
            turn.cancel()

    def check_open(self) -> None:
        """Raise :class:`ServiceShuttingDown` (503) once :meth:`close` was called."""
        if self.closed:
            raise ServiceShuttingDown()

    @property
    def waiting(self) -> int:
        """How many creates wait for their turn now."""
        return len(self._waiting)

    def _fits(self, count: int) -> bool:
        assert self._backlog is not None
        # No backlog: a request larger than the limit goes alone.
        return self._backlog == 0 or self._backlog + count <= self.limit

    @contextlib.asynccontextmanager
    async def admitted(self, count: int) -> AsyncIterator[None]:
        """:meth:`admit`, then the caller records its instances in the block:
        until the block ends they count as backlog beside what a recount sees."""
        await self.admit(count)
        self._unrecorded += count
        try:
            yield
        finally:
            self._unrecorded -= count

    async def admit(self, count: int) -> None:
        """Return when ``count`` more instances may join the backlog, or after
        ``max_wait`` seconds in the queue; 503 once closed (before or meanwhile)."""
        self.check_open()
        if self.limit <= 0:
            return
        if self._backlog is None:
            counted = await read_here(self.db, count_backlog)
            if self._backlog is None:  # not set by a create that counted alongside
                self._backlog = counted
        if not self._waiting and self._fits(count):
            self._backlog += count
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (count, turn)
        self._waiting.append(entry)
        if self._recounting is None:
            self._recounting = spawn(self._recount(), name="build-admission-recount")
        try:
            await asyncio.wait({turn}, timeout=self.max_wait)
        finally:
            if not turn.done():  # waited max_wait, or the request was cancelled
                self._waiting.remove(entry)
                turn.cancel()
            # (a turn cancelled by close() has left the queue already)
            if not self._waiting and self._recounting is not None:
                # Nobody left to recount for: stop now rather than after the
                # next sleep (a task of no one's would outlive the request).
                self._recounting.cancel()
                self._recounting = None  # a new waiter starts a new one
        if turn.cancelled():  # max_wait is up: go ahead
            self._backlog += count
        self.check_open()

    async def _recount(self) -> None:
        try:
            while self._waiting:
                await asyncio.sleep(RECOUNT_S)
                try:
                    # Taken before the count: rows committed during it are
                    # counted twice at worst (held back a little), never missed.
                    unrecorded = self._unrecorded
                    self._backlog = await read_here(self.db, count_backlog) + unrecorded
                except Exception:  # noqa: BLE001 - waiters go ahead after max_wait anyway
                    LOG.exception("could not count the instances waiting to build")
                    continue
                while self._waiting and self._fits(self._waiting[0][0]):
                    count, turn = self._waiting.popleft()
                    self._backlog += count
                    turn.set_result(None)
        finally:
            if self._recounting is asyncio.current_task():
                self._recounting = None
