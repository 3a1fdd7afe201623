"""A channel of an AMQP 0-9-1 connection (``connection.Connection``): its
synchronous methods, publishes and their confirms, deliveries put together
from their frames. Frames reach it from the connection's ``data_received``.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from cirrus.rpc.amqp import wire

if TYPE_CHECKING:
    from cirrus.rpc.amqp.connection import Connection

LOG = logging.getLogger(__name__)


class ConnectionClosed(ConnectionError):
    """The connection is gone (or refused us): what was waiting on it failed."""


class Nacked(ConnectionError):
    """The broker refused to take a published message (``basic.nack``)."""


class Delivery(NamedTuple):
    """A message the broker delivered to one of our consumers."""

    channel: "Channel"
    delivery_tag: int
    redelivered: bool
    exchange: str
    routing_key: str
    properties: wire.Properties
    body: bytes


Consumer = Callable[[Delivery], None]


class Channel:
    """A channel of a :class:`Connection`: synchronous methods one at a time,
    publishes (with confirms if :meth:`confirm_select` ran), consumers."""

    def __init__(self, conn: "Connection", number: int) -> None:
        self.conn = conn
        self.number = number
        self.confirming = False
        self._published = 0  # publish sequence numbers, for confirms
        self._unconfirmed: dict[int, asyncio.Future[None]] = {}
        self._lock = asyncio.Lock()
        self._waiting: tuple[str, asyncio.Future[wire.Arguments]] | None = None
        self._consumers: dict[str, Consumer] = {}
        # A delivery whose header or body frames are still to come.
        self._incoming: tuple[wire.Deliver, Consumer | None] | None = None
        self._properties = wire.Properties()
        self._expected = 0
        self._chunks: list[bytes] = []

    # -- synchronous methods --------------------------------------------------------
    async def rpc(self, name: str, reply: str, **args: Any) -> wire.Arguments:
        """Send method ``name`` and wait for ``reply`` (their spec names)."""
        async with self._lock:
            fut: asyncio.Future[wire.Arguments] = self.conn.loop.create_future()
            self._waiting = (reply, fut)
            self.conn.send(wire.method_frame(self.number, name, **args))
            try:
                return await fut
            finally:
                self._waiting = None

    async def open(self) -> None:
        await self.rpc("channel.open", "channel.open_ok")

    async def confirm_select(self) -> None:
        await self.rpc("confirm.select", "confirm.select_ok")
        self.confirming = True

    async def qos(self, prefetch_count: int) -> None:
        await self.rpc("basic.qos", "basic.qos_ok", prefetch_count=prefetch_count)

    async def exchange_declare(self, name: str, kind: str, durable: bool) -> None:
        await self.rpc("exchange.declare", "exchange.declare_ok", exchange=name, type=kind,
                       durable=durable)

    async def queue_declare(self, name: str, durable: bool = False, exclusive: bool = False,
                            auto_delete: bool = False) -> str:
        ok = await self.rpc("queue.declare", "queue.declare_ok", queue=name, durable=durable,
                            exclusive=exclusive, auto_delete=auto_delete)
        return str(ok["queue"])

    async def queue_bind(self, queue: str, exchange: str, routing_key: str) -> None:
        await self.rpc("queue.bind", "queue.bind_ok", queue=queue, exchange=exchange,
                       routing_key=routing_key)

    async def consume(self, queue: str, consumer: Consumer, no_ack: bool = False) -> str:
        """Start consuming ``queue``: each delivery is ``consumer(delivery)``, called
        from ``data_received`` (it must not block)."""
        tag = f"ctag{self.number}.{len(self._consumers) + 1}"
        self._consumers[tag] = consumer  # before the first delivery can arrive
        await self.rpc("basic.consume", "basic.consume_ok", queue=queue, consumer_tag=tag,
                       no_ack=no_ack)
        return tag

    # -- messages ------------------------------------------------------------------------
    def publish(self, exchange: str, routing_key: str, properties: bytes,
                body: bytes) -> asyncio.Future[None] | None:
        """Queue a message for the socket; on a confirming channel, the future the
        broker's confirm resolves (:class:`Nacked` if it refuses the message,
        :class:`ConnectionClosed` if the connection goes first)."""
        conn = self.conn
        conn.send(wire.publish_frames(self.number, exchange, routing_key, properties, body,
                                      conn.frame_max))
        if not self.confirming:
            return None
        self._published += 1
        fut: asyncio.Future[None] = conn.loop.create_future()
        self._unconfirmed[self._published] = fut
        return fut

    def ack(self, delivery_tag: int) -> None:
        self.conn.send(wire.ack_frame(self.number, delivery_tag))

    def reject(self, delivery_tag: int, requeue: bool) -> None:
        self.conn.send(wire.method_frame(self.number, "basic.reject", delivery_tag=delivery_tag,
                                         requeue=requeue))

    # -- frames in -----------------------------------------------------------------------
    def on_method(self, payload: bytes) -> None:
        ids = payload[:4]
        if ids == _DELIVER:
            deliver = wire.decode_deliver(payload)
            self._incoming = (deliver, self._consumers.get(deliver.consumer_tag))
            return
        if ids == _ACK or ids == _NACK:
            tag, multiple = wire.decode_ack(payload)
            self._confirmed(tag, multiple, None if ids == _ACK else Nacked("basic.nack"))
            return
        name, args = wire.decode_method(payload)
        if self._waiting is not None and name == self._waiting[0]:
            if not self._waiting[1].done():
                self._waiting[1].set_result(args)
        elif name == "channel.close":  # the whole connection goes, and comes back whole
            self.conn.fail(ConnectionClosed(
                f"channel {self.number} closed by the broker: {args['reply_code']} "
                f"{args['reply_text']} (method {args['class_id']}.{args['method_id']})"))
        elif name == "basic.cancel":  # our queue was deleted under a consumer
            LOG.warning("the broker cancelled consumer %s; reconnecting to consume again",
                        args["consumer_tag"])
            self.conn.fail(ConnectionClosed(f"consumer {args['consumer_tag']} cancelled"))
        elif name == "channel.flow":
            self.conn.send(wire.method_frame(self.number, "channel.flow_ok",
                                             active=args["active"]))
        elif name == "basic.return":
            LOG.warning("message to %s returned: %s", args["routing_key"], args["reply_text"])
        else:
            LOG.debug("ignoring %s on channel %d", name, self.number)

    def on_header(self, payload: bytes) -> None:
        if self._incoming is None:
            raise wire.FrameError("content header without a basic.deliver")
        self._expected, self._properties = wire.decode_content_header(payload)
        self._chunks = []
        if self._expected == 0:
            self._delivered(b"")

    def on_body(self, payload: bytes) -> None:
        if self._incoming is None:
            raise wire.FrameError("body frame without a basic.deliver")
        self._chunks.append(payload)
        self._expected -= len(payload)
        if self._expected <= 0:
            self._delivered(self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks))

    def _delivered(self, body: bytes) -> None:
        assert self._incoming is not None
        deliver, consumer = self._incoming
        self._incoming = None
        self._chunks = []
        if consumer is None:
            LOG.warning("delivery for unknown consumer %s dropped", deliver.consumer_tag)
            return
        consumer(Delivery(self, deliver.delivery_tag, deliver.redelivered, deliver.exchange,
                          deliver.routing_key, self._properties, body))

    def _confirmed(self, tag: int, multiple: bool, error: Exception | None) -> None:
        tags = [t for t in self._unconfirmed if t <= tag] if multiple else [tag]
        for t in tags:
            fut = self._unconfirmed.pop(t, None)
            if fut is not None and not fut.done():
                if error is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(error)

    def lost(self, exc: Exception) -> None:
        if self._waiting is not None and not self._waiting[1].done():
            self._waiting[1].set_exception(exc)
        for fut in self._unconfirmed.values():
            if not fut.done():
                fut.set_exception(exc)
        self._unconfirmed.clear()


_DELIVER = bytes((0, 60, 0, 60))
_ACK = bytes((0, 60, 0, 80))
_NACK = bytes((0, 60, 0, 120))
