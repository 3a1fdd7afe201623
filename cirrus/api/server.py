"""How uvicorn serves the API: its HTTP/1.1 protocol, writing a response once.

uvicorn writes a response's status line and headers when the app sends
``http.response.start`` and its body when the app sends the body: two
``write`` calls, two TCP segments over loopback and two wake-ups of the
client, for the one small JSON body almost every API response is. uvloop's
write is the send system call, made holding the GIL: in a py-spy of the API
worker it was the largest single cost of a request. :class:`ApiProtocol`
holds the head of each response until its first body write (or its end,
for a response without a body) and writes both at once.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


class _HeldHead:
    """The transport of one response: holds its first write (the head) and
    sends it with the next one. Informational heads (``100 Continue``, which
    the client waits for before sending the body) go out at once."""

    __slots__ = ("transport", "held", "head_seen")

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.held: bytes | None = None
        self.head_seen = False

    def write(self, data: bytes) -> None:
        if self.held is not None:
            # One writev on uvloop, without copying a large body onto the head.
            held, self.held = self.held, None
            self.transport.writelines((held, data))
        elif not self.head_seen and not data.startswith(b"HTTP/1.1 1"):
            self.held, self.head_seen = data, True
        else:
            self.transport.write(data)

    def flush(self) -> None:
        """Write what is held (the head of a response without a body)."""
        if self.held is not None:
            data, self.held = self.held, None
            self.transport.write(data)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


class ApiProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, each response written in one call."""

    def on_headers_complete(self) -> None:
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is None or cycle is before:  # an upgrade: no cycle of ours
            return
        head = _HeldHead(self.transport)
        cycle.transport = head  # type: ignore[assignment]
        cycle.on_response = _flushing(head, cycle.on_response)


def _flushing(head: _HeldHead, on_response: Callable[[], None]) -> Callable[[], None]:
    """``on_response`` (the protocol's: the next pipelined request starts)
    after the held head of a response without a body is written."""
    def done() -> None:
        head.flush()
        on_response()
    return done
