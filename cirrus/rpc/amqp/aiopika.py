"""AMQP transport on RabbitMQ (aio-pika), for services in separate processes.

* one durable direct exchange ``cirrus``; a durable queue per topic (shared,
  round-robin) and one per ``topic.server`` (casts to a named host);
* a fan-out exchange per topic, each consumer with its own exclusive queue;
* ``call``: a per-process exclusive reply queue, correlation ids, a deadline
  that raises MessagingTimeout (never a hang); a call whose connection drops
  before the reply fails at once with ConnectionLost;
* publisher confirms on every publish, and a publish that meets a dropped
  connection waits for the reconnect and publishes again (up to
  ``publish_timeout``) — so a request accepted while the broker restarts is
  not lost. A confirm lost with the connection can make that a duplicate;
* casts are persistent and acked only after their handler returned, so a
  consumer that dies mid-way (or whose connection drops) gets the message
  again. Handlers must tolerate a second delivery, even one that overlaps the
  first: their state changes are guarded saves;
* ``connect_robust`` reconnects with back-off and re-declares everything.

The hot paths skip aio-pika's per-message objects (docs/performance.md,
"the bus"): a publish goes straight to the underlying aiormq channel with
properties built once per kind of message; replies leave on a second channel
without confirms (nobody waits for them but the caller, who has a deadline);
frames are queued for aiormq's writer without waiting for its drain.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Callable

import aio_pika
import aiormq.exceptions
from aio_pika.abc import AbstractIncomingMessage
from pamqp.commands import Basic

from cirrus.rpc.codec import decode, encode
from cirrus.rpc.transport import ConnectionLost, Handler, Message, MessagingTimeout, Transport
from cirrus.utils import Supervisor

LOG = logging.getLogger(__name__)
EXCHANGE = "cirrus"
# What a publish or an ack raises when the connection or channel is gone.
LOST = (aiormq.exceptions.AMQPError, aiormq.exceptions.ChannelInvalidStateError,
        ConnectionError, asyncio.TimeoutError)
JSON = "application/json"
REPLY_WAIT = 10.0  # s a reply waits for its channel to come back after a reconnect
# The properties of a cast and of a fan-out never change: built once.
CAST_PROPS = Basic.Properties(content_type=JSON, delivery_mode=2)
FANOUT_PROPS = Basic.Properties(content_type=JSON, delivery_mode=1)


class AMQPTransport(Transport):
    def __init__(self, url: str, prefetch: int = 64, publish_timeout: float = 60.0) -> None:
        self.url = url
        self.prefetch = prefetch
        self.publish_timeout = publish_timeout
        self._conn: Any = None
        self._channel: Any = None  # publisher confirms: casts, calls, fan-outs, consuming
        self._replies_out: Any = None  # no confirms: replies to calls
        self._exchange: Any = None
        self._fanouts: set[str] = set()  # fan-out exchanges declared
        self._reply_queue: Any = None
        self._replies: dict[str, asyncio.Future[Any]] = {}
        self._sent: set[str] = set()  # calls published, awaiting their reply
        self._generation = 0  # +1 each time the connection or channel is lost
        self._connected = False
        self._stopping = False
        self._tasks = Supervisor()  # deliveries being handled
        # Called once per reconnect after a loss (the metrics count them).
        self.reconnect_hooks: list[Callable[[], None]] = []

    async def start(self) -> None:
        self._conn = await aio_pika.connect_robust(self.url, reconnect_interval=1)
        self._conn.close_callbacks.add(self._on_lost)
        self._conn.reconnect_callbacks.add(self._on_reconnect)
        self._connected = True
        self._channel = await self._conn.channel(publisher_confirms=True)
        self._channel.close_callbacks.add(self._on_lost)
        self._channel.reopen_callbacks.add(self._on_reconnect)
        await self._channel.set_qos(prefetch_count=self.prefetch)
        # Replies only; its loss is the connection's (that callback says so).
        self._replies_out = await self._conn.channel(publisher_confirms=False)
        self._exchange = await self._channel.declare_exchange(
            EXCHANGE, aio_pika.ExchangeType.DIRECT, durable=True)
        self._reply_queue = await self._channel.declare_queue(
            f"reply.{uuid.uuid4().hex}", exclusive=True, auto_delete=True)
        await self._reply_queue.consume(self._on_reply, no_ack=True)

    async def stop(self) -> None:
        self._stopping = True
        for fut in self._replies.values():
            if not fut.done():
                fut.set_exception(MessagingTimeout("transport stopped"))
        # Deliveries cut short are not acked: the broker hands them out again.
        await self._tasks.stop()
        if self._conn is not None:
            await self._conn.close()

    def _on_lost(self, _sender: Any, exc: BaseException | None = None) -> None:
        """The connection (or our channel) closed: unacked deliveries go back to
        their queues, and no reply to a call already sent can arrive."""
        self._generation += 1
        if self._connected and not self._stopping:  # once, not per failed attempt
            LOG.warning("connection to the broker lost (%s); reconnecting", exc)
        self._connected = False
        for corr in list(self._sent):
            fut = self._replies.get(corr)
            if fut is not None and not fut.done():
                fut.set_exception(ConnectionLost(f"connection to the broker lost: {exc}"))
        self._sent.clear()

    def _on_reconnect(self, _sender: Any) -> None:
        if not self._connected:
            LOG.warning("reconnected to the broker; queues and consumers restored")
            for hook in self.reconnect_hooks:
                hook()
        self._connected = True

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

        async def on_message(message: AbstractIncomingMessage) -> None:
            await self._on_message(message, handler)
        for queue in queues:
            await queue.consume(on_message)

    async def _bound_queue(self, name: str, key: str) -> Any:
        queue = await self._channel.declare_queue(name, durable=True)
        await queue.bind(self._exchange, routing_key=key)
        return queue

    async def _on_message(self, message: AbstractIncomingMessage, handler: Handler) -> None:
        # Each message runs in a task of ours, so one slow handler blocks no
        # other — and not in aio-pika's: aiormq cancels its consumer tasks
        # (and what they await) when the channel closes, and a handler cut
        # between two steps (a host recorded, its build not yet cast) would
        # leave work that the redelivery sees as done.
        self._tasks.spawn(self._handle(message, handler, self._generation),
                          name=f"amqp:{message.routing_key}")

    async def _handle(self, message: AbstractIncomingMessage, handler: Handler,
                      generation: int) -> None:
        try:
            payload = decode(message.body)
        except ValueError:
            LOG.error("dropping malformed message on %s", message.routing_key)
            await self._settle(message, generation, reject=True)
            return
        if message.reply_to:
            # A call is answered at most once; its caller has a deadline.
            await self._settle(message, generation)
            reply = await handler(payload)
            try:
                # After a reconnect the consuming channel may be back (and this
                # delivery on it) before the replies' channel: wait for it.
                async with asyncio.timeout(REPLY_WAIT):
                    await self._replies_out.ready()
                out = await self._underlay(self._replies_out)
                await out.basic_publish(
                    encode(reply), exchange="", routing_key=message.reply_to,
                    properties=Basic.Properties(content_type=JSON,
                                                correlation_id=message.correlation_id),
                    wait=False)
            except LOST as exc:  # the caller saw ConnectionLost already
                LOG.info("reply to %s not sent: %s", message.routing_key, exc)
            return
        try:
            await handler(payload)
        except Exception:  # noqa: BLE001 - the dispatcher already turned errors into replies
            LOG.exception("cast handler on %s failed", message.routing_key)
        await self._settle(message, generation)  # only after the handler's effect is committed

    async def _settle(self, message: AbstractIncomingMessage, generation: int,
                      reject: bool = False) -> None:
        """Ack (or reject) a delivery — unless its channel is gone: then the broker
        has put it back already, and its delivery tag means nothing on the new
        channel (acking it there would close that channel)."""
        if generation != self._generation:
            LOG.info("delivery on %s outlived its connection; the broker redelivers it",
                     message.routing_key)
            return
        try:
            if reject:
                await message.reject(requeue=False)
            else:
                # Queued for the socket, not awaited through aiormq's writer
                # task and a drain (message.ack() does both).
                tag = message.delivery_tag
                assert tag is not None, "consumed with acks: every delivery has its tag"
                await message.channel.basic_ack(tag, wait=False)
        except LOST as exc:
            LOG.info("could not settle a delivery on %s (%s); the broker redelivers it",
                     message.routing_key, exc)

    async def _on_reply(self, message: AbstractIncomingMessage) -> None:
        fut = self._replies.get(message.correlation_id or "")
        if fut is not None and not fut.done():
            fut.set_result(decode(message.body))

    # -- publishing ----------------------------------------------------------------
    @staticmethod
    async def _underlay(channel: Any) -> Any:
        """The aiormq channel under ``channel``: ChannelInvalidStateError (in
        LOST) while it is closed or being reopened."""
        under = await channel.get_underlay_channel()
        if under.is_closed:
            raise aiormq.exceptions.ChannelInvalidStateError("channel closed")
        return under

    async def _publish(self, exchange: str, key: str, message: Message, deadline: float,
                       props: Basic.Properties) -> None:
        """Publish and wait for the broker's confirm; across a lost connection,
        wait for the reconnect and publish again until ``deadline``."""
        body = encode(message)
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0:  # not even written: a retry that ran out of time
                    raise asyncio.TimeoutError
                # asyncio.timeout, not wait_for: no task per await.
                async with asyncio.timeout(remaining):
                    await self._channel.ready()  # at once unless reconnecting
                    channel = await self._underlay(self._channel)
                    await channel.basic_publish(
                        body, exchange=exchange, routing_key=key, properties=props,
                        wait=False)  # the confirm, not a drain, says it arrived
                return
            except LOST as exc:
                if self._stopping or time.monotonic() >= deadline:
                    raise MessagingTimeout(f"could not publish to {key} {message.get('method')}: "
                                           f"{exc!r}") from exc
                LOG.warning("publish to %s failed (%r); retrying after the reconnect", key, exc)
                await asyncio.sleep(0.2)

    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        key = f"{topic}.{server}" if server else topic
        await self._publish(EXCHANGE, key, message, time.monotonic() + self.publish_timeout,
                            CAST_PROPS)

    async def call(self, topic: str, server: str | None, message: Message, timeout: float) -> Any:
        key = f"{topic}.{server}" if server else topic
        corr = uuid.uuid4().hex
        deadline = time.monotonic() + timeout
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._replies[corr] = fut
        try:
            await self._publish(EXCHANGE, key, message, deadline, Basic.Properties(
                content_type=JSON, correlation_id=corr, reply_to=self._reply_queue.name,
                expiration=str(int(timeout * 1000))))
            # From here on a lost connection means the reply is lost too.
            self._sent.add(corr)
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                return await fut
        except MessagingTimeout:
            raise  # ConnectionLost, or the publish gave up: already says why
        except asyncio.TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {key} {message.get('method')}") from exc
        finally:
            self._replies.pop(corr, None)
            self._sent.discard(corr)

    async def fanout(self, topic: str, message: Message) -> None:
        name = f"{topic}_fanout"
        if name not in self._fanouts:  # declared once per process (robust: kept on reconnect)
            await self._channel.declare_exchange(name, aio_pika.ExchangeType.FANOUT, durable=True)
            self._fanouts.add(name)
        await self._publish(name, "", message, time.monotonic() + self.publish_timeout,
                            FANOUT_PROPS)
