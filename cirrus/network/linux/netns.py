"""Sockets in the host's network namespace.

A socket belongs to the namespace its creator's thread was in when it was
made, and keeps it; so a listener for ``host_netns`` is made on a short-lived
thread that first enters that namespace (``setns``), leaving every other
thread of the process where it was.
"""
from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import threading

CLONE_NEWNET = 0x40000000


def enter(netns: str) -> None:
    """Move the calling thread into the named namespace (``ip netns`` names)."""
    fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {netns}: {os.strerror(err)}")
    finally:
        os.close(fd)


def _listener(device: str, address: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Bound to the device: the same address and port on every bridge, and
        # the socket a connection arrives on names its network.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
        sock.bind((address, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


def make_listener(netns: str, device: str, address: str, port: int) -> socket.socket:
    """A listening TCP socket on ``address:port`` bound to ``device``, in
    ``netns`` (empty: this process's namespace). Blocks briefly."""
    if not netns:
        return _listener(device, address, port)
    made: list[socket.socket] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            enter(netns)
            made.append(_listener(device, address, port))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            failed.append(e)
    thread = threading.Thread(target=run, name=f"netns-{netns}")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return made[0]


async def listen_on_device(netns: str, device: str, address: str, port: int) -> socket.socket:
    """:func:`make_listener` off the event loop (its own thread, not the
    executor's, whose threads must stay in this namespace)."""
    return await asyncio.get_running_loop().run_in_executor(
        None, make_listener, netns, device, address, port)
