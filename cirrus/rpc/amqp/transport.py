"""AMQP transport on RabbitMQ, on cirrus's own AMQP 0-9-1 client (``connection``).

* one durable direct exchange ``cirrus``; a durable queue per topic (shared,
  round-robin) and one per ``topic.server`` (casts to a named host);
* a fan-out exchange per topic, each consumer with its own exclusive queue;
* ``call``: a per-process exclusive reply queue, correlation ids, a deadline
  that raises MessagingTimeout (never a hang); a call whose connection drops
  before the reply fails at once with ConnectionLost;
* publisher confirms on every cast and fan-out, and one that meets a dropped
  connection waits for the reconnect and publishes again (up to
  ``publish_timeout``) — so a request accepted while the broker restarts is
  not lost. A confirm lost with the connection can make that a duplicate;
* calls are not confirmed: their reply says they arrived, and a call whose
  connection drops once it is written fails with ConnectionLost whether or
  not the broker took it — never published twice (a call is at most once);
* casts are persistent and acked only after their handler returned, so a
  consumer that dies mid-way (or whose connection drops) gets the message
  again. Handlers must tolerate a second delivery, even one that overlaps the
  first: their state changes are guarded saves. A handler outlives its
  connection (it runs in a task of the transport's own); only its ack is
  dropped, since the broker has put the delivery back already;
* a lost connection is reopened with back-off; the exchanges, queues,
  bindings and consumers declared so far are declared again on the new one
  before anything is published on it.

Channel 1 has publisher confirms and carries casts, fan-outs and every
consumer; calls and replies leave on channel 2, without confirms (nobody
waits for their confirm: a lost call or reply is the caller's timeout or
ConnectionLost). A confirm costs the broker a frame and the caller a future
and a wake-up; the call's reply, which it waits for anyway, says more.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from cirrus.rpc.amqp import wire
from cirrus.rpc.amqp.connection import Channel, Connection, ConnectionClosed, Delivery, Params
from cirrus.rpc.codec import decode, encode
from cirrus.rpc.transport import ConnectionLost, Handler, Message, MessagingTimeout, Transport
from cirrus.utils import Supervisor, spawn

LOG = logging.getLogger(__name__)
EXCHANGE = "cirrus"
JSON = "application/json"
REPLY_WAIT = 10.0  # s a reply waits for the connection to come back
RETRY_PAUSE = 0.2  # s between a failed publish and its retry
BACKOFF = (0.1, 2.0)  # s: first and longest pause between reconnect attempts
# The properties of a cast and of a fan-out never change: encoded once.
CAST_PROPS = wire.Properties(content_type=JSON, delivery_mode=2).encode()
FANOUT_PROPS = wire.Properties(content_type=JSON, delivery_mode=1).encode()
# What a publish, a declaration or an ack raises when the connection is gone.
LOST = (ConnectionError, OSError, TimeoutError)


@dataclass
class _Queue:
    """A queue as declared, to declare again on a new connection.

    A durable queue is shared and keeps its name. Any other (a reply or a
    fan-out queue) is exclusive to its connection and named anew on each: the
    broker may not yet have noticed that the connection we gave up on (missed
    heartbeats) is dead, and would refuse the old name as locked by it."""

    base: str
    durable: bool
    bindings: list[tuple[str, str]] = field(default_factory=list)  # (exchange, key)
    name: str = ""  # on the current connection

    async def declare(self, channel: Channel, serial: int) -> None:
        self.name = self.base if self.durable else f"{self.base}.{serial}"
        await channel.queue_declare(self.name, durable=self.durable,
                                    exclusive=not self.durable, auto_delete=not self.durable)
        for exchange, key in self.bindings:
            await channel.queue_bind(self.name, exchange, key)


class AMQPTransport(Transport):
    """The bus on RabbitMQ at ``url`` (``amqp://user:password@host:port/vhost``)."""

    def __init__(self, url: str, prefetch: int = 64, publish_timeout: float = 60.0) -> None:
        self.url = url
        self.params = Params.from_url(url)
        self.prefetch = prefetch
        self.publish_timeout = publish_timeout
        self._conn: Connection | None = None
        self._channel: Channel | None = None  # confirms: casts, fan-outs, consuming
        self._unconfirmed: Channel | None = None  # no confirms: calls and their replies
        self._ready = asyncio.Event()  # set while connected with everything declared
        self._exchanges: dict[str, str] = {EXCHANGE: "direct"}  # name → type
        self._queues: list[_Queue] = []
        self._consumers: list[tuple[_Queue, Callable[[Delivery], None]]] = []
        self._reply_queue = _Queue(f"reply.{uuid.uuid4().hex}", durable=False)
        self._serial = 0  # connections opened
        self._replies: dict[str, asyncio.Future[Any]] = {}
        self._sent: set[str] = set()  # calls published, awaiting their reply
        self._ids = itertools.count(1)
        self._started = False
        self._connected = False
        self._stopping = False
        self._reconnecting: asyncio.Task[None] | None = None
        self._tasks = Supervisor()  # deliveries being handled
        # Called once per reconnect after a loss (the metrics count them).
        self.reconnect_hooks: list[Callable[[], None]] = []

    # -- life cycle ----------------------------------------------------------------
    async def start(self) -> None:
        """Connect and declare; OSError or ConnectionError if the broker cannot be reached."""
        self._queues.append(self._reply_queue)
        self._consumers.append((self._reply_queue, self._on_reply))
        await self._connect()
        self._started = True

    async def stop(self) -> None:
        self._stopping = True
        for fut in self._replies.values():
            if not fut.done():
                fut.set_exception(MessagingTimeout("transport stopped"))
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            await asyncio.gather(self._reconnecting, return_exceptions=True)
        # Deliveries cut short are not acked: the broker hands them out again.
        await self._tasks.stop()
        if self._conn is not None:
            await self._conn.close()
        self._ready.set()  # publishers still waiting find the connection closed

    async def _connect(self) -> None:
        conn = await Connection.open(self.params, self._on_lost)
        self._conn = conn
        self._serial += 1
        try:
            self._channel = await conn.channel(1)
            await self._channel.confirm_select()
            await self._channel.qos(self.prefetch)
            self._unconfirmed = await conn.channel(2)
            for name, kind in list(self._exchanges.items()):
                await self._channel.exchange_declare(name, kind, durable=True)
            for queue in list(self._queues):
                await queue.declare(self._channel, self._serial)
            for queue, callback in list(self._consumers):
                await self._channel.consume(queue.name, callback,
                                            no_ack=callback == self._on_reply)
        except BaseException:
            conn.abort()
            raise
        self._restored()

    def _restored(self) -> None:
        """Connected with everything declared: publishes may go."""
        if not self._connected and self._started:
            LOG.warning("reconnected to the broker; queues and consumers restored")
            for hook in self.reconnect_hooks:
                hook()
        self._connected = True
        self._ready.set()

    def _on_lost(self, conn: Connection, exc: Exception) -> None:
        """The connection closed: unacked deliveries go back to their queues, and no
        reply to a call already sent can arrive."""
        if conn is not self._conn:
            return
        self._ready.clear()
        if self._connected and not self._stopping:  # once, not per failed attempt
            LOG.warning("connection to the broker lost (%s); reconnecting", exc)
        self._connected = False
        for corr in self._sent:
            fut = self._replies.get(corr)
            if fut is not None and not fut.done():
                fut.set_exception(ConnectionLost(f"connection to the broker lost: {exc}"))
        self._sent.clear()
        if self._started and not self._stopping and (
                self._reconnecting is None or self._reconnecting.done()):
            self._reconnecting = spawn(self._reconnect(), name="amqp:reconnect")

    async def _reconnect(self) -> None:
        delay = BACKOFF[0]
        while not self._stopping:
            try:
                await self._connect()
                return
            except LOST as exc:
                LOG.info("reconnecting to the broker failed (%r); again in %.1fs", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF[1])

    # -- consuming ---------------------------------------------------------------------
    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        def on_delivery(delivery: Delivery) -> None:
            if self._stopping:  # left unacked: the broker hands it to another
                return
            # A task of ours, so one slow handler blocks no other and the
            # handler outlives the connection it came on.
            self._tasks.spawn(self._handle(delivery, handler), name=f"amqp:{delivery.routing_key}")

        queues = [_Queue(topic, True, [(EXCHANGE, topic)])]
        if server:
            queues.append(_Queue(f"{topic}.{server}", True, [(EXCHANGE, f"{topic}.{server}")]))
        fanout = f"{topic}_fanout"
        queues.append(_Queue(f"{fanout}.{server or 'any'}.{uuid.uuid4().hex[:8]}", False,
                             [(fanout, "")]))
        await self._declare(fanout, "fanout", queues, on_delivery)

    async def _declare(self, exchange: str, kind: str, queues: list[_Queue],
                       consumer: Callable[[Delivery], None] | None) -> None:
        """Declare on the current connection and record, to declare again on the next
        (a connection lost meanwhile declares all of it on its successor)."""
        await self._ready.wait()
        new_exchange = exchange not in self._exchanges
        self._exchanges[exchange] = kind
        self._queues.extend(queues)
        if consumer is not None:
            self._consumers.extend((queue, consumer) for queue in queues)
        channel = self._channel
        assert channel is not None, "started: the channel exists"
        try:
            if new_exchange:
                await channel.exchange_declare(exchange, kind, durable=True)
            for queue in queues:
                await queue.declare(channel, self._serial)
            if consumer is not None:
                for queue in queues:
                    await channel.consume(queue.name, consumer)
        except ConnectionClosed:
            await self._ready.wait()  # the reconnect declared it all

    async def _handle(self, delivery: Delivery, handler: Handler) -> None:
        try:
            payload = decode(delivery.body)
        except ValueError:
            LOG.error("dropping malformed message on %s", delivery.routing_key)
            self._settle(delivery, reject=True)
            return
        props = delivery.properties
        if props.reply_to:
            # A call is answered at most once; its caller has a deadline.
            self._settle(delivery)
            reply = await handler(payload)
            await self._reply(props.reply_to, props.correlation_id or "", reply)
            return
        try:
            await handler(payload)
        except Exception:  # noqa: BLE001 - the dispatcher already turned errors into replies
            LOG.exception("cast handler on %s failed", delivery.routing_key)
        self._settle(delivery)  # only after the handler's effect is committed

    def _settle(self, delivery: Delivery, reject: bool = False) -> None:
        """Ack (or reject) a delivery — unless its connection is gone: then the broker
        has put it back already, and its delivery tag means nothing on the new
        connection (acking it there would close the channel)."""
        channel = delivery.channel
        try:
            if reject:
                channel.reject(delivery.delivery_tag, requeue=False)
            else:
                channel.ack(delivery.delivery_tag)
        except ConnectionClosed:
            LOG.info("delivery on %s outlived its connection; the broker redelivers it",
                     delivery.routing_key)

    async def _reply(self, reply_to: str, correlation_id: str, reply: Any) -> None:
        body = encode(reply)
        props = wire.Properties(content_type=JSON, correlation_id=correlation_id).encode()
        try:
            if not self._ready.is_set():
                async with asyncio.timeout(REPLY_WAIT):
                    await self._ready.wait()
            assert self._unconfirmed is not None, "ready: the unconfirmed channel exists"
            self._unconfirmed.publish("", reply_to, props, body)
        except LOST as exc:  # the caller saw ConnectionLost already
            LOG.info("reply to %s not sent: %r", reply_to, exc)

    def _on_reply(self, delivery: Delivery) -> None:
        fut = self._replies.get(delivery.properties.correlation_id or "")
        if fut is not None and not fut.done():
            try:
                fut.set_result(decode(delivery.body))
            except ValueError as exc:
                fut.set_exception(MessagingTimeout(f"malformed reply: {exc}"))

    # -- publishing ------------------------------------------------------------------
    async def _publish(self, exchange: str, key: str, body: bytes,
                       props: bytes, deadline: float, method: Any) -> None:
        """Publish and wait for the broker's confirm; across a lost connection,
        wait for the reconnect and publish again until ``deadline``."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                remaining = deadline - loop.time()
                if remaining <= 0:  # not even written: a retry that ran out of time
                    raise TimeoutError
                async with asyncio.timeout(remaining):
                    if not self._ready.is_set():
                        await self._ready.wait()
                    conn, channel = self._conn, self._channel
                    if conn is None or channel is None:
                        raise ConnectionClosed("not connected")
                    if not conn.unblocked.is_set():  # the broker is out of memory or disk
                        await conn.unblocked.wait()
                    confirm = channel.publish(exchange, key, props, body)
                    assert confirm is not None, "the publishing channel confirms"
                    await confirm
                return
            except LOST as exc:
                if self._stopping or loop.time() >= deadline:
                    raise MessagingTimeout(f"could not publish to {key} {method}: {exc!r}") from exc
                LOG.warning("publish to %s failed (%r); retrying after the reconnect", key, exc)
                await asyncio.sleep(RETRY_PAUSE)

    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        key = f"{topic}.{server}" if server else topic
        await self._publish(EXCHANGE, key, encode(message), CAST_PROPS,
                            self._deadline(self.publish_timeout), message.get("method"))

    async def call(self, topic: str, server: str | None, message: Message, timeout: float) -> Any:
        key = f"{topic}.{server}" if server else topic
        body = encode(message)
        corr = str(next(self._ids))
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._replies[corr] = fut
        try:
            # One deadline for the publish and the reply.
            async with asyncio.timeout_at(loop.time() + timeout):
                await self._send_call(key, body, corr, str(int(timeout * 1000)))
                return await fut
        except MessagingTimeout:
            raise  # ConnectionLost, or the transport stopped: already says why
        except TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {key} {message.get('method')}") from exc
        finally:
            self._replies.pop(corr, None)
            self._sent.discard(corr)

    async def _send_call(self, key: str, body: bytes, corr: str, expiration: str) -> None:
        """Write the call once connected (and not blocked), naming the current
        connection's reply queue; from then on a lost connection means its
        reply is lost too (``_on_lost`` fails it with ConnectionLost)."""
        while True:
            if not self._ready.is_set():
                await self._ready.wait()
            conn, channel = self._conn, self._unconfirmed
            if self._stopping or conn is None or channel is None:
                raise MessagingTimeout(f"call to {key} not sent: transport stopped")
            if not conn.unblocked.is_set():  # the broker is out of memory or disk
                await conn.unblocked.wait()
                continue
            props = wire.Properties(content_type=JSON, correlation_id=corr,
                                    reply_to=self._reply_queue.name,
                                    expiration=expiration).encode()
            try:
                channel.publish(EXCHANGE, key, props, body)
            except ConnectionClosed:  # closed before _on_lost ran: nothing written
                await asyncio.sleep(RETRY_PAUSE)
                continue
            self._sent.add(corr)
            return

    async def fanout(self, topic: str, message: Message) -> None:
        name = f"{topic}_fanout"
        if name not in self._exchanges:  # declared once per process, again on reconnect
            await self._declare(name, "fanout", [], None)
        await self._publish(name, "", encode(message), FANOUT_PROPS,
                            self._deadline(self.publish_timeout), message.get("method"))

    @staticmethod
    def _deadline(timeout: float) -> float:
        return asyncio.get_running_loop().time() + timeout
