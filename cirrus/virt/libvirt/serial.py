"""Ports for guests' serial consoles (Nova's ``serial_console.port_range``)."""
from __future__ import annotations

import random
import socket

PORT_RANGE = (10000, 20000)


def free_port(port_range: tuple[int, int] = PORT_RANGE, tries: int = 64) -> int:
    """A port of ``port_range`` nothing listens on now on 127.0.0.1.

    QEMU binds it when the guest starts; a port taken in between makes that
    start fail, and the build is rescheduled (it picks again)."""
    low, high = port_range
    for _ in range(tries):
        port = random.randint(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free serial console port in {low}-{high}")
