"""One ``qemu-storage-daemon`` serving one volume file as an NBD export.

The daemon is started with ``--daemonize``: the command returns only once
the export serves (no readiness polling), and the daemon is nobody's child,
so a compute process that asked for the export may exit without taking the
volume off its guest. Its lifetime belongs to the volume service's export
supervisor (:mod:`cirrus.volume.exports`), which finds each daemon again by
its pid file and the export name on its command line.

The listening socket is made here and handed to the daemon (``addr.type=fd``)
with ``TCP_NODELAY`` set, which the connections it accepts inherit: QEMU 7.2's
NBD server (Debian 12's) neither sets it nor uncorks its replies, and a
guest's pipelined requests then wait out 40 ms delayed ACKs — 4 KiB writes
at queue depth 16 went from ~390 to ~4,900 IOPS here with it
(docs/volumes.md). Binding here also means the port cannot be lost to
another process between choosing and listening.
"""
from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from cirrus.volume.exception import BackendError

STOP_TIMEOUT = 5.0  # seconds a daemon gets to exit on SIGTERM before SIGKILL
START_TIMEOUT = 30.0


@dataclass(frozen=True)
class Export:
    """Where and what a daemon serves."""

    path: Path      # the volume's file
    fmt: str        # its format (raw | qcow2); the export is always raw data
    address: str    # the address it listens on, which compute hosts connect to
    port: int       # 0: any free port
    name: str       # the NBD export name (``volume-<id>``)


def _opt(value: str) -> str:
    """A value inside a QEMU ``key=value,…`` option: commas doubled."""
    return value.replace(",", ",,")


def command(export: Export, pidfile: Path, listen_fd: int) -> list[str]:
    """The ``qemu-storage-daemon`` command line for ``export``, serving on
    the listening socket ``listen_fd``."""
    node = "file0"
    args = ["qemu-storage-daemon",
            "--blockdev", f"driver=file,filename={_opt(str(export.path))},node-name=file0,"
                          "cache.direct=off,aio=threads"]
    if export.fmt != "raw":
        args += ["--blockdev", f"driver={export.fmt},file=file0,node-name=fmt0"]
        node = "fmt0"
    return args + [
        "--nbd-server", f"addr.type=fd,addr.str={listen_fd}",
        "--export", f"type=nbd,id=export0,node-name={node},name={_opt(export.name)},writable=on",
        "--pidfile", str(pidfile), "--daemonize"]


# How long a port of a daemon that has just died may stay taken: its main
# thread shows as gone (a zombie) before its other threads have exited and
# closed the listening socket they share.
PORT_FREED_WITHIN = 2.0


def listen(address: str, port: int) -> socket.socket:
    """A TCP socket listening at ``address``:``port`` (0: any) with
    ``TCP_NODELAY``; BackendError if it cannot bind. A port in use is tried
    again for up to PORT_FREED_WITHIN seconds (a restart on the port of a
    daemon just stopped or killed)."""
    deadline = time.monotonic() + PORT_FREED_WITHIN
    while True:
        try:
            return _listen_once(address, port)
        except OSError as e:
            if port and e.errno == errno.EADDRINUSE and time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            raise BackendError(reason=f"cannot listen at {address}:{port}: {e.strerror}") from e


def _listen_once(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((address, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def start(export: Export, pidfile: Path) -> int:
    """Start the daemon; the port it serves on. BackendError with QEMU's
    words if it did not come up (file missing, port taken, address not on
    this host)."""
    pidfile.unlink(missing_ok=True)
    with listen(export.address, export.port) as sock:
        try:
            proc = subprocess.run(command(export, pidfile, sock.fileno()), capture_output=True,
                                  text=True, timeout=START_TIMEOUT, stdin=subprocess.DEVNULL,
                                  pass_fds=[sock.fileno()])
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BackendError(reason=f"qemu-storage-daemon: {e}") from e
        port = int(sock.getsockname()[1])
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()[-1:] or ["failed"]
        raise BackendError(reason=f"qemu-storage-daemon: {lines[0][:300]}")
    if running(pidfile, export.name) is None:
        raise BackendError(reason="qemu-storage-daemon exited after it started")
    return port


def running(pidfile: Path, name: str) -> int | None:
    """The pid of the daemon serving ``name`` that ``pidfile`` names, if it
    runs (a pid reused by another process does not count)."""
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return None
    if state == "Z" or not cmdline or not cmdline[0].endswith(b"qemu-storage-daemon"):
        return None
    return pid if any(f"name={_opt(name)},".encode() in a for a in cmdline) else None


def stop(pidfile: Path, name: str, timeout: float = STOP_TIMEOUT) -> None:
    """Stop the daemon if it runs (SIGTERM, then SIGKILL) and wait until it
    has gone, so that its port is free again; a missing one is fine."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pid = running(pidfile, name)
        if pid is None:
            break
        _signal(pid, sig)
        deadline = time.monotonic() + timeout
        while running(pidfile, name) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    pidfile.unlink(missing_ok=True)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
