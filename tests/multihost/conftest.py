"""A deployment of separate processes on RabbitMQ and PostgreSQL.

1 API, 2 conductors, 1 scheduler and 3 computes (fake driver), each a
``cirrus <role>`` subprocess with its own log in the state dir. Needs
scripts/setup-rabbitmq.sh and scripts/setup-postgres.sh (the test command runs
them); skips, saying why, when either is unreachable.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx
import pytest
import sqlalchemy as sa

from tests.client.conftest import free_port
from tests.databases import drop_database

AMQP = os.environ.get("CIRRUS_TEST_TRANSPORT_URL", "amqp://cirrus:cirrus@127.0.0.1:5672/cirrus")
PG = os.environ.get("CIRRUS_TEST_PG_URL", "postgresql+psycopg://cirrus:cirrus@127.0.0.1:5432/cirrus")

# Short timers so failures surface within the test's patience.
BUILD_TIMEOUT = 20.0
DOWN_TIME = 5.0
ENV = {"CIRRUS_REPORT_INTERVAL": "1", "CIRRUS_SERVICE_DOWN_TIME": str(DOWN_TIME),
       "CIRRUS_INSTANCE_BUILD_TIMEOUT": str(BUILD_TIMEOUT),
       "CIRRUS_QUOTA_INSTANCES": "1000", "CIRRUS_QUOTA_CORES": "10000",
       "CIRRUS_QUOTA_RAM": "10000000", "CIRRUS_AUTO_ALLOCATE_CIDR": "10.0.0.0/20",
       "CIRRUS_DB_CHECK_UNITS": "1"}
# host3 spawns slowly, so a SIGKILL always finds builds in flight there.
SLOW_HOST = "host3"
SLOW_SPAWN = "1.0"


def unreachable() -> str | None:
    """Why the deployment cannot run here, or None."""
    try:
        engine = sa.create_engine(PG)
        with engine.connect():
            pass
        engine.dispose()
    except Exception as exc:  # noqa: BLE001
        return f"PostgreSQL unreachable: {exc}"
    try:
        socket.create_connection(("127.0.0.1", 5672), timeout=2).close()
    except OSError as exc:
        return f"RabbitMQ unreachable: {exc}"
    return None


def fresh_vhost(name: str) -> str | None:
    """The transport URL of a new RabbitMQ vhost ``name``, or None without a local
    ``rabbitmqctl``. A vhost per deployment: durable queues are named by topic
    (``conductor``, ``compute.host1``), so two deployments on one vhost — a
    concurrent run, or a stale message from a killed one — would consume each
    other's work."""
    user = AMQP.split("://", 1)[1].split(":", 1)[0]
    try:
        for args in (["add_vhost", name], ["set_permissions", "-p", name, user, ".*", ".*", ".*"]):
            subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return AMQP.rsplit("/", 1)[0] + "/" + name


def drop_vhost(name: str) -> None:
    try:
        subprocess.run(["rabbitmqctl", "delete_vhost", name], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        pass  # an empty vhost left behind costs nothing


@dataclass
class Deployment:
    url: str
    state: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, role: str, host: str | None = None, *extra: str, **env: str
              ) -> subprocess.Popen:
        """``cirrus ROLE --host HOST EXTRA…`` as a subprocess (replacing an exited one
        of that name), with ``env`` added to the deployment's environment."""
        name = host or role
        args = [role, *(["--host", host] if host else []), *extra]
        with open(self.state / f"{name}.log", "a") as log:
            proc = subprocess.Popen([sys.executable, "-m", "cirrus.cli.main", *args,
                                     "--state-dir", str(self.state)], env={**self.env, **env},
                                    stdout=log, stderr=subprocess.STDOUT)
        self.procs[name] = proc
        return proc

    def start_compute(self, host: str) -> subprocess.Popen:
        extra = {"CIRRUS_FAKE_SPAWN_DELAY": SLOW_SPAWN} if host == SLOW_HOST else {}
        return self.start("compute", host, **extra)

    def stop(self, name: str, sig: int = signal.SIGTERM) -> int:
        proc = self.procs[name]
        proc.send_signal(sig)
        return proc.wait(timeout=30)

    def queued(self, queue: str) -> int:
        """Messages in ``queue`` not yet acknowledged (ready or delivered)."""
        vhost = self.env["CIRRUS_TRANSPORT_URL"].rsplit("/", 1)[1]
        out = subprocess.run(["rabbitmqctl", "-q", "list_queues", "-p", vhost, "name",
                              "messages_ready", "messages_unacknowledged"], check=True,
                             capture_output=True, text=True, timeout=60).stdout
        for line in out.splitlines():
            fields = line.split()
            if fields and fields[0] == queue:
                return int(fields[1]) + int(fields[2])
        return 0


def _wait_api(url: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/identity/v3", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "api did not start"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    reason = unreachable()
    if reason:
        pytest.skip(reason)
    name = f"cirrus_mh_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    db_url = PG.rsplit("/", 1)[0] + "/" + name
    state = tmp_path_factory.mktemp("mh")
    port = free_port()
    transport_url = fresh_vhost(name) or AMQP
    env = {**os.environ, **ENV, "CIRRUS_DATABASE_URL": db_url,
           "CIRRUS_TRANSPORT_URL": transport_url}
    dep = Deployment(f"http://127.0.0.1:{port}", state, env)
    subprocess.run([sys.executable, "-m", "cirrus.cli.main", "db", "upgrade", "--state-dir",
                    str(state)], env=env, check=True, capture_output=True)
    try:
        dep.start("api", None, "--bind", f"127.0.0.1:{port}", "--no-defaults")
        _wait_api(dep.url)
        for host in ("cond1", "cond2"):
            dep.start("conductor", host)
        dep.start("scheduler", "sched1")
        for host in ("host1", "host2", "host3"):
            dep.start_compute(host)
        yield dep
    finally:
        for proc in dep.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in dep.procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        with admin.connect() as conn:
            drop_database(conn, name)
        admin.dispose()
        if transport_url != AMQP:
            drop_vhost(name)

