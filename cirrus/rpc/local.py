"""Local transport: the processes of one ``cirrus up`` on one machine, over a Unix socket.

One process is the *hub* (the engine: conductor, scheduler, computes). Its own
listeners get messages as on the in-process bus; other processes (the API
workers) connect to its socket as *peers*, send casts, calls and fan-outs
through it, and may listen too — the hub routes to them like to its own.

A frame is a 4-byte big-endian length and a JSON body (``codec``). Frames a
connection sends in one loop iteration leave in one write: under load a
worker sends hundreds of small messages a second, and a system call each
would cost more than their encoding.

Delivery is at most once, as on the in-process bus: a cast to a topic nobody
consumes is dropped with a warning, a call whose peer goes away fails at once
with :class:`ConnectionLost`. The processes live and die together (``cirrus
up`` supervises them), so nothing is kept to be redelivered.
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import logging
import os
import struct
from typing import Any, Callable

from cirrus.rpc.codec import decode, encode
from cirrus.rpc.inprocess import Routes
from cirrus.rpc.transport import ConnectionLost, Handler, Message, MessagingTimeout, Transport
from cirrus.utils import Supervisor

LOG = logging.getLogger(__name__)
_LENGTH = struct.Struct(">I")
CONNECT_TIMEOUT = 30.0


class _Link(asyncio.Protocol):
    """One socket: frames in to ``on_frame``, frames out coalesced per loop iteration."""

    def __init__(self, on_frame: Callable[["_Link", dict[str, Any]], None],
                 on_lost: Callable[["_Link"], None]) -> None:
        self.on_frame = on_frame
        self.on_lost = on_lost
        self.transport: asyncio.Transport | None = None
        self.closed = asyncio.get_running_loop().create_future()
        self._inbox = bytearray()
        self._outbox: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, frame: dict[str, Any]) -> None:
        """Queue ``frame``; TypeError (nothing queued) if it is not JSON-safe."""
        if self.transport is None or self.transport.is_closing():
            raise ConnectionLost("the local bus connection is closed")
        body = encode(frame)
        if not self._outbox:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outbox.append(_LENGTH.pack(len(body)))
        self._outbox.append(body)

    def _flush(self) -> None:
        out, self._outbox = self._outbox, []
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"".join(out))

    def data_received(self, data: bytes) -> None:
        inbox = self._inbox
        inbox += data
        start = 0
        while len(inbox) - start >= 4:
            (size,) = _LENGTH.unpack_from(inbox, start)
            end = start + 4 + size
            if len(inbox) < end:
                break
            try:
                frame = decode(inbox[start + 4:end])
            except ValueError:
                LOG.error("malformed frame on the local bus; closing the connection")
                self.close()
                return
            start = end
            self.on_frame(self, frame)
        del inbox[:start]

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        if not self.closed.done():
            self.closed.set_result(None)
        self.on_lost(self)


class _Peer:
    """Where the hub sends what a peer's listener should handle."""

    __slots__ = ("link", "handler_id")

    def __init__(self, link: _Link, handler_id: int) -> None:
        self.link = link
        self.handler_id = handler_id


Target = Handler | _Peer


