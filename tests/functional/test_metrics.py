"""The metrics endpoint of a running cloud: boots through the HTTP API (fake
driver), then a scrape of ``metrics_listen`` parsed as Prometheus would; and
the exporter of a separate ``cirrus scheduler`` process."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cirrus import observe
from cirrus.bootstrap import Cloud
from cirrus.observe import BootStep
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

SERVERS = "/compute/v2.1/servers"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    # Small hosts, so a flavor within the quota fits none of them.
    return {"metrics_listen": "127.0.0.1:0", "fake_host_memory_mb": 4096}


async def scrape(url: str) -> Samples:
    """Every sample of the endpoint, by (name, labels)."""
    async with httpx.AsyncClient() as client:
        resp = await client.get(url)
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(resp.text) for s in family.samples}


def sample(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every sample of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


async def test_a_scrape_after_boots_shows_every_family(cloud: Cloud, demo: httpx.AsyncClient,
                                                       admin: httpx.AsyncClient) -> None:
    assert cloud.exporter is not None
    image = await upload_image(demo)
    ids = [(await create_server(demo, server_body(image, name=f"m{i}")))["id"] for i in range(3)]
    for server_id in ids:
        assert (await wait_for_status(demo, server_id, {"ACTIVE", "ERROR"}))["status"] == "ACTIVE"
    # Too big for any host: the scheduler's filters remove every host.
    flavor = {"flavor": {"name": "huge", "ram": 20000, "vcpus": 1, "disk": 1}}
    resp = await admin.post("/compute/v2.1/flavors", json=flavor)
    assert resp.status_code == 200, resp.text
    big = resp.json()["flavor"]["id"]
    failed = await create_server(demo, server_body(image, name="big", flavor=big))
    assert (await wait_for_status(demo, failed["id"], {"ACTIVE", "ERROR"}))["status"] == "ERROR"
    # The timeline reports its steps here once build.py calls it; fed directly
    # as well, so this test does not depend on which of the two is merged first.
    observe.boot_step(BootStep.SPAWN, 0.02)

    samples = await scrape(cloud.exporter.url)

    created = sample(samples, "cirrus_api_request_seconds_count", method="POST",
                     route="/compute/v2.1/servers", status="202")
    assert created == 4
    shown = total(samples, "cirrus_api_request_seconds_count", method="GET",
                  route="/compute/v2.1/servers/{server_id}", status="200")
    assert shown >= 4  # each wait polls at least once
    assert not any(n == "cirrus_api_request_seconds_count" and ("route", f"{SERVERS}/{ids[0]}")
                   in ls for n, ls in samples), "a raw path became a label"
    assert sample(samples, "cirrus_boot_step_seconds_count", step="spawn", outcome="ok") >= 1
    assert sample(samples, "cirrus_scheduler_decision_seconds_count", outcome="selected") >= 3
    assert sample(samples, "cirrus_scheduler_decision_seconds_count", outcome="no_valid_host") >= 1
    # The two hosts (TEST_DEFAULTS) fit the small servers and not the big one.
    assert sample(samples, "cirrus_scheduler_filter_removed_hosts_total",
                  filter="RamFilter") == 2
    assert sample(samples, "cirrus_db_unit_seconds_count", kind="write") > 0
    assert sample(samples, "cirrus_db_unit_seconds_count", kind="read") > 0
    assert sample(samples, "cirrus_db_group_size_count") > 0
    assert sample(samples, "cirrus_db_group_size_sum") >= sample(samples,
                                                                 "cirrus_db_group_size_count")
    assert sample(samples, "cirrus_bus_messages_sent_total", method="build_and_run_instance",
                  kind="cast") >= 3
    assert sample(samples, "cirrus_bus_messages_received_total",
                  method="select_destinations") >= 4
    for host in ("compute1", "compute2"):
        assert ("cirrus_builds_in_flight", frozenset({("host", host)})) in samples
        assert ("cirrus_builds_waiting", frozenset({("host", host)})) in samples
    assert sample(samples, "cirrus_build_admission_waiting") == 0


async def test_unauthenticated_and_unmatched_requests_are_counted_boundedly(
        cloud: Cloud, api: Any) -> None:
    assert cloud.exporter is not None
    async with api.client() as anonymous:
        for i in range(3):
            assert (await anonymous.get(f"{SERVERS}/{i}")).status_code == 401
            assert (await anonymous.get(f"/no/such/path/{i}")).status_code in (401, 404)
    samples = await scrape(cloud.exporter.url)
    # Refused before routing (no token): one series, whatever the paths were.
    refused = total(samples, "cirrus_api_request_seconds_count", method="GET", route="unmatched")
    assert refused == 6
    routes = {dict(ls).get("route") for n, ls in samples
              if n == "cirrus_api_request_seconds_count"}
    assert routes == {"unmatched"}, routes


# -- a separate process ------------------------------------------------------------

def _lines(proc: subprocess.Popen[str]) -> "queue.Queue[str]":
    """The process's stdout lines, read in a thread (so waiting has a deadline)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_line(lines: "queue.Queue[str]", prefix: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while True:
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        if line.startswith(prefix):
            return line[len(prefix):].strip()


@pytest.fixture
def scheduler_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    env = {**os.environ, "CIRRUS_STATE_DIR": str(tmp_path), "CIRRUS_DATABASE_URL": "",
           "CIRRUS_TRANSPORT_URL": "inprocess://"}
    cli = [sys.executable, "-m", "cirrus.cli.main"]
    subprocess.run([*cli, "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen([*cli, "scheduler", "--host", "sched-m", "--metrics-listen",
                             "127.0.0.1:0"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        url = _wait_line(_lines(proc), "metrics: ", timeout=120)
        yield proc, url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


async def test_a_separate_process_serves_its_own_metrics(
        scheduler_process: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = scheduler_process
    samples = await scrape(url)
    # Its service registered itself and heartbeats through the database.
    assert sample(samples, "cirrus_db_unit_seconds_count", kind="write") >= 1
    assert ("cirrus_scheduler_decision_seconds_count",
            frozenset({("outcome", "selected")})) in samples
    assert not any(n.startswith("cirrus_api_") and v for (n, _), v in samples.items())
    assert proc.poll() is None


@pytest.mark.parametrize("listen, counted", [("", False), ("0", False), ("127.0.0.1:0", True)])
def test_a_cloud_that_serves_no_metrics_counts_nothing(tmp_path: Path, listen: str,
                                                       counted: bool) -> None:
    from cirrus.config import Settings

    cloud = Cloud(Settings(state_dir=tmp_path, metrics_listen=listen))
    assert (cloud.metrics is not None) == counted
