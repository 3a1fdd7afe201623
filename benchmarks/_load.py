"""Load generation for the benchmarks: a lean HTTP/1.1 keep-alive client,
closed-loop runs (C clients back to back) and fixed-rate runs (open loop).

httpx spends a few hundred µs of CPU on each request; on a 2-core machine that
the client shares with the cloud, that would measure the client. This one
writes a prebuilt request and reads one Content-Length-framed response, so a
request costs it tens of µs.
"""
from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit

from _cloud import percentile

PathFor = Callable[[int], str]


class Connection:
    """One keep-alive connection sending requests with fixed headers."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        lines = [f"Host: {parts.netloc}", *(f"{k}: {v}" for k, v in headers.items())]
        self._tail = ("\r\n".join(lines) + "\r\n\r\n").encode()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self) -> "Connection":
        # Responses of /servers/detail run to megabytes: a large read limit
        # keeps readuntil() from failing on them.
        self._reader, self._writer = await asyncio.open_connection(
            self.host, self.port, limit=1 << 20)
        return self

    async def get(self, path: str) -> tuple[int, bytes]:
        """(status, body) of ``GET path``."""
        return await self.request("GET", path)

    async def request(self, method: str, path: str, body: bytes | None = None
                      ) -> tuple[int, bytes]:
        """(status, body) of ``method path`` with an optional JSON ``body``."""
        assert self._reader is not None and self._writer is not None
        line = f"{method} {path} HTTP/1.1\r\n".encode()
        if body is not None:
            line += b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
        self._writer.write(line + self._tail + (body or b""))
        head = await self._reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        if status in (204, 304) or status < 200:  # no body, no Content-Length
            return status, b""
        length = None
        for header in head.split(b"\r\n")[1:]:
            name, _, value = header.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
                break
        if length is None:
            raise RuntimeError(f"{method} {path}: no Content-Length in the response")
        return status, await self._reader.readexactly(length)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass


@dataclass
class Run:
    """Latencies (s) and outcome of one load run."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    body_bytes: int = 0

    def summary(self, **extra: Any) -> dict[str, Any]:
        done = len(self.latencies)
        return {**extra, "requests": done, "errors": self.errors,
                "requests_per_s": round(done / self.seconds, 1) if self.seconds else 0.0,
                "p50_ms": round(percentile(self.latencies, 50) * 1000, 2),
                "p99_ms": round(percentile(self.latencies, 99) * 1000, 2),
                "max_ms": round(max(self.latencies, default=math.nan) * 1000, 2),
                "mean_response_kb": round(self.body_bytes / max(done, 1) / 1024, 1)}


async def _connections(url: str, headers: dict[str, str], count: int) -> list[Connection]:
    return [await Connection(url, headers).open() for _ in range(count)]


async def closed_loop(url: str, headers: dict[str, str], path_for: PathFor, clients: int,
                      duration: float, max_requests: int | None = None) -> Run:
    """``clients`` connections, each sending its next request when the last
    answered, for ``duration`` seconds (or until ``max_requests``)."""
    conns = await _connections(url, headers, clients)
    run = Run()
    counter = iter(range(max_requests if max_requests is not None else 1 << 62))
    start = time.perf_counter()
    deadline = start + duration

    async def client(conn: Connection) -> None:
        for i in counter:
            t = time.perf_counter()
            if t >= deadline:
                return
            status, body = await conn.get(path_for(i))
            run.latencies.append(time.perf_counter() - t)
            run.body_bytes += len(body)
            run.errors += status != 200
    try:
        await asyncio.gather(*(client(c) for c in conns))
    finally:
        run.seconds = time.perf_counter() - start
        for conn in conns:
            await conn.close()
    return run


async def fixed_rate(url: str, headers: dict[str, str], path_for: PathFor, rate: float,
                     duration: float, connections: int = 64) -> Run:
    """Requests sent on a schedule of ``rate`` per second whatever the answers
    do (open loop). A latency runs from the scheduled send time, so a client
    falling behind (all connections busy, a late timer) counts against the
    cloud, not in its favour."""
    conns = await _connections(url, headers, connections)
    free: asyncio.Queue[Connection] = asyncio.Queue()
    for conn in conns:
        free.put_nowait(conn)
    run = Run()
    pending: set[asyncio.Task[None]] = set()

    async def one(conn: Connection, path: str, scheduled: float) -> None:
        try:
            status, body = await conn.get(path)
            run.latencies.append(time.perf_counter() - scheduled)
            run.body_bytes += len(body)
            run.errors += status != 200
        finally:
            free.put_nowait(conn)

    start = time.perf_counter()
    try:
        for i in range(int(rate * duration)):
            scheduled = start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            conn = await free.get()
            task = asyncio.create_task(one(conn, path_for(i), scheduled))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
    finally:
        run.seconds = time.perf_counter() - start
        for conn in conns:
            await conn.close()
    return run
