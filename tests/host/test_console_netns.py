"""The serial console proxy reaches a port that listens inside a namespace."""
from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from cirrus.console import netns
from tests.host.netns import why_not

pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture
def namespace() -> Iterator[str]:
    name = f"cz-con-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def _listen_in(name: str) -> tuple[int, int]:
    """A listening socket made inside ``name`` (as QEMU's would be)."""
    import socket

    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        netns._setns(target)
        try:
            server = socket.create_server(("127.0.0.1", 0))
        finally:
            netns._setns(own)
    finally:
        os.close(own)
        os.close(target)
    return server.getsockname()[1], server.detach()


async def test_a_connection_is_made_inside_the_namespace(namespace: str) -> None:
    port, fd = await asyncio.to_thread(_listen_in, namespace)
    import socket

    server_sock = socket.socket(fileno=fd)
    got: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        got.append(await reader.read(5))
        writer.close()
    server = await asyncio.start_server(serve, sock=server_sock)
    try:
        # Not reachable from this namespace: the port listens only in the other.
        with pytest.raises(OSError):
            await netns.open_connection("127.0.0.1", port, "", timeout=2)
        reader, writer = await netns.open_connection("127.0.0.1", port, namespace)
        writer.write(b"hello")
        await writer.drain()
        assert await reader.read() == b""
        writer.close()
        assert got == [b"hello"]
    finally:
        server.close()
        await server.wait_closed()


async def test_a_namespace_name_cannot_walk_out_of_the_netns_dir() -> None:
    for bad in ("../../proc/1/ns/net", "", ".."):
        with pytest.raises(OSError):
            await asyncio.to_thread(netns._connect_in, bad, "127.0.0.1", 1, 1.0)
