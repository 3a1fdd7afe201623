"""In-process transport: asyncio tasks on the one event loop of ``cirrus up``.

Messages are round-tripped through the wire format (``codec``) so that anything that works here also
works over AMQP (DESIGN §2: no code path exists only in one mode).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from collections import defaultdict
from typing import Any, Callable, Generic, TypeVar

from cirrus.rpc.codec import decode, encode
from cirrus.rpc.transport import Handler, Message, MessagingTimeout, Transport
from cirrus.utils import Supervisor

LOG = logging.getLogger(__name__)
T = TypeVar("T")


class Routes(Generic[T]):
    """Who consumes what: targets per queue (``topic``, ``topic.server``, shared
    round-robin) and per fan-out ``topic``. Used by the in-process transport and
    by the local bus's hub."""

    def __init__(self) -> None:
        self._queues: dict[str, list[T]] = defaultdict(list)
        self._fanout: dict[str, list[T]] = defaultdict(list)
        self._rr = itertools.count()

    def add(self, topic: str, server: str | None, target: T) -> None:
        self._queues[topic].append(target)
        if server:
            self._queues[f"{topic}.{server}"].append(target)
        self._fanout[topic].append(target)

    def pick(self, topic: str, server: str | None) -> T:
        """One consumer of the queue, in turn; MessagingTimeout if there is none."""
        key = f"{topic}.{server}" if server else topic
        targets = self._queues.get(key)
        if not targets:
            raise MessagingTimeout(f"no consumer for {key}")
        return targets[next(self._rr) % len(targets)]

    def fanout(self, topic: str) -> list[T]:
        return list(self._fanout.get(topic, ()))

    def remove(self, gone: Callable[[T], bool]) -> None:
        for table in (self._queues, self._fanout):
            for key, targets in list(table.items()):
                targets[:] = [t for t in targets if not gone(t)]
                if not targets:
                    del table[key]

    def clear(self) -> None:
        self._queues.clear()
        self._fanout.clear()


class InProcessTransport(Transport):
    at_most_once = True  # a message is handed to one handler, once

    def __init__(self) -> None:
        self._routes: Routes[Handler] = Routes()
        self._tasks = Supervisor()  # the casts and fan-outs being handled

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self._routes.clear()
        await self._tasks.stop()

    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        self._routes.add(topic, server, handler)

    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        payload = encode(message)
        try:
            handler = self._routes.pick(topic, server)
        except MessagingTimeout:
            # A cast to a host that is gone is lost, as on a real broker
            # without a queue; the periodic tasks clean up after it.
            LOG.warning("cast to %s.%s dropped: no consumer", topic, server)
            return
        self._tasks.spawn(handler(decode(payload)), name=f"cast:{topic}:{message.get('method')}")

    async def call(self, topic: str, server: str | None, message: Message,
                   timeout: float) -> Any:
        payload = encode(message)
        handler = self._routes.pick(topic, server)
        try:
            reply = await asyncio.wait_for(handler(decode(payload)), timeout)
        except asyncio.TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {topic} {message.get('method')}") from exc
        return decode(encode(reply))

    async def fanout(self, topic: str, message: Message) -> None:
        payload = encode(message)
        for handler in self._routes.fanout(topic):
            self._tasks.spawn(handler(decode(payload)), name=f"fanout:{topic}")
