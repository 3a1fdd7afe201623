"""How the metadata proxy reaches the metadata API.

:class:`HttpForwarder` keeps a few keep-alive connections to the API
(``metadata_url``) and speaks just the HTTP/1.1 the proxy needs: a request
written at once, a response framed by ``Content-Length`` (or chunked, or
ended by the server closing). A general client library costs ~10× the CPU per
request, which on a busy host is most of a metadata request's time
(``docs/performance.md``). :class:`AsgiForwarder` calls an ASGI app in this
process instead (the API beside the proxy; tests).
"""
from __future__ import annotations

import asyncio
import ssl
from typing import Any, Protocol
from urllib.parse import urlsplit

from cirrus.network.backends.guest_http import GuestResponse

StreamPair = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class ForwardError(Exception):
    """The metadata API could not be reached or answered garbage."""


class Forwarder(Protocol):
    async def forward(self, method: str, target: str, headers: dict[str, str],
                      body: bytes) -> GuestResponse:
        """The API's answer to ``method target`` (target under the metadata
        API, ``/openstack/…``); :class:`ForwardError` when there is none."""

    async def close(self) -> None:
        """Drop any connection held."""


class _Stale(Exception):
    """A kept connection the server had closed: nothing was answered."""


class HttpForwarder:
    """Keep-alive HTTP/1.1 to ``base_url`` (``http://`` or ``https://``)."""

    def __init__(self, base_url: str, timeout: float = 30.0, keep: int = 8) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"metadata URL {base_url!r} is not an http(s) URL")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl.create_default_context() if parts.scheme == "https" else None
        self.prefix = parts.path.rstrip("/")
        self.netloc = parts.netloc
        self.timeout = timeout
        self.keep = keep
        self._idle: list[StreamPair] = []

    async def forward(self, method: str, target: str, headers: dict[str, str],
                      body: bytes) -> GuestResponse:
        request = self._render(method, target, headers, body)
        for attempt in range(2):
            conn, reused = await self._take()
            try:
                resp, keep = await asyncio.wait_for(
                    self._exchange(conn, request, method == "HEAD", reused), self.timeout)
            except _Stale:
                _drop(conn)
                if attempt == 0:
                    continue  # the server closed it while idle; a fresh one will do
                raise ForwardError("the metadata API closes every connection") from None
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                    asyncio.LimitOverrunError, ValueError) as e:
                _drop(conn)
                raise ForwardError(f"metadata API at {self.netloc}: {e!r}") from e
            if keep and len(self._idle) < self.keep:
                self._idle.append(conn)
            else:
                _drop(conn)
            return resp
        raise ForwardError("unreachable")  # pragma: no cover - the loop returns or raises

    async def close(self) -> None:
        while self._idle:
            _drop(self._idle.pop())

    def _render(self, method: str, target: str, headers: dict[str, str], body: bytes) -> bytes:
        lines = [f"{method} {self.prefix}{target} HTTP/1.1", f"Host: {self.netloc}",
                 *(f"{k}: {v}" for k, v in headers.items()), f"Content-Length: {len(body)}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _take(self) -> tuple[StreamPair, bool]:
        if self._idle:
            return self._idle.pop(), True
        try:
            pair = await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=self.ssl), self.timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise ForwardError(f"metadata API at {self.netloc}: {e!r}") from e
        return pair, False

    async def _exchange(self, conn: StreamPair, request: bytes, head_only: bool,
                        reused: bool) -> tuple[GuestResponse, bool]:
        reader, writer = conn
        writer.write(request)
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError as e:
            if reused and not e.partial:
                raise _Stale() from None
            raise
        status, fields = _parse_head(head)
        keep = fields.get("connection", "").lower() != "close"
        if head_only or status in (204, 304):
            body = b""
        elif "chunked" in fields.get("transfer-encoding", "").lower():
            body = await _read_chunked(reader)
        elif "content-length" in fields:
            body = await reader.readexactly(int(fields["content-length"]))
        else:
            body, keep = await reader.read(), False
        return GuestResponse(status, body, fields.get("content-type", "text/plain")), keep


def _parse_head(head: bytes) -> tuple[int, dict[str, str]]:
    """(status, lower-cased headers) of a response head; ValueError if garbled."""
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1."):
        raise ValueError(f"not an HTTP response: {lines[0][:40]!r}")
    status = int(lines[0][9:12])
    fields = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return status, fields


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers from the API: just the end
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def _drop(conn: StreamPair) -> None:
    conn[1].close()


class AsgiForwarder:
    """Calls the metadata API's ASGI app (mounted at ``prefix``) in process."""

    def __init__(self, app: Any, prefix: str = "/metadata") -> None:
        self.app = app
        self.prefix = prefix

    async def forward(self, method: str, target: str, headers: dict[str, str],
                      body: bytes) -> GuestResponse:
        path, _, query = f"{self.prefix}{target}".partition("?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": query.encode(), "root_path": "", "server": ("local", 80),
                 "client": (headers.get("X-Forwarded-For", ""), 0),
                 "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
        sent: dict[str, Any] = {"status": 500, "headers": [], "body": bytearray()}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                sent["status"], sent["headers"] = message["status"], message.get("headers", [])
            elif message["type"] == "http.response.body":
                sent["body"] += message.get("body", b"")
        await self.app(scope, receive, send)
        fields = {k.decode().lower(): v.decode() for k, v in sent["headers"]}
        return GuestResponse(sent["status"], bytes(sent["body"]),
                             fields.get("content-type", "text/plain"))

    async def close(self) -> None:
        """Nothing held."""
