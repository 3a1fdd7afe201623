"""One AMQP 0-9-1 connection on an asyncio protocol, and its channels.

Frames are parsed in ``data_received`` and handled there: a delivery goes to
its consumer's callback once its body is whole, a publisher confirm resolves
the publish's future, a method a caller waits for (``queue.declare_ok``)
resolves that wait. What is sent in one loop iteration leaves in one write
(as the local bus does): under load a process acks, publishes and confirms
hundreds of messages a second, and a system call each would cost more than
the framing.

A connection is not reopened: when it is lost (socket closed, heartbeats
missed, a close from the broker, or a channel closed by the broker — cirrus
treats that as a fault of the whole session), every wait fails with
:class:`ConnectionClosed` and ``on_lost`` is called once. The transport
above makes a new one. The channels are in ``channel``.
"""
from __future__ import annotations

import asyncio
import logging
import urllib.parse
from dataclasses import dataclass
from typing import Callable

from cirrus.rpc.amqp import wire
from cirrus.rpc.amqp.channel import Channel, ConnectionClosed, Delivery, Nacked

LOG = logging.getLogger(__name__)
CHANNEL_MAX = 16  # cirrus opens two
FRAME_MAX = 131072  # RabbitMQ's default
__all__ = ["Channel", "Connection", "ConnectionClosed", "Delivery", "Nacked", "Params"]


@dataclass(frozen=True)
class Params:
    """Where and how to connect: ``amqp://user:password@host:port/vhost?heartbeat=60``."""

    host: str = "127.0.0.1"
    port: int = 5672
    user: str = "guest"
    password: str = "guest"
    vhost: str = "/"
    heartbeat: int = 60

    @classmethod
    def from_url(cls, url: str) -> "Params":
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "amqp":
            raise ValueError(f"not an amqp:// URL: {parts.scheme}://")
        query = urllib.parse.parse_qs(parts.query)
        path = parts.path[1:] if parts.path.startswith("/") else parts.path
        return cls(host=parts.hostname or "127.0.0.1", port=parts.port or 5672,
                   user=urllib.parse.unquote(parts.username or "guest"),
                   password=urllib.parse.unquote(parts.password or "guest"),
                   vhost=urllib.parse.unquote(path) or "/",
                   heartbeat=int(query.get("heartbeat", ["60"])[0]))


LostCallback = Callable[["Connection", Exception], None]


