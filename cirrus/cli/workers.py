"""``cirrus up`` in several processes: the engine, and API workers forked from it.

One CPython process runs one core at a time, and a boot's HTTP request, its
provisioning transaction and its build together cost more than the 2 ms a
boot may take at 500 boots/s. So with ``api_workers`` > 0 the engine
(conductor, scheduler, computes) stays in this process and the HTTP API runs
in that many forked workers; they talk over the local bus (a Unix socket the
engine serves, :mod:`cirrus.rpc.local`) and share the database.

The order matters, and is why this is done with ``fork``:

1. the schema and the bootstrap data are prepared here, synchronously;
2. the listening socket is bound here, so a client that connects while a
   worker starts waits in the backlog instead of being refused;
3. the workers are forked while this process has no threads and no event
   loop yet (a fork copies only the calling thread), after the imports and
   a frozen heap, so the pages they share stay shared;
4. then each side starts its loop: the engine serves the bus, the workers
   connect to it (waiting for it if need be) and report ready on a pipe.

The processes live and die together: a signal to any of them stops all; a
worker that exits on its own stops the cloud (its supervisor restarts it).
"""
from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cirrus.config import Settings
from cirrus.metrics.exporter import worker_listen
from cirrus.preflight import database_step, listen_socket
from cirrus.utils import spawn

if sys.platform != "linux":  # pragma: no cover - pidfd_open, fork after imports
    raise ImportError("api workers need Linux")

LOG = logging.getLogger("cirrus")
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0
# sun_path holds 108 bytes; a longer state dir gets its socket in a private temp dir.
_MAX_SOCKET_PATH = 100


@dataclass
class Worker:
    pid: int
    ready_fd: int


def bus_path(settings: Settings) -> str:
    path = str(settings.state_dir.resolve() / "bus.sock")
    if len(path.encode()) <= _MAX_SOCKET_PATH:
        return path
    return os.path.join(tempfile.mkdtemp(prefix="cirrus-bus-"), "bus.sock")


def prepare_database(settings: Settings) -> None:
    """Schema and bootstrap data, before any process opens the database."""
    from cirrus.bootstrap import bootstrap_data
    from cirrus.db import migrate
    from cirrus.db.engine import make_engine

    url = settings.database_url
    database_step(url, migrate.upgrade_if_needed, url)
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            bootstrap_data(conn, settings)
    finally:
        engine.dispose()  # no connection may cross the fork


def run(settings: Settings) -> int:
    """Run the cloud as one engine and ``settings.api_workers`` API workers."""
    # Cloud is imported (with everything it imports) before the fork: shared pages.
    from cirrus.bootstrap import Cloud, write_clouds_yaml  # noqa: F401
    from cirrus.cli.main import event_loop_runner

    sock = listen_socket(settings.host, settings.port)  # a taken port: one line, first
    try:
        prepare_database(settings)
    except BaseException:
        sock.close()
        raise
    clouds = write_clouds_yaml(settings)  # before anyone can answer a request
    if settings.transport_url.startswith("inprocess:"):
        settings = replace(settings, transport_url=f"local://{bus_path(settings)}")
    gc.collect()
    gc.freeze()  # what the workers inherit is never scanned, so never copied
    workers = [_fork_worker(settings, sock, n) for n in range(settings.api_workers)]
    sock.close()
    return event_loop_runner()(_engine(settings, workers, clouds))


def _fork_worker(settings: Settings, sock: socket.socket, n: int) -> Worker:
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(ready_w)
        return Worker(pid, ready_r)
    os.close(ready_r)
    # Its own registry, so its own port (the engine's + 1 + n).
    settings = replace(settings, metrics_listen=worker_listen(settings.metrics_listen, n))
    # A Ctrl-C reaches every process of the terminal's group; the engine stops
    # the workers itself (SIGTERM), after which they drain their requests.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGUSR1: the engine is draining (set to refuse builds once the API runs).
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    code = 1
    try:
        from cirrus.cli.main import event_loop_runner

        code = event_loop_runner()(_api_worker(settings, sock, ready_w, n))
    except BaseException:  # noqa: BLE001 - a worker must never return into the parent's code
        LOG.exception("api worker %d failed", n)
    finally:
        logging.shutdown()
        os._exit(code)


