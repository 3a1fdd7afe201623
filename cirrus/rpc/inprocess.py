"""In-process transport: asyncio tasks on the one event loop of ``cirrus up``.

Messages are round-tripped through the wire format (``codec``) so that anything that works here also
works over AMQP (DESIGN §2: no code path exists only in one mode).
"""
from __future__ import annotations

import asyncio
import itertools
import logging
from collections import defaultdict
from typing import Any

from cirrus.rpc.codec import decode, encode
from cirrus.rpc.transport import Handler, Message, MessagingTimeout, Transport
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)


class InProcessTransport(Transport):
    def __init__(self) -> None:
        self._queues: dict[str, list[Handler]] = defaultdict(list)
        self._fanout: dict[str, list[Handler]] = defaultdict(list)
        self._rr = itertools.count()

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        self._queues.clear()
        self._fanout.clear()

    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        self._queues[topic].append(handler)
        if server:
            self._queues[f"{topic}.{server}"].append(handler)
        self._fanout[topic].append(handler)

    def _pick(self, topic: str, server: str | None) -> Handler:
        key = f"{topic}.{server}" if server else topic
        handlers = self._queues.get(key)
        if not handlers:
            raise MessagingTimeout(f"no consumer for {key}")
        return handlers[next(self._rr) % len(handlers)]

    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        payload = encode(message)
        try:
            handler = self._pick(topic, server)
        except MessagingTimeout:
            # A cast to a host that is gone is lost, as on a real broker
            # without a queue; the periodic tasks clean up after it.
            LOG.warning("cast to %s.%s dropped: no consumer", topic, server)
            return
        spawn(handler(decode(payload)), name=f"cast:{topic}:{message.get('method')}")

    async def call(self, topic: str, server: str | None, message: Message,
                   timeout: float) -> Any:
        payload = encode(message)
        handler = self._pick(topic, server)
        try:
            reply = await asyncio.wait_for(handler(decode(payload)), timeout)
        except asyncio.TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {topic} {message.get('method')}") from exc
        return decode(encode(reply))

    async def fanout(self, topic: str, message: Message) -> None:
        payload = encode(message)
        for handler in list(self._fanout.get(topic, ())):
            spawn(handler(decode(payload)), name=f"fanout:{topic}")