class Connection(asyncio.Protocol):
    """The socket to the broker: handshake, heartbeats, frames to their channels."""

    def __init__(self, params: Params, on_lost: LostCallback) -> None:
        self.params = params
        self.on_lost = on_lost
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.frame_max = wire.FRAME_MIN_SIZE
        self.heartbeat = 0
        self.channels: dict[int, Channel] = {}
        self.opened: asyncio.Future[None] = self.loop.create_future()
        self.closed: asyncio.Future[None] = self.loop.create_future()
        self.unblocked = asyncio.Event()  # cleared while the broker blocks publishers
        self.unblocked.set()
        self.is_closed = False
        self._reader = wire.FrameReader()
        self._outbox: list[bytes] = []
        self._received = self._sent = 0.0  # loop times, for heartbeats
        self._beat: asyncio.TimerHandle | None = None
        self._error: Exception | None = None

    @classmethod
    async def open(cls, params: Params, on_lost: LostCallback,
                   timeout: float = 10.0) -> "Connection":
        """Connect and complete the handshake; OSError or ConnectionClosed if either fails."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout):
            _, conn = await loop.create_connection(lambda: cls(params, on_lost),
                                                   params.host, params.port)
            try:
                await asyncio.shield(conn.opened)
            except BaseException:
                conn.abort()
                raise
        return conn

    async def channel(self, number: int) -> Channel:
        channel = self.channels[number] = Channel(self, number)
        await channel.open()
        return channel

    # -- writing ---------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        """Queue ``data`` for this loop iteration's write; ConnectionClosed if gone."""
        if self.is_closed:
            raise ConnectionClosed(f"connection to the broker closed: {self._error}")
        if not self._outbox:
            self.loop.call_soon(self._flush)
        self._outbox.append(data)

    def _flush(self) -> None:
        out, self._outbox = self._outbox, []
        if self.transport is not None and not self.is_closed:
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))
            self._sent = self.loop.time()

    # -- asyncio.Protocol ------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.write(wire.PROTOCOL_HEADER)  # type: ignore[attr-defined]
        self._received = self._sent = self.loop.time()

    def data_received(self, data: bytes) -> None:
        self._received = self.loop.time()
        try:
            for kind, number, payload in self._reader.feed(data):
                if number == 0:
                    if kind == wire.FRAME_METHOD:
                        self._on_connection_method(payload)
                    continue  # heartbeats: their arrival is all they say
                channel = self.channels.get(number)
                if channel is None:
                    raise wire.FrameError(f"frame for channel {number}, never opened")
                if kind == wire.FRAME_METHOD:
                    channel.on_method(payload)
                elif kind == wire.FRAME_HEADER:
                    channel.on_header(payload)
                elif kind == wire.FRAME_BODY:
                    channel.on_body(payload)
                if self.is_closed:
                    return
        except wire.FrameError as exc:
            LOG.error("malformed frame from the broker (%s); closing the connection", exc)
            self.fail(ConnectionClosed(f"malformed frame: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost(ConnectionClosed(f"connection to the broker lost: {exc or 'closed'}"))

    def pause_writing(self) -> None:
        LOG.debug("the broker's socket is full; writes buffered")

    def resume_writing(self) -> None:
        LOG.debug("the broker's socket drains again")

    # -- channel 0 ---------------------------------------------------------------------
    def _on_connection_method(self, payload: bytes) -> None:
        name, args = wire.decode_method(payload)
        if name == "connection.start":
            self._start_ok(args)
        elif name == "connection.tune":
            self._tune_ok(args)
        elif name == "connection.open_ok":
            self._start_heartbeats()
            if not self.opened.done():
                self.opened.set_result(None)
        elif name == "connection.close":
            self._write_now(wire.method_frame(0, "connection.close_ok"))
            self.fail(ConnectionClosed(f"closed by the broker: {args['reply_code']} "
                                       f"{args['reply_text']}"))
        elif name == "connection.close_ok":
            self.abort()
        elif name == "connection.blocked":
            LOG.warning("the broker blocks publishing: %s", args["reason"])
            self.unblocked.clear()
        elif name == "connection.unblocked":
            LOG.warning("the broker accepts publishing again")
            self.unblocked.set()

    def _start_ok(self, args: wire.Arguments) -> None:
        if b"PLAIN" not in bytes(args["mechanisms"]).split():
            self.fail(ConnectionClosed(f"the broker offers no PLAIN login: {args['mechanisms']}"))
            return
        p = self.params
        self.send(wire.method_frame(
            0, "connection.start_ok", mechanism="PLAIN", locale="en_US",
            response=b"\0" + p.user.encode() + b"\0" + p.password.encode(),
            client_properties={"product": "cirrus", "capabilities": {
                "publisher_confirms": True, "consumer_cancel_notify": True,
                "connection.blocked": True, "basic.nack": True}}))

    def _tune_ok(self, args: wire.Arguments) -> None:
        server_beat, ours = int(args["heartbeat"]), self.params.heartbeat
        # The lower of the two non-zero proposals (0 on either side means "none").
        self.heartbeat = min(server_beat, ours) if server_beat and ours else 0
        self.frame_max = min(int(args["frame_max"]) or FRAME_MAX, FRAME_MAX)
        channel_max = min(int(args["channel_max"]) or CHANNEL_MAX, CHANNEL_MAX)
        self.send(wire.method_frame(0, "connection.tune_ok", channel_max=channel_max,
                                    frame_max=self.frame_max, heartbeat=self.heartbeat))
        self.send(wire.method_frame(0, "connection.open", virtual_host=self.params.vhost))

    def _start_heartbeats(self) -> None:
        if self.heartbeat:
            self._beat = self.loop.call_later(self.heartbeat / 2, self._heartbeat)

    def _heartbeat(self) -> None:
        """Every half interval: send one if nothing else went; the broker is dead
        after two intervals of silence."""
        now = self.loop.time()
        if now - self._received > 2 * self.heartbeat:
            LOG.warning("no heartbeat from the broker for %ss", 2 * self.heartbeat)
            self.fail(ConnectionClosed("missed heartbeats"))
            return
        if now - self._sent >= self.heartbeat / 2:
            self._write_now(wire.HEARTBEAT_FRAME)
        self._beat = self.loop.call_later(self.heartbeat / 2, self._heartbeat)

    # -- closing -----------------------------------------------------------------------
    async def close(self, timeout: float = 2.0) -> None:
        """Close cleanly (``connection.close``, then its ``close_ok``)."""
        if self.is_closed:
            return
        try:
            self.send(wire.method_frame(0, "connection.close", reply_code=200,
                                        reply_text="bye"))
            async with asyncio.timeout(timeout):
                await asyncio.shield(self.closed)
        except (ConnectionClosed, TimeoutError):
            pass
        finally:
            self.abort()

    def fail(self, exc: Exception) -> None:
        """End the connection because of ``exc``: every wait on it fails with it."""
        self._lost(exc)
        if self.transport is not None:
            self.transport.close()  # flushes what was written (a close_ok) first

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
        self._lost(ConnectionClosed("connection closed"))

    def _write_now(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
            self._sent = self.loop.time()

    def _lost(self, exc: Exception) -> None:
        if self.is_closed:
            return
        self.is_closed = True
        self._error = exc
        self._outbox.clear()
        if self._beat is not None:
            self._beat.cancel()
        for channel in self.channels.values():
            channel.lost(exc)
        self.unblocked.set()  # publishers waiting on it find the connection gone
        if not self.opened.done():
            self.opened.set_exception(exc)
            self.opened.exception()  # retrieved: open() raises it, or nobody waits
        if not self.closed.done():
            self.closed.set_result(None)
        self.on_lost(self, exc)
