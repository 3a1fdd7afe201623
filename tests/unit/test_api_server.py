"""ApiProtocol: each response written in one call, and HTTP/1.1 unchanged.

The table tests :class:`_HeldHead` alone; the rest runs uvicorn with the
protocol on a loopback port and speaks raw HTTP/1.1 to it.
"""
from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from cirrus.api.server import ApiProtocol, _HeldHead

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class Recording:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def writelines(self, data: tuple[bytes, ...]) -> None:
        self.writes.append(b"".join(data))  # one call: one write

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


@pytest.mark.parametrize("writes, flush, expected", [
    ([HEAD, b"ok"], False, [HEAD + b"ok"]),                      # head and body: one write
    ([HEAD], True, [HEAD]),                                       # HEAD, 204: flushed at the end
    ([HEAD, b"a", b"b"], False, [HEAD + b"a", b"b"]),             # a stream: later chunks as they come
    ([b"HTTP/1.1 100 Continue\r\n\r\n", HEAD, b"ok"], False,      # 100 goes out at once
     [b"HTTP/1.1 100 Continue\r\n\r\n", HEAD + b"ok"]),
    ([HEAD, b"ok"], True, [HEAD + b"ok"]),                        # nothing left to flush
])
def test_the_head_waits_for_the_body(writes: list[bytes], flush: bool,
                                     expected: list[bytes]) -> None:
    transport = Recording()
    held = _HeldHead(transport)  # type: ignore[arg-type]
    for data in writes:
        held.write(data)
    if flush:
        held.flush()
    assert transport.writes == expected


def test_closing_writes_the_held_head_first() -> None:
    transport = Recording()
    held = _HeldHead(transport)  # type: ignore[arg-type]
    held.write(HEAD)
    held.close()
    assert transport.writes == [HEAD] and transport.closed and held.is_closing()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    path = scope["path"]
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if path == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": []})
        for chunk in (b"one", b"two"):
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    if path == "/broken":
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"10")]})
        raise RuntimeError("after the start")
    out = body or b"hello"
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(out)).encode())]})
    await send({"type": "http.response.body", "body": out})


@pytest.fixture
async def server() -> AsyncIterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=ApiProtocol, lifespan="off", log_level="critical")
    srv = uvicorn.Server(config)
    task = asyncio.ensure_future(srv.serve(sockets=[sock]))
    while not srv.started:
        assert not task.done(), task.exception()
        await asyncio.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        srv.should_exit = True
        await task
        sock.close()


async def _exchange(port: int, raw: bytes, until: bytes, first: bytes | None = None,
                    count: int = 1) -> bytes:
    """Send ``raw`` (after ``first`` and the server's answer to it, if given);
    read until ``until`` ends the data ``count`` times or the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        data = b""
        if first is not None:
            writer.write(first)
            data = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        writer.write(raw)
        while not (data.endswith(until) and data.count(until) >= count):
            chunk = await asyncio.wait_for(reader.read(65536), 10)
            if not chunk:
                break
            data += chunk
        return data
    finally:
        writer.close()


async def test_a_response_and_the_next_on_one_connection(server: int) -> None:
    get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    data = await _exchange(server, get + get, b"hello", count=2)  # pipelined
    one = b"HTTP/1.1 200 OK\r\n"
    assert data.count(one) == 2 and data.startswith(one) and data.count(b"\r\n\r\nhello") == 2


async def test_head_answers_the_head_alone(server: int) -> None:
    data = await _exchange(server, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 5" in data
    assert data.endswith(b"\r\n\r\n")


async def test_expect_continue_gets_its_100_before_the_body(server: int) -> None:
    head = (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
            b"Expect: 100-continue\r\n\r\n")
    data = await _exchange(server, b"ping", b"ping", first=head)
    assert data.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")


async def test_a_streamed_response_arrives_whole(server: int) -> None:
    data = await _exchange(server, b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n", b"0\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"transfer-encoding: chunked" in data
    assert data.endswith(b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n")


async def test_an_app_failing_after_its_start_sends_the_head_and_closes(server: int) -> None:
    data = await _exchange(server, b"GET /broken HTTP/1.1\r\nHost: x\r\n\r\n", b"\x00never")
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"\r\n\r\n")
