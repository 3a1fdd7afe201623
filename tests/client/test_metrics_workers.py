"""``cirrus up --api-workers N --metrics-listen HOST:P``: the engine serves its
metrics on P and API worker n on P+1+n, each its own process's figures."""
from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.client.conftest import free_port, start_cloud, stop, wait_up

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs Linux pidfds")


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive ports free now."""
    for _ in range(50):
        first = free_port()
        socks = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError(f"no {count} consecutive free ports")


def names(url: str, timeout: float = 30) -> dict[str, float]:
    """The sample values at ``url`` by name (summed over labels), once it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            text = httpx.get(url, timeout=5).text
            break
        except httpx.HTTPError:
            assert time.monotonic() < deadline, f"{url} did not answer"
            time.sleep(0.1)
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + sample.value
    return out


def test_the_engine_and_each_worker_serve_their_own_metrics(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    port, metrics = free_port(), free_ports(3)
    proc = start_cloud(state, port, "--computes", "1", "--api-workers", "2",
                       "--metrics-listen", f"127.0.0.1:{metrics}")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(url, proc)
        for _ in range(4):  # some land on each worker, most likely
            assert httpx.get(f"{url}/identity/v3", timeout=10).status_code == 200
        engine = names(f"http://127.0.0.1:{metrics}/metrics")
        workers = [names(f"http://127.0.0.1:{metrics + 1 + n}/metrics") for n in range(2)]
        # The engine runs the services and no API; the workers the API.
        assert engine["cirrus_db_unit_seconds_count"] > 0
        assert "cirrus_builds_in_flight" in engine
        assert engine.get("cirrus_api_request_seconds_count", 0) == 0
        served = sum(w.get("cirrus_api_request_seconds_count", 0) for w in workers)
        assert served >= 5  # wait_up's request and ours
        assert all("cirrus_build_admission_waiting" in w for w in workers)
        assert stop(proc, signal.SIGTERM) == 0
    finally:
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
