"""Shared benchmark helpers: start ``cirrus up`` on a free port, log in, measure RSS."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident (VmRSS) or peak (VmHWM) memory of ``pid`` in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def token(url: str, user: str = "admin", password: str = "admin") -> str:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": user, "domain": {"id": "default"}}}}}
    resp = httpx.post(f"{url}/identity/v3/auth/tokens", json=body, timeout=30)
    resp.raise_for_status()
    return resp.headers["X-Subject-Token"]


@contextlib.contextmanager
def running_cloud(computes: int, env: dict[str, str] | None = None,
                  state_dir: str | None = None) -> Iterator[tuple[str, subprocess.Popen[Any]]]:
    """``cirrus up`` in a subprocess; yields (url, process); stops it after."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir", state_dir or tmp,
               "--bind", f"127.0.0.1:{port}", "--computes", str(computes)]
        proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                token(url)
                break
            except (httpx.HTTPError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"cirrus up failed: {proc.stdout.read() if proc.stdout else ''}")
                time.sleep(0.05)
        try:
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(pct / 100 * (len(ordered) - 1))))]
