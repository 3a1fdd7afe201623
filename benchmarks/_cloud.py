"""Shared benchmark helpers: start ``cirrus up`` (or every service as its own process
on RabbitMQ and PostgreSQL) on a free port, log in, measure RSS."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

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


def pss_mb(pid: int) -> float:
    """Proportional set size of ``pid`` in MiB: its resident pages, each shared
    one divided among the processes sharing it — what summing over the
    processes of one cloud should count (RSS counts a forked worker's shared
    pages twice)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def with_children(pid: int) -> list[int]:
    """``pid`` and its child processes (the API workers of ``cirrus up --api-workers``)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [pid, *(int(p) for p in path.read_text().split())] if path.exists() else [pid]


def token(url: str, user: str = "admin", password: str = "admin") -> str:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": user, "domain": {"id": "default"}}}}}
    resp = httpx.post(f"{url}/identity/v3/auth/tokens", json=body, timeout=30)
    resp.raise_for_status()
    return resp.headers["X-Subject-Token"]


def wait_for_token(url: str, proc: subprocess.Popen[Any], timeout: float = 60) -> bool:
    """True once ``url`` issues a token; False if ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            token(url)
            return True
        except (httpx.HTTPError, OSError):
            if proc.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(0.05)


@contextlib.contextmanager
def running_cloud(computes: int, env: dict[str, str] | None = None,
                  state_dir: str | None = None, port: int | None = None,
                  extra: Sequence[str] = ()) -> Iterator[tuple[str, subprocess.Popen[Any]]]:
    """``cirrus up`` (with ``extra`` arguments) in a subprocess (on ``port``,
    else a free one); yields (url, process); stops it after."""
    port = port or free_port()
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "cirrus.cli.main", "up", "--state-dir", state_dir or tmp,
               "--bind", f"127.0.0.1:{port}", "--no-defaults", "--computes", str(computes), *extra]
        proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}"
        if not wait_for_token(url, proc):
            raise RuntimeError(f"cirrus up failed: {proc.stdout.read() if proc.stdout else ''}")
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


# -- services as separate processes on RabbitMQ and PostgreSQL ----------------------------
BENCH_PG = os.environ.get("CIRRUS_BENCH_PG_URL",
                          "postgresql+psycopg://cirrus:cirrus@127.0.0.1:5432/cirrus")
BENCH_AMQP = os.environ.get("CIRRUS_BENCH_TRANSPORT_URL",
                            "amqp://cirrus:cirrus@127.0.0.1:5672/cirrus")


def _rabbitmqctl(*args: str) -> None:
    subprocess.run(["rabbitmqctl", *args], check=True, capture_output=True, timeout=60)


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new PostgreSQL database on the benchmark server; its URL. Dropped after."""
    import sqlalchemy as sa

    name = f"cirrus_bench_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(BENCH_PG, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield BENCH_PG.rsplit("/", 1)[0] + "/" + name
    finally:
        _drop_database(admin, name)
        admin.dispose()


def _drop_database(admin: Any, name: str, tries: int = 10) -> None:
    """Drop ``name``; a database left behind is reported, never the run's
    failure. ``WITH (FORCE)`` ends our own leftover connections, but cannot
    end an autovacuum worker there (a superuser's backend: seen after a heavy
    run, the run's figures lost with the traceback); a plain DROP stops
    autovacuum itself, so that is tried next, a second apart."""
    import sqlalchemy as sa

    error: Any = None
    for attempt in range(tries):
        force = " WITH (FORCE)" if attempt % 2 == 0 else ""
        try:
            with admin.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}{force}"))
            return
        except sa.exc.DBAPIError as exc:
            error = exc.orig
            time.sleep(1.0)
    print(f"benchmark database {name} left behind: {error}", file=sys.stderr)


@contextlib.contextmanager
def fresh_vhost() -> Iterator[str]:
    """A RabbitMQ vhost of its own (queues are named by topic, so a deployment
    sharing a vhost with a test run would consume its messages); its URL."""
    name = f"cirrus_bench_{uuid.uuid4().hex[:8]}"
    user = BENCH_AMQP.split("://", 1)[1].split(":", 1)[0]
    _rabbitmqctl("add_vhost", name)
    try:
        _rabbitmqctl("set_permissions", "-p", name, user, ".*", ".*", ".*")
        yield BENCH_AMQP.rsplit("/", 1)[0] + "/" + name
    finally:
        _rabbitmqctl("delete_vhost", name)


def _wait_hypervisors(url: str, count: int, timeout: float = 120) -> None:
    headers = {"X-Auth-Token": token(url)}
    deadline = time.monotonic() + timeout
    while True:
        hyps = httpx.get(f"{url}/compute/v2.1/os-hypervisors", headers=headers,
                         timeout=30).json()["hypervisors"]
        if len([h for h in hyps if h["state"] == "up"]) >= count:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(hyps)} of {count} compute hosts came up")
        time.sleep(0.5)


@contextlib.contextmanager
def running_deployment(computes: int, conductors: int, env: dict[str, str] | None = None,
                       database: str | None = None
                       ) -> Iterator[tuple[str, list[subprocess.Popen[Any]]]]:
    """``cirrus api``, ``conductors`` × ``cirrus conductor``, one ``cirrus scheduler``
    and ``computes`` × ``cirrus compute`` on a fresh PostgreSQL database (or
    ``database``, empty) and RabbitMQ vhost; yields (url, processes) once every
    compute host is up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (contextlib.nullcontext(database) if database else fresh_database()) as db_url, \
            fresh_vhost() as mq_url, tempfile.TemporaryDirectory() as state:
        full_env = {**os.environ, **(env or {}), "CIRRUS_DATABASE_URL": db_url,
                    "CIRRUS_TRANSPORT_URL": mq_url}
        base = [sys.executable, "-m", "cirrus.cli.main"]
        subprocess.run([*base, "db", "upgrade", "--state-dir", state], env=full_env, check=True,
                       capture_output=True)
        procs: list[subprocess.Popen[Any]] = []

        def start(*args: str) -> None:
            with open(Path(state) / f"{'-'.join(args)}.log", "w") as log:
                procs.append(subprocess.Popen([*base, *args, "--state-dir", state],
                                              env=full_env, stdout=log, stderr=subprocess.STDOUT))
        try:
            start("api", "--bind", f"127.0.0.1:{port}")
            if not wait_for_token(url, procs[0]):
                raise RuntimeError("cirrus api did not start")
            for i in range(1, conductors + 1):
                start("conductor", "--host", f"bench-cond{i}")
            start("scheduler", "--host", "bench-sched")
            for i in range(1, computes + 1):
                start("compute", "--host", f"bench-compute{i}")
            _wait_hypervisors(url, computes)
            yield url, procs
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
