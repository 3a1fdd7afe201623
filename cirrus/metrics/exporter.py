"""The metrics endpoint of a process: ``GET /metrics`` on ``metrics_listen``.

It listens apart from the public API (docs/security.md, "Metrics"): Prometheus
scrapers carry no Keystone token, and what the metrics tell (request rates,
host names, build backlogs) is for operators. prometheus_client serves it from
a thread of its own, so a scrape never waits for the event loop, nor the loop
for a scrape; the values it reads are each behind prometheus_client's lock.
"""
from __future__ import annotations

import asyncio
import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from cirrus.preflight import StartupError

LOG = logging.getLogger(__name__)
DISABLED = ("", "0")


def parse_listen(listen: str) -> tuple[str, int] | None:
    """``HOST:PORT`` or ``PORT`` (on 127.0.0.1) → (host, port); None: disabled
    (empty or ``0``). Port 0 on a host: any free port."""
    listen = listen.strip()
    if listen in DISABLED:
        return None
    host, sep, port = listen.rpartition(":")
    if not sep:
        return "127.0.0.1", int(port)
    return host.strip("[]") or "127.0.0.1", int(port)


def worker_listen(listen: str, n: int) -> str:
    """Where API worker ``n`` of ``cirrus up`` serves its metrics: the port after
    the engine's plus ``n`` (each process has its own registry)."""
    parsed = parse_listen(listen)
    if parsed is None or parsed[1] == 0:
        return listen
    host, port = parsed
    return f"[{host}]:{port + 1 + n}" if ":" in host else f"{host}:{port + 1 + n}"


class Exporter:
    """Serves ``registry`` in Prometheus's text format on ``listen``."""

    def __init__(self, registry: CollectorRegistry, listen: str) -> None:
        self.registry = registry
        self.listen = listen
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://host:port/metrics`` (the port it got, for a port 0)."""
        assert self._server is not None
        address = self._server.server_address
        host, port = str(address[0]), int(address[1])
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/metrics"

    def start(self) -> None:
        """Listen now; :class:`~cirrus.preflight.StartupError` (one line) if it cannot."""
        parsed = parse_listen(self.listen)
        if parsed is None:
            return
        host, port = parsed
        try:
            self._server, self._thread = start_http_server(port, host, registry=self.registry)
        except OSError as error:
            raise StartupError(reason=f"metrics_listen {self.listen}: cannot listen: "
                                      f"{error.strerror or error} (choose another port, or 0 "
                                      "to serve no metrics)") from error
        LOG.info("metrics at %s", self.url)

    async def stop(self) -> None:
        """Stop serving (off the loop: the server notices within its poll interval)."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None or thread is None:
            return
        await asyncio.get_running_loop().run_in_executor(None, server.shutdown)
        server.server_close()
        thread.join()
