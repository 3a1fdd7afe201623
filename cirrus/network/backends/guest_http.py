"""The HTTP/1.1 a metadata client speaks, served on an asyncio stream.

Enough for cloud-init, curl, wget and busybox: a request line with an
origin-form target, headers, a ``Content-Length`` body, keep-alive. Anything
else is answered with a 4xx and the connection closed; no input raises.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Awaitable, Callable

LOG = logging.getLogger(__name__)
MAX_HEAD = 16 * 1024
MAX_BODY = 64 * 1024
IDLE_SECONDS = 30.0
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE"})
REASONS = {200: "OK", 204: "No Content", 400: "Bad Request", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
           411: "Length Required", 413: "Payload Too Large", 502: "Bad Gateway"}


@dataclass(frozen=True)
class GuestRequest:
    method: str
    target: str  # origin-form: "/path?query"
    peer: str
    body: bytes = b""
    content_type: str = ""
    keep_alive: bool = True


@dataclass(frozen=True)
class GuestResponse:
    status: int
    body: bytes
    content_type: str = "text/plain"


class BadRequest(Exception):
    """The request cannot be served; ``status`` says how to refuse it."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


Handler = Callable[[GuestRequest], Awaitable[GuestResponse]]


def valid_target(target: str) -> bool:
    """An origin-form path with no dot segments (which a client library would
    resolve to a path outside the metadata API)."""
    if not target.startswith("/") or target.startswith("//"):
        return False
    path = target.split("?", 1)[0]
    return not any(seg in (".", "..") for seg in path.split("/")) and target.isprintable()


def parse_head(head: bytes, peer: str) -> tuple[GuestRequest, int]:
    """The request of ``head`` (without its body) and its body's length."""
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise BadRequest(400, "malformed request line") from None
    if method not in METHODS or not version.startswith("HTTP/1."):
        raise BadRequest(405 if version.startswith("HTTP/1.") else 400, "unsupported request")
    if not valid_target(target):
        raise BadRequest(400, "bad request target")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, sep, value = line.partition(":")
            if not sep:
                raise BadRequest(400, "malformed header")
            headers[name.strip().lower()] = value.strip()
    if "transfer-encoding" in headers:
        raise BadRequest(411, "chunked bodies are not supported")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise BadRequest(400, "bad Content-Length") from None
    if not 0 <= length <= MAX_BODY:
        raise BadRequest(413, "body too large")
    connection = headers.get("connection", "").lower()
    keep = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
    return GuestRequest(method, target, peer, b"", headers.get("content-type", ""), keep), length


def render(resp: GuestResponse, keep_alive: bool, head_only: bool = False) -> bytes:
    """``resp`` as HTTP/1.1 bytes."""
    reason = REASONS.get(resp.status, "Unknown")
    head = (f"HTTP/1.1 {resp.status} {reason}\r\nContent-Type: {resp.content_type}\r\n"
            f"Content-Length: {len(resp.body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n")
    return head.encode("latin-1") + (b"" if head_only else resp.body)


async def read_request(reader: asyncio.StreamReader, peer: str) -> GuestRequest | None:
    """The next request on the connection; None when the client is done."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial.strip():
            raise BadRequest(400, "incomplete request") from None
        return None
    except asyncio.LimitOverrunError:
        raise BadRequest(400, "request head too large") from None
    req, length = parse_head(head[:-4], peer)
    body = await reader.readexactly(length) if length else b""
    return GuestRequest(req.method, req.target, peer, body, req.content_type, req.keep_alive)


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           handler: Handler) -> None:
    """Answer requests on one connection until it closes, idles or errs."""
    peer = str((writer.get_extra_info("peername") or ("",))[0])
    try:
        while True:
            try:
                req = await asyncio.wait_for(read_request(reader, peer), IDLE_SECONDS)
            except BadRequest as e:
                writer.write(render(GuestResponse(e.status, f"{e}\n".encode()), False))
                break
            if req is None:
                break
            resp = await handler(req)
            writer.write(render(resp, req.keep_alive, req.method == "HEAD"))
            await writer.drain()
            if not req.keep_alive:
                break
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
        pass  # the client went away or went quiet
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except ConnectionError:
            pass