async def _api_worker(settings: Settings, sock: socket.socket, ready_w: int, n: int) -> int:
    from cirrus.bootstrap import Cloud
    from cirrus.cli.main import quiet_server, settle_heap, uvicorn_config

    cloud = Cloud(settings, api=True, roles=(), prepare_db=False)
    try:
        await cloud.start()
        settle_heap()
        admission = cloud.state["compute_api"].admission
        signal.signal(signal.SIGUSR1, lambda _sig, _frame: admission.close())
        server = quiet_server(uvicorn_config(cloud.app, settings), signals=(signal.SIGTERM,))
        serving = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        os.write(ready_w, b"1")
        os.close(ready_w)
        lost = asyncio.ensure_future(cloud.transport.wait_lost())  # type: ignore[union-attr]
        await asyncio.wait([serving, lost], return_when=asyncio.FIRST_COMPLETED)
        if lost.done():
            LOG.error("api worker %d: the engine went away; stopping", n)
            server.should_exit = True
            await serving
            return 1
        lost.cancel()
        serving.result()
        return 0
    finally:
        await cloud.stop()


async def _engine(settings: Settings, workers: list[Worker], clouds: Path) -> int:
    from cirrus.bootstrap import Cloud
    from cirrus.cli.main import announce_clouds_yaml, announce_metrics, drain_then, settle_heap

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()  # set by a signal, or by a worker that exited
    signalled = False
    exited: dict[int, int] = {}

    cloud = Cloud(settings, api=False, prepare_db=False, bus_hub=True, defaults=True)
    ready = False
    draining: list[asyncio.Task[None]] = []

    def on_signal() -> None:
        nonlocal signalled
        again, signalled = signalled, True
        if again or not ready:  # a second signal, or one while starting: stop now
            stop.set()
            return
        # The workers refuse new builds (SIGUSR1) while the engine lets those
        # in flight finish; then they are stopped (SIGTERM), and the engine.
        _signal_workers(workers, exited, signal.SIGUSR1)
        draining.append(spawn(drain_then(cloud, stop.set), name="cirrus-drain"))

    def reap(worker: Worker, pidfd: int) -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(worker.pid, 0)
        exited[worker.pid] = os.waitstatus_to_exitcode(status)
        if not stop.is_set():
            LOG.log(logging.INFO if exited[worker.pid] == 0 else logging.ERROR,
                    "api worker %d exited (%d); stopping the cloud", worker.pid, exited[worker.pid])
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    for worker in workers:
        pidfd = os.pidfd_open(worker.pid)
        loop.add_reader(pidfd, reap, worker, pidfd)

    try:
        await cloud.start()
        settle_heap()
        ready = await _all_ready(workers, stop)
        if ready:
            print(f"cirrus is up at {settings.public_url} "
                  f"(engine pid {os.getpid()}, {len(workers)} api workers)", flush=True)
            announce_metrics(cloud)
            announce_clouds_yaml(clouds)
            await stop.wait()
    finally:
        for task in draining:
            task.cancel()
        await asyncio.gather(*draining, return_exceptions=True)
        await _stop_workers(workers, exited)
        await cloud.stop()
        print("cirrus stopped", flush=True)
    # A stop asked for (even while starting) is a clean exit; a worker that
    # failed or exited on its own is not.
    failed = any(code not in (0, -signal.SIGTERM) for code in exited.values()) or not (
        ready or signalled)
    return 1 if failed else 0


async def _all_ready(workers: list[Worker], stop: asyncio.Event) -> bool:
    """Wait until every worker serves; False if one fails first or we are told to stop."""
    loop = asyncio.get_running_loop()
    for worker in workers:
        read = loop.run_in_executor(None, os.read, worker.ready_fd, 1)
        stopped = asyncio.ensure_future(stop.wait())
        either: list[asyncio.Future[Any]] = [read, stopped]
        done, _ = await asyncio.wait(either, timeout=READY_TIMEOUT,
                                     return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        if read in done and read.result() == b"1":
            os.close(worker.ready_fd)
            continue
        if not stop.is_set():
            LOG.error("api worker %d did not start in %.0f s", worker.pid, READY_TIMEOUT)
        return False
    return True


async def _stop_workers(workers: list[Worker], exited: dict[int, int]) -> None:
    """SIGTERM the workers still running (they drain their requests), then wait."""
    running = [w for w in workers if w.pid not in exited]
    _signal_workers(running, exited, signal.SIGTERM)
    deadline = asyncio.get_running_loop().time() + STOP_TIMEOUT
    while any(w.pid not in exited for w in running):
        if asyncio.get_running_loop().time() > deadline:
            for worker in running:
                if worker.pid not in exited:
                    LOG.error("api worker %d did not stop; killing it", worker.pid)
                    os.kill(worker.pid, signal.SIGKILL)
            break
        await asyncio.sleep(0.05)


def _signal_workers(workers: list[Worker], exited: dict[int, int], sig: int) -> None:
    for worker in workers:
        if worker.pid in exited:
            continue
        try:
            os.kill(worker.pid, sig)
        except ProcessLookupError:
            pass
