"""The service frame: start/stop, an RPC endpoint, periodic tasks, heartbeats.

Every long-running part of cirrus (conductor, scheduler, each compute host)
is a :class:`Service`. ``cirrus up`` starts many in one loop; the separate
process commands start one each. Heartbeats go into the ``services`` table,
which is how the scheduler and ``os-services`` tell up from down.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.rpc import RPCDispatcher, Transport
from cirrus.service_models import services
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)


@dataclass
class PeriodicTask:
    """``fn()`` every ``interval`` seconds; failures are logged, never fatal."""

    name: str
    interval: float
    fn: Callable[[], Awaitable[Any]]
    initial_delay: float | None = None


def _register(conn: sa.Connection, host: str, binary: str, topic: str, az: str) -> int:
    row = conn.execute(sa.select(services.c.id).where(
        services.c.host == host, services.c.binary == binary)).first()
    now = utcnow()
    if row:
        conn.execute(services.update().where(services.c.id == row.id).values(
            last_seen_up=now, topic=topic, updated_at=now))
        return row.id
    return conn.execute(services.insert().values(
        uuid=str(uuid.uuid4()), host=host, binary=binary, topic=topic, availability_zone=az, disabled=False,
        forced_down=False, last_seen_up=now, report_count=0, created_at=now,
    ).returning(services.c.id)).scalar_one()


def _heartbeat(conn: sa.Connection, service_id: int) -> None:
    conn.execute(services.update().where(services.c.id == service_id).values(
        last_seen_up=utcnow(), report_count=services.c.report_count + 1))


class Service:
    """One service instance: ``binary`` on ``host`` serving ``topic``."""

    def __init__(self, *, binary: str, topic: str, host: str, db: Database,
                 transport: Transport, endpoint: Any, report_interval: float = 10.0,
                 periodic_tasks: list[PeriodicTask] | None = None,
                 availability_zone: str = "nova") -> None:
        self.binary = binary
        self.topic = topic
        self.host = host
        self.db = db
        self.transport = transport
        self.endpoint = endpoint
        self.report_interval = report_interval
        self.periodic_tasks = list(periodic_tasks or [])
        self.availability_zone = availability_zone
        self.service_id: int | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        """Register, start consuming the topic, start heartbeats and periodics."""
        self.service_id = await self.db.run(
            _register, self.host, self.binary, self.topic, self.availability_zone)
        starter = getattr(self.endpoint, "start", None)
        if starter is not None:
            await starter()
        await self.transport.listen(self.topic, self.host, RPCDispatcher(self.endpoint))
        self._tasks.append(spawn(self._loop(PeriodicTask(
            "heartbeat", self.report_interval, self._report)), name=f"{self.binary}:{self.host}:heartbeat"))
        for task in self.periodic_tasks:
            self._tasks.append(spawn(self._loop(task), name=f"{self.binary}:{self.host}:{task.name}"))
        LOG.info("%s on %s started", self.binary, self.host)

    async def _report(self) -> None:
        assert self.service_id is not None
        await self.db.run(_heartbeat, self.service_id)

    async def _loop(self, task: PeriodicTask) -> None:
        await asyncio.sleep(task.interval if task.initial_delay is None else task.initial_delay)
        while True:
            try:
                await task.fn()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a periodic task must keep running
                LOG.exception("periodic task %s on %s failed", task.name, self.host)
            await asyncio.sleep(task.interval)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        stopper = getattr(self.endpoint, "stop", None)
        if stopper is not None:
            await stopper()
        LOG.info("%s on %s stopped", self.binary, self.host)
