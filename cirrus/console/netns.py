"""A TCP connection opened inside a named network namespace.

A compute host whose hypervisor runs in a namespace (``host_netns``) has its
guests' serial ports listening there; the proxy reaches them by creating its
socket in that namespace (a socket keeps the namespace it was made in).
``setns`` moves only the calling thread, and the thread is moved back before
it returns to the pool.
"""
from __future__ import annotations

import asyncio
import ctypes
import os
import socket

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))


def _connect_in(netns: str, host: str, port: int, timeout: float) -> socket.socket:
    if "/" in netns or netns in ("", ".", ".."):
        raise OSError(f"not a namespace name: {netns!r}")
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(os.path.join(NETNS_DIR, netns), os.O_RDONLY)
        try:
            _setns(target)
            try:
                sock = socket.create_connection((host, port), timeout=timeout)
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)
    sock.setblocking(False)
    return sock


async def open_connection(host: str, port: int, netns: str = "", timeout: float = 5.0
                          ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """``asyncio.open_connection`` to ``host:port`` as seen from ``netns``
    (empty: this process's own namespace)."""
    if not netns:
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    sock = await asyncio.to_thread(_connect_in, netns, host, port, timeout)
    return await asyncio.open_connection(sock=sock)
