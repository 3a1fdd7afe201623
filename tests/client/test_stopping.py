"""Stopping and crashing with builds in flight: a real ``cirrus up``, a burst
of slow builds (the fake driver's ``fake_spawn_delay``), then SIGTERM or
``kill -9``, then a start on the same state dir. Every server the API
accepted ends ACTIVE, or ERROR with a fault naming the cause; creates after
SIGTERM get 503."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.client.conftest import free_port

pytestmark = pytest.mark.slow
SHUTDOWN = "cirrus is shutting down"
RESTART_CAUSES = ("the conductor stopped before the build was scheduled",
                  "stopped before the build finished")


@dataclass
class Cloud:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


def start(state: Path, port: int, workers: int, **env: str) -> Cloud:
    log = state.parent / f"up-{port}-{time.monotonic_ns()}.out"
    # No tiny guest: the default image is cirrus-blank whatever this machine has built.
    settings = {"CIRRUS_TINY_GUEST_DIR": str(state.parent / "no-tiny"),
                "CIRRUS_QUOTA_INSTANCES": "1000", "CIRRUS_QUOTA_CORES": "1000",
                "CIRRUS_QUOTA_RAM": "10000000",
                **{f"CIRRUS_{k.upper()}": v for k, v in env.items()}}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir", str(state), "--bind",
             f"127.0.0.1:{port}", "--computes", "2", "--api-workers", str(workers)],
            env={**os.environ, **settings}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log.read_text()
        try:
            if httpx.get(f"{url}/identity/v3", timeout=2).status_code == 200:
                return Cloud(url, proc, log)
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


@contextmanager
def running(state: Path, port: int, workers: int, **env: str) -> Iterator[Cloud]:
    cloud = start(state, port, workers, **env)
    try:
        yield cloud
    finally:
        if cloud.process.poll() is None:
            os.killpg(cloud.process.pid, signal.SIGKILL)
            cloud.process.wait(timeout=30)


def client(url: str) -> httpx.AsyncClient:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "demo", "domain": {"id": "default"}, "password": "demo"}}},
        "scope": {"project": {"name": "demo", "domain": {"id": "default"}}}}}
    token = httpx.post(f"{url}/identity/v3/auth/tokens", json=body).headers["X-Subject-Token"]
    return httpx.AsyncClient(base_url=url, headers={"X-Auth-Token": token}, timeout=60)


@dataclass
class Burst:
    """Creates sent one after another by ``clients`` tasks."""

    accepted: list[str] = field(default_factory=list)
    refused_after_signal: list[dict[str, Any]] = field(default_factory=list)
    accepted_after_refusal: int = 0
    signalled_at: float | None = None


async def burst(c: httpx.AsyncClient, image: str, total: int, clients: int,
                signal_after: int, send_signal: Any) -> Burst:
    """``total`` creates; ``send_signal()`` once ``signal_after`` were accepted.
    Sending goes on until a create is refused, and a few more after it."""
    out = Burst()
    sent = 0

    async def one() -> None:
        nonlocal sent
        while sent < total or (out.signalled_at is not None and not out.refused_after_signal):
            if out.signalled_at is not None and time.monotonic() - out.signalled_at > 20:
                return
            sent += 1
            # Sent after a refusal came back: it must be refused too (one sent
            # before may still be accepted: it passed the check first).
            after_refusal = bool(out.refused_after_signal)
            try:
                resp = await c.post("/compute/v2.1/servers", json={"server": {
                    "name": f"b{sent}", "flavorRef": "1", "imageRef": image}})
            except httpx.TransportError:
                if out.signalled_at is None:
                    raise
                return  # killed while answering: never accepted, as far as we know
            if resp.status_code == 202:
                out.accepted.append(resp.json()["server"]["id"])
                out.accepted_after_refusal += after_refusal
            elif out.signalled_at is not None:
                assert resp.status_code == 503, resp.text
                out.refused_after_signal.append(resp.json())
            else:
                raise AssertionError(resp.text)
            if len(out.accepted) >= signal_after and out.signalled_at is None:
                out.signalled_at = time.monotonic()
                send_signal()
    await asyncio.gather(*(one() for _ in range(clients)))
    return out


async def default_image(c: httpx.AsyncClient) -> str:
    images = (await c.get("/image/v2/images", params={"name": "cirrus-blank"})).json()["images"]
    return str(images[0]["id"])


async def final_states(url: str, uuids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """Each server once it is ACTIVE or ERROR (failing after ``timeout`` s)."""
    async with client(url) as c:
        deadline = time.monotonic() + timeout
        out: dict[str, dict[str, Any]] = {}
        while len(out) < len(uuids):
            for uuid in uuids:
                if uuid in out:
                    continue
                server = (await c.get(f"/compute/v2.1/servers/{uuid}")).json()["server"]
                if server["status"] in ("ACTIVE", "ERROR"):
                    out[uuid] = server
            assert time.monotonic() < deadline, f"{len(uuids) - len(out)} servers not done"
            await asyncio.sleep(0.2)
        return out


@pytest.mark.parametrize("workers", [0, 1])
async def test_sigterm_lets_builds_in_flight_finish_and_refuses_new_ones(
        tmp_path: Path, workers: int) -> None:
    port = free_port()
    with running(tmp_path / "state", port, workers, fake_spawn_delay="1.5",
                 shutdown_grace_period="60") as cloud:
        async with client(cloud.url) as c:
            image = await default_image(c)
            sent = await burst(c, image, total=30, clients=6, signal_after=8,
                               send_signal=lambda: cloud.process.send_signal(signal.SIGTERM))
        assert cloud.process.wait(timeout=90) == 0, cloud.log.read_text()
    assert sent.refused_after_signal, "no create was refused after SIGTERM"
    assert sent.accepted_after_refusal == 0
    fault = sent.refused_after_signal[0]["serviceUnavailable"]
    assert fault["code"] == 503 and SHUTDOWN in fault["message"]
    assert "shutting down" in cloud.log.read_text()
    # Started again on the same state dir: the builds had all finished (the
    # grace period is longer than they take), and they stay ACTIVE.
    with running(tmp_path / "state", port, workers) as again:
        done = await final_states(again.url, sent.accepted, timeout=30)
    assert {s["status"] for s in done.values()} == {"ACTIVE"}, [
        s.get("fault") for s in done.values()]


async def test_sigterm_fails_what_the_grace_period_did_not_see_finish(tmp_path: Path) -> None:
    port = free_port()
    with running(tmp_path / "state", port, 0, fake_spawn_delay="600",
                 shutdown_grace_period="1") as cloud:
        async with client(cloud.url) as c:
            image = await default_image(c)
            sent = await burst(c, image, total=6, clients=3, signal_after=6,
                               send_signal=lambda: cloud.process.send_signal(signal.SIGTERM))
        assert cloud.process.wait(timeout=60) == 0, cloud.log.read_text()
    with running(tmp_path / "state", port, 0) as again:
        done = await final_states(again.url, sent.accepted, timeout=30)
    for server in done.values():
        assert server["status"] == "ERROR"
        assert SHUTDOWN in server["fault"]["message"], server["fault"]
        assert "1 s grace period" in server["fault"]["message"]


@pytest.mark.parametrize("workers", [0, 1])
async def test_after_kill_9_every_build_ends_within_seconds_with_its_cause(
        tmp_path: Path, workers: int) -> None:
    port = free_port()
    with running(tmp_path / "state", port, workers, fake_spawn_delay="600") as cloud:
        async with client(cloud.url) as c:
            image = await default_image(c)
            sent = await burst(c, image, total=20, clients=5, signal_after=20,
                               send_signal=lambda: os.killpg(cloud.process.pid, signal.SIGKILL))
        cloud.process.wait(timeout=30)
    with running(tmp_path / "state", port, workers) as again:
        started = time.monotonic()
        done = await final_states(again.url, sent.accepted, timeout=15)
        assert time.monotonic() - started < 15
    for server in done.values():
        assert server["status"] == "ERROR", server
        message = server["fault"]["message"]
        assert any(cause in message for cause in RESTART_CAUSES), message
        assert "timed out" not in message