class LocalTransport(Transport):
    """The hub (``hub=True``: serves ``path``) or a peer (connects to it)."""

    at_most_once = True  # nothing is kept to be redelivered (the module's doc)

    def __init__(self, path: str, hub: bool = False) -> None:
        self.path = path
        self.hub = hub
        self._server: asyncio.AbstractServer | None = None
        self._link: _Link | None = None  # a peer's connection to the hub
        self._links: set[_Link] = set()  # the hub's peers
        self._routes: Routes[Target] = Routes()  # the hub's
        self._handlers: list[Handler] = []  # a peer's listeners, by id
        self._calls: dict[int, tuple[asyncio.Future[Any], _Link]] = {}
        self._ids = itertools.count(1)
        self._stopping = False
        self._tasks = Supervisor()  # deliveries being handled, calls being answered

    # -- life cycle ------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if self.hub:
            if os.path.exists(self.path):
                os.unlink(self.path)  # left by a process that died; we own this path
            self._server = await loop.create_unix_server(self._accept, self.path)
            os.chmod(self.path, 0o600)
            return
        deadline = loop.time() + CONNECT_TIMEOUT
        while True:  # the hub may still be starting
            try:
                _, self._link = await loop.create_unix_connection(
                    lambda: _Link(self._on_frame, self._on_lost), self.path)
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ECONNREFUSED) or loop.time() > deadline:
                    raise MessagingTimeout(f"no local bus at {self.path}: {exc}") from exc
                await asyncio.sleep(0.05)

    def _accept(self) -> _Link:
        link = _Link(self._on_frame, self._on_lost)
        self._links.add(link)  # closed when the hub stops
        return link

    async def stop(self) -> None:
        self._stopping = True
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        for link in list(self._links) + ([self._link] if self._link else []):
            link.close()
        self._fail_calls(lambda _link: True, MessagingTimeout("transport stopped"))
        self._routes.clear()
        await self._tasks.stop()

    async def wait_lost(self) -> None:
        """Return when a peer's connection to the hub is gone."""
        assert self._link is not None, "only a peer has a hub to lose"
        await self._link.closed

    def _on_lost(self, link: _Link) -> None:
        self._links.discard(link)
        self._routes.remove(lambda t: isinstance(t, _Peer) and t.link is link)
        self._fail_calls(lambda held: held is link,
                         ConnectionLost("the other end of the local bus went away"))
        if link is self._link and not self._stopping:
            LOG.error("lost the local bus at %s", self.path)

    def _fail_calls(self, which: Callable[[_Link], bool], exc: Exception) -> None:
        for cid, (fut, link) in list(self._calls.items()):
            if which(link) and not fut.done():
                fut.set_exception(exc)

    # -- the Transport interface ----------------------------------------------------
    async def listen(self, topic: str, server: str | None, handler: Handler) -> None:
        if self.hub:
            self._routes.add(topic, server, handler)
            return
        self._handlers.append(handler)
        self._peer_link().send({"op": "listen", "topic": topic, "server": server,
                                "handler": len(self._handlers) - 1})

    async def cast(self, topic: str, server: str | None, message: Message) -> None:
        if not self.hub:
            self._peer_link().send({"op": "cast", "topic": topic, "server": server,
                                    "msg": message})
            return
        self._route_cast(topic, server, decode(encode(message)))

    async def call(self, topic: str, server: str | None, message: Message,
                   timeout: float) -> Any:
        if not self.hub:
            link = self._peer_link()
            frame = {"op": "call", "topic": topic, "server": server, "msg": message,
                     "timeout": timeout}
            return await self._await_reply(link, frame, timeout, topic, message)
        return decode(encode(await self._route_call(topic, server, decode(encode(message)),
                                                    timeout)))

    async def fanout(self, topic: str, message: Message) -> None:
        if not self.hub:
            self._peer_link().send({"op": "fanout", "topic": topic, "msg": message})
            return
        self._route_fanout(topic, decode(encode(message)))

    # -- the hub's routing ------------------------------------------------------------
    def _route_cast(self, topic: str, server: str | None, message: Message) -> None:
        try:
            target = self._routes.pick(topic, server)
        except MessagingTimeout:
            # As on the in-process bus: lost, and the periodic tasks clean up after it.
            LOG.warning("cast to %s.%s dropped: no consumer", topic, server)
            return
        self._deliver(target, message, f"cast:{topic}:{message.get('method')}")

    def _route_fanout(self, topic: str, message: Message) -> None:
        for target in self._routes.fanout(topic):
            self._deliver(target, message, f"fanout:{topic}")

    def _deliver(self, target: Target, message: Message, name: str) -> None:
        if isinstance(target, _Peer):
            try:
                target.link.send({"op": "deliver", "handler": target.handler_id, "msg": message})
            except ConnectionLost:
                LOG.warning("%s dropped: its consumer went away", name)
            return
        self._tasks.spawn(target(message), name=name)

    async def _route_call(self, topic: str, server: str | None, message: Message,
                          timeout: float) -> Any:
        target = self._routes.pick(topic, server)
        if isinstance(target, _Peer):
            frame = {"op": "deliver", "handler": target.handler_id, "msg": message}
            return await self._await_reply(target.link, frame, timeout, topic, message)
        try:
            return await asyncio.wait_for(target(message), timeout)
        except asyncio.TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {topic} {message.get('method')}") from exc

    async def _await_reply(self, link: _Link, frame: dict[str, Any], timeout: float,
                           topic: str, message: Message) -> Any:
        """Send ``frame`` as a call on ``link`` and wait for its reply."""
        cid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._calls[cid] = (fut, link)
        try:
            link.send({**frame, "cid": cid})
            return await asyncio.wait_for(fut, timeout)
        except MessagingTimeout:
            raise  # ConnectionLost (a TimeoutError too): already says why
        except asyncio.TimeoutError as exc:
            raise MessagingTimeout(
                f"timed out after {timeout}s waiting for {topic} {message.get('method')}") from exc
        finally:
            self._calls.pop(cid, None)

    # -- frames ------------------------------------------------------------------------
    def _on_frame(self, link: _Link, frame: dict[str, Any]) -> None:
        op = frame.get("op")
        if op == "reply" or op == "failed":
            held = self._calls.get(frame.get("cid", 0))
            if held is not None and not held[0].done():
                if op == "reply":
                    held[0].set_result(frame.get("reply"))
                else:
                    held[0].set_exception(MessagingTimeout(frame.get("error", "call failed")))
        elif op == "deliver" and not self.hub:
            self._on_delivery(link, frame)
        elif self.hub and op in ("cast", "call", "fanout", "listen"):
            self._on_request(link, frame)
        else:
            LOG.error("unexpected frame %r on the local bus", op)

    def _on_request(self, link: _Link, frame: dict[str, Any]) -> None:
        """A peer's request to the hub."""
        op, topic, message = frame["op"], frame.get("topic", ""), frame.get("msg") or {}
        if op == "listen":
            self._routes.add(topic, frame.get("server"), _Peer(link, frame["handler"]))
        elif op == "cast":
            self._route_cast(topic, frame.get("server"), message)
        elif op == "fanout":
            self._route_fanout(topic, message)
        else:
            self._tasks.spawn(self._answer(link, frame["cid"], self._route_call(
                topic, frame.get("server"), message, float(frame.get("timeout", 60)))),
                name=f"call:{topic}:{message.get('method')}")

    def _on_delivery(self, link: _Link, frame: dict[str, Any]) -> None:
        """The hub hands a peer's listener a message (a call if it has a ``cid``)."""
        handler = self._handlers[frame["handler"]]
        message = frame.get("msg") or {}
        if "cid" in frame:
            self._tasks.spawn(self._answer(link, frame["cid"], handler(message)),
                  name=f"call:{message.get('method')}")
        else:
            self._tasks.spawn(handler(message), name=f"cast:{message.get('method')}")

    async def _answer(self, link: _Link, cid: int, work: Any) -> None:
        try:
            reply = {"op": "reply", "cid": cid, "reply": await work}
        except MessagingTimeout as exc:
            reply = {"op": "failed", "cid": cid, "error": str(exc)}
        except Exception as exc:  # noqa: BLE001 - the dispatcher replies with errors; this is not it
            LOG.exception("call %s failed on the local bus", cid)
            reply = {"op": "failed", "cid": cid, "error": f"call failed: {exc!r}"}
        try:
            link.send(reply)
        except ConnectionLost:
            LOG.info("reply to call %s not sent: its caller went away", cid)

    def _peer_link(self) -> _Link:
        if self._link is None or self._link.transport is None:
            raise ConnectionLost(f"not connected to the local bus at {self.path}")
        return self._link
