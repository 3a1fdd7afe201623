"""The fake hypervisor's serial ports: a TCP listener per guest that echoes
what it is sent (as a guest's terminal echoes typing) and logs it to the
guest's console, so the console path is exercised end to end without QEMU."""
from __future__ import annotations

import asyncio
import contextlib


class FakeSerialPort:
    """One guest's serial port on 127.0.0.1; ``port`` is set by :meth:`open`."""

    def __init__(self, console: list[str]) -> None:
        self.console = console
        self.port = 0
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.StreamWriter] = set()

    async def open(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._clients.add(writer)
        try:
            while data := await reader.read(4096):
                self.console.append(data.decode(errors="replace"))
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._clients.discard(writer)
            writer.close()

    async def close(self) -> None:
        """Stop listening and hang up on every client (the guest went away)."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._clients):
            writer.close()
        await asyncio.sleep(0)  # let the handlers see their connection end


async def close_all(ports: dict[str, FakeSerialPort]) -> None:
    """Close every port of ``ports`` (the driver's, at cleanup)."""
    for port in list(ports.values()):
        with contextlib.suppress(Exception):
            await port.close()
    ports.clear()

