"""Ports for guests' serial consoles (Nova's ``serial_console.port_range``)."""
from __future__ import annotations

import random
import socket
from typing import Any, Collection

from cirrus.network.linux import ip

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


def listening_ports(ss_output: str) -> set[int]:
    """The local ports of ``ss -Hltn``'s lines (``LISTEN 0 128 127.0.0.1:10001 0.0.0.0:*``)."""
    ports = set()
    for line in ss_output.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].rpartition(":")[2].isdigit():
            ports.add(int(fields[3].rpartition(":")[2]))
    return ports


def pick_port(taken: Collection[int], port_range: tuple[int, int] = PORT_RANGE,
              rng: random.Random | None = None, tries: int = 64) -> int:
    """A port of ``port_range`` not in ``taken``; OSError if none turns up."""
    low, high = port_range
    draw = rng or random.Random()
    for _ in range(tries):
        port = draw.randint(low, high)
        if port not in taken:
            return port
    raise OSError(f"no free serial console port in {low}-{high}")


async def free_port_in_host(settings: Any) -> int:
    """A port free in the host's namespace (``host_netns``), where the
    guest's QEMU listens, which need not be this process's."""
    return pick_port(listening_ports(await ip.run(settings, ["ss", "-Hltn"])))
