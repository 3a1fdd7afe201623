"""The serial console's websocket proxy (``nova-serialproxy``).

A client opens ``ws://<proxy>/?token=…`` (the URL ``remote-consoles`` gave
it; the token may come as a cookie, as noVNC-style clients send it). The
proxy checks the token against the console auth tokens, connects to the
guest's serial port on its host (a TCP socket the hypervisor listens on) and
relays bytes both ways until either side closes.

Costs are bounded per connection: frames of at most ``MAX_FRAME`` bytes, at
most ``max_connections`` open at once (more are refused with 1013, try again
later), and a connection that opened with a bad token is closed at once.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from cirrus.console import netns, tokens
from cirrus.db.engine import Database
from cirrus.utils import spawn

LOG = logging.getLogger(__name__)
MAX_FRAME = 64 * 1024
READ_CHUNK = 4096


def token_of(path: str, cookie_header: str | None) -> str:
    """The token of a request: ``?token=`` in its path, else a ``token`` cookie."""
    query = parse_qs(urlsplit(path).query)
    if query.get("token"):
        return query["token"][0]
    if cookie_header:
        jar = SimpleCookie()
        with contextlib.suppress(CookieError):
            jar.load(cookie_header)
        if "token" in jar:
            return jar["token"].value
    return ""


class SerialProxy:
    """The proxy's listener; ``port`` is known once :meth:`start` returned."""

    def __init__(self, db: Database, host: str, port: int, max_connections: int = 256) -> None:
        self.db = db
        self.host = host
        self.port = port
        self.max_connections = max_connections
        self._open = 0
        self._server: Server | None = None

    async def start(self) -> None:
        # "binary" is what noVNC-era clients ask for; bytes go as binary frames.
        self._server = await serve(self._handle, self.host, self.port, subprotocols=[Subprotocol("binary")],
                                   max_size=MAX_FRAME, ping_interval=None)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, ws: ServerConnection) -> None:
        if self._open >= self.max_connections:
            await ws.close(1013, "too many console connections")
            return
        self._open += 1
        try:
            await self._proxy(ws)
        finally:
            self._open -= 1

    async def _proxy(self, ws: ServerConnection) -> None:
        request = ws.request
        token = token_of(request.path, request.headers.get("Cookie")) if request else ""
        info = await self.db.read(tokens.validate, token)
        if info is None or info.console_type != "serial":
            await ws.close(1008, "the console token is invalid or has expired")
            return
        try:
            reader, writer = await netns.open_connection(info.host, info.port, info.netns)
        except OSError as error:
            LOG.warning("serial console of %s at %s:%s unreachable: %s", info.instance_uuid,
                        info.host, info.port, error)
            await ws.close(1011, "the console is not reachable")
            return
        try:
            await _relay(ws, reader, writer)
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


async def _relay(ws: ServerConnection, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
    """Bytes both ways until either side ends; then the other is stopped."""
    async def to_guest() -> None:
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                writer.write(message.encode() if isinstance(message, str) else message)
                await writer.drain()

    async def to_client() -> None:
        with contextlib.suppress(ConnectionClosed):
            while data := await reader.read(READ_CHUNK):
                await ws.send(data)

    tasks = [spawn(to_guest(), "serial-console:in", awaited=True),
             spawn(to_client(), "serial-console:out", awaited=True)]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await ws.close()
