"""AMQP transport on RabbitMQ (aio-pika), for services in separate processes.

* one durable direct exchange ``cirrus``; a durable queue per topic (shared,
  round-robin) and one per ``topic.server`` (casts to a named host);
* a fan-out exchange per topic, each consumer with its own exclusive queue;
* ``call``: a per-process exclusive reply queue, correlation ids, a deadline
  that raises MessagingTimeout (never a hang);
* publisher confirms on every publish; casts are persistent and acked only
  after their handler returned, so a consumer that dies mid-way gets the
  message redelivered (handlers must tolerate that: guarded saves do);
* ``connect_robust`` reconnects with back-off and re-declares everything.
"""
from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

import aio_pika
from aio_pika.abc import AbstractIncomingMessage

from cirrus.rpc.transport import Handler, Message, MessagingTimeout, Transport
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)
EXCHANGE = "cirrus"


class AMQPTransport(Transport):
    def __init__(self, url: str, prefetch: int = 64) -> None:
        self.url = url
        self.prefetch = prefetch
        self._conn: Any = None
        self._channel: Any = None
        self._exchange: Any = None
        self._reply_queue: Any = None
        self._pending: dict[str, asyncio.Future[Any]] = {}

    async def start(self) -> None:
        self._conn = await aio_pika.connect_robust(self.url, reconnect_interval=1)
        self._channel = await self._conn.channel(publisher_confirms=True)
        await self._channel.set_qos(prefetch_count=self.prefetch)
        self._exchange = await self._channel.declare_exchange(
            EXCHANGE, aio_pika.ExchangeType.DIRECT, durable=True)
        self._reply_queue = await self._channel.declare_queue(
            f"reply.{uuid.uuid4().hex}", exclusive=True, auto_delete=True)
        await self._reply_queue.consume(self._on_reply, no_ack=True)

    async def stop(self) -> None:
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(MessagingTimeout("transport stopped"))
        if self._conn is not None:
            await self._conn.close()

    # -- consuming ----------------------------------------------------------------
    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        queues = [await self._bound_queue(topic, topic)]
        if server:
            queues.append(await self._bound_queue(f"{topic}.{server}", f"{topic}.{server}"))
        fanout = await self._channel.declare_exchange(f"{topic}_fanout",
                                                      aio_pika.ExchangeType.FANOUT, durable=True)
        mine = await self._channel.declare_queue(
            f"{topic}_fanout.{server or 'any'}.{uuid.uuid4().hex[:8]}", exclusive=True,
            auto_delete=True)
        await mine.bind(fanout)
        queues.append(mine)
        for queue in queues:
            await queue.consume(lambda message, h=handler: self._on_message(message, h))

    async def _bound_queue(self, name: str, key: str) -> Any:
        queue = await self._channel.declare_queue(name, durable=True)
        await queue.bind(self._exchange, routing_key=key)
        return queue

    async def _on_message(self, message: AbstractIncomingMessage, handler: Handler) -> None:
        # Each message runs in its own task so one slow handler blocks no other.
        spawn(self._handle(message, handler), name=f"amqp:{message.routing_key}")

    async def _handle(self, message: AbstractIncomingMessage, handler: Handler) -> None:
        try:
            payload = json.loads(message.body)
        except ValueError:
            LOG.error("dropping malformed message on %s", message.routing_key)
            await message.reject(requeue=False)
            return
        if message.reply_to:
            await message.ack()  # a call is answered at most once; its caller has a deadline
            reply = await handler(payload)
            await self._channel.default_exchange.publish(
                aio_pika.Message(json.dumps(reply).encode(), correlation_id=message.correlation_id,
                                 content_type="application/json"),
                routing_key=message.reply_to)
            return
        try:
            await handler(payload)
        except Exception:  # noqa: BLE001 - the dispatcher already turned errors into replies
            LOG.exception("cast handler on %s failed", message.routing_key)
        await message.ack()  # only after the handler's effect is committed

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        fut = self._pending.pop(message.correlation_id or "", None)
        if fut is not None and not fut.done():
            fut.set_result(json.loads(message.body))

    # -- publishing ----------------------------------------------------------------
    async def _publish(self, exchange: Any, key: str, message: Message, **props: Any) -> None:
        await exchange.publish(aio_pika.Message(json.dumps(message).encode(),
                                                content_type="application/json", **props),
                               routing_key=key)

    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        key = f"{topic}.{server}" if server else topic
        await self._publish(self._exchange, key, message,
                            delivery_mode=aio_pika.DeliveryMode.PERSISTENT)

    async def call(self, topic: str, server: str | None, message: Message, timeout: float) -> Any:
        key = f"{topic}.{server}" if server else topic
        corr = uuid.uuid4().hex
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[corr] = fut
        try:
            await asyncio.wait_for(self._publish(
                self._exchange, key, message, correlation_id=corr,
                reply_to=self._reply_queue.name, expiration=timeout), timeout)
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {key} {message.get('method')}") from exc
        finally:
            self._pending.pop(corr, None)

    async def fanout(self, topic: str, message: Message) -> None:
        exchange = await self._channel.declare_exchange(f"{topic}_fanout",
                                                        aio_pika.ExchangeType.FANOUT, durable=True)
        await self._publish(exchange, "", message)
