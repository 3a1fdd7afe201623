"""Services as separate processes on RabbitMQ and PostgreSQL (issue: many hosts).

Needs scripts/setup-rabbitmq.sh and scripts/setup-postgres.sh (the test command
runs them); skips, saying why, when either is unreachable.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Iterator

import httpx
import pytest
import sqlalchemy as sa

from tests.client.conftest import free_port

AMQP = os.environ.get("CIRRUS_TEST_TRANSPORT_URL", "amqp://cirrus:cirrus@127.0.0.1:5672/cirrus")
PG = os.environ.get("CIRRUS_TEST_PG_URL", "postgresql+psycopg://cirrus:cirrus@127.0.0.1:5432/cirrus")


def _reachable() -> str | None:
    try:
        engine = sa.create_engine(PG)
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # noqa: BLE001
        return f"PostgreSQL unreachable: {exc}"
    import socket

    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError as exc:
        return f"RabbitMQ unreachable: {exc}"
    return None


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    reason = _reachable()
    if reason:
        pytest.skip(reason)
    name = f"cirrus_mh_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    db_url = PG.rsplit("/", 1)[0] + "/" + name
    vhost_url = AMQP
    state = tmp_path_factory.mktemp("mh")
    port = free_port()
    env = {**os.environ, "CIRRUS_DATABASE_URL": db_url, "CIRRUS_TRANSPORT_URL": vhost_url,
           "CIRRUS_REPORT_INTERVAL": "1", "CIRRUS_SERVICE_DOWN_TIME": "5",
           "CIRRUS_QUOTA_INSTANCES": "1000", "CIRRUS_QUOTA_CORES": "10000",
           "CIRRUS_QUOTA_RAM": "10000000", "CIRRUS_AUTO_ALLOCATE_CIDR": "10.0.0.0/20",
           "CIRRUS_INSTANCE_BUILD_TIMEOUT": "20"}
    procs: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        log = open(state / f"{'-'.join(args)}.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", *args, "--state-dir",
                                 str(state)], env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)
        return proc

    subprocess.run([sys.executable, "-m", "cirrus.cli.main", "db", "upgrade", "--state-dir",
                    str(state)], env=env, check=True, capture_output=True)
    start("api", "--bind", f"127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/identity/v3", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "api did not start"
        time.sleep(0.2)
    for i in (1, 2):
        start("conductor", "--host", f"cond{i}")
    start("scheduler", "--host", "sched1")
    computes = {f"host{i}": start("compute", "--host", f"host{i}") for i in (1, 2, 3)}
    scheduler = procs[3]
    try:
        yield {"url": url, "computes": computes, "state": state, "start": start,
               "scheduler": scheduler}
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        with admin.connect() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        admin.dispose()


def _client(url: str) -> httpx.Client:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": "admin"}}},
        "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}}
    token = httpx.post(f"{url}/identity/v3/auth/tokens", json=body).headers["X-Subject-Token"]
    return httpx.Client(base_url=url, headers={"X-Auth-Token": token}, timeout=60)


def _wait_computes(client: httpx.Client, count: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        hyps = client.get("/compute/v2.1/os-hypervisors").json()["hypervisors"]
        if len([h for h in hyps if h["state"] == "up"]) >= count:
            return
        assert time.monotonic() < deadline, hyps
        time.sleep(0.5)


def _boot(client: httpx.Client, image: str, n: int, prefix: str) -> list[str]:
    ids = []
    for i in range(n):
        resp = client.post("/compute/v2.1/servers", json={"server": {
            "name": f"{prefix}{i}", "imageRef": image, "flavorRef": "1", "networks": "auto"}})
        assert resp.status_code == 202, resp.text
        ids.append(resp.json()["server"]["id"])
    return ids


def _final(client: httpx.Client, ids: list[str], timeout: float = 120) -> dict[str, dict]:
    deadline = time.monotonic() + timeout
    while True:
        servers = {s["id"]: s for s in client.get("/compute/v2.1/servers/detail",
                                                  params={"limit": 1000}).json()["servers"]}
        done = {i: servers[i] for i in ids if servers[i]["status"] in ("ACTIVE", "ERROR")}
        if len(done) == len(ids):
            return done
        assert time.monotonic() < deadline, {i: servers[i]["status"] for i in ids if i not in done}
        time.sleep(0.5)


def test_boots_spread_over_three_compute_processes(deployment: dict) -> None:
    with _client(deployment["url"]) as client:
        _wait_computes(client, 3)
        resp = client.post("/image/v2/images", json={"name": "mh", "disk_format": "raw",
                                                     "container_format": "bare"})
        image = resp.json()["id"]
        client.put(f"/image/v2/images/{image}/file", content=b"x" * 64,
                   headers={"Content-Type": "application/octet-stream"})
        ids = _boot(client, image, 30, "mh")
        final = _final(client, ids)
        assert [s["status"] for s in final.values()].count("ACTIVE") == 30
        hosts = {s["OS-EXT-SRV-ATTR:host"] for s in final.values()}
        assert hosts == {"host1", "host2", "host3"}


def test_killed_compute_leaves_nothing_in_build(deployment: dict) -> None:
    with _client(deployment["url"]) as client:
        image = client.get("/image/v2/images", params={"name": "mh"}).json()["images"][0]["id"]
        ids = _boot(client, image, 15, "kill")
        deployment["computes"]["host3"].send_signal(signal.SIGKILL)
        final = _final(client, ids, timeout=90)
        for server in final.values():
            assert server["status"] == "ACTIVE" or server.get("fault"), server
        after = _boot(client, image, 6, "after")  # host3 is down: the scheduler skips it
        time.sleep(6)
        final = _final(client, after, timeout=90)
        assert all(s["status"] == "ACTIVE" for s in final.values()), final


def test_scheduler_restart_then_boots_succeed(deployment: dict) -> None:
    with _client(deployment["url"]) as client:
        image = client.get("/image/v2/images", params={"name": "mh"}).json()["images"][0]["id"]
        old = deployment["scheduler"]
        old.send_signal(signal.SIGTERM)
        assert old.wait(timeout=20) == 0
        deployment["start"]("scheduler", "--host", "sched1")
        ids = _boot(client, image, 4, "resched")
        final = _final(client, ids, timeout=90)
        assert all(s["status"] == "ACTIVE" for s in final.values()), final


def test_broker_restart_mid_burst(deployment: dict) -> None:
    """Every accepted request ends ACTIVE or ERROR with a reason."""
    with _client(deployment["url"]) as client:
        image = client.get("/image/v2/images", params={"name": "mh"}).json()["images"][0]["id"]
        accepted = _boot(client, image, 5, "burst-a")
        subprocess.run(["rabbitmqctl", "stop_app"], check=True, capture_output=True, timeout=60)
        subprocess.run(["rabbitmqctl", "start_app"], check=True, capture_output=True, timeout=60)
        time.sleep(3)  # services reconnect (connect_robust)
        accepted += _boot(client, image, 5, "burst-b")
        final = _final(client, accepted, timeout=120)
        for server in final.values():
            assert server["status"] == "ACTIVE" or server.get("fault"), server
        assert [s["status"] for s in final.values()][-5:].count("ACTIVE") == 5
