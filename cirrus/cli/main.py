"""The ``cirrus`` command: run the cloud and administer it."""
from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from cirrus import log
from cirrus.config import Settings, load_settings
from cirrus.image.tiny import DEFAULT_OUTPUT as TINY_OUTPUT
from cirrus.preflight import check_state_dir, listen_socket
from cirrus.utils import spawn

LOG = logging.getLogger("cirrus")
# uvicorn closes an idle keep-alive connection after 5 s by default. Its timer
# runs before the loop reads sockets, so under load (the loop late by the time
# of an iteration) a request a client sent on the connection just before the
# deadline was dropped unread: the client saw a reset (httpx.ReadError) for a
# POST it cannot safely retry. Idle connections are cheap; keep them longer.
KEEP_ALIVE_S = 75
# The cyclic garbage collector, after start-up (see settle_heap).
GC_THRESHOLDS = (100_000, 50, 100)


def settle_heap() -> None:
    """Freeze what start-up built, and collect cycles less often.

    Almost everything a running cloud frees goes by reference counting; the
    collector mostly re-scans long-lived objects — modules, routes, compiled
    statements, caches. Under boot load it ran every 700 container allocations
    and cost 0.6–0.9 ms of loop CPU per boot, and a full collection every ~1000
    boots stopped the loop for 135–440 ms. Start-up objects are frozen
    (never scanned again) and young collections happen every 100,000
    allocations; cycles still get collected, later.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def uvicorn_config(app: Any, settings: Settings) -> Any:
    """How the API is served: quiet, no lifespan, 5 s to drain, idle
    connections kept :data:`KEEP_ALIVE_S`, each response written at once."""
    import uvicorn

    from cirrus.api.server import ApiProtocol

    # ApiProtocol: each response written in one call (cirrus/api/server.py).
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning",
                          access_log=False, lifespan="off", timeout_graceful_shutdown=5,
                          timeout_keep_alive=KEEP_ALIVE_S, http=ApiProtocol)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML configuration file (or CIRRUS_CONFIG)")
    parser.add_argument("--state-dir", type=Path, help="database, images, logs, clouds.yaml")
    parser.add_argument("--database-url", help="SQLAlchemy URL (default: SQLite in the state dir)")
    parser.add_argument("--transport-url", help="inprocess:// (default) or amqp://…")
    parser.add_argument("--log-level", help="DEBUG, INFO, WARNING…")
    parser.add_argument("--metrics-listen",
                        help="HOST:PORT to serve Prometheus metrics on (0: none)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cirrus", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="run the whole cloud in one process")
    _common(up)
    up.add_argument("--bind", help="HOST:PORT to listen on (default 127.0.0.1:8774)")
    up.add_argument("--public-url", help="URL clients use, if not http://BIND")
    up.add_argument("--computes", type=int, help="number of simulated compute hosts")
    up.add_argument("--driver", dest="compute_driver", help="compute driver: fake or libvirt")
    up.add_argument("--no-defaults", dest="bootstrap_defaults", action="store_false",
                    default=None, help="a fresh state dir gets no default image and network")
    up.add_argument("--api-workers", type=int,
                    help="serve the API from this many processes beside the engine's "
                         "(0: everything in one process)")
    up.set_defaults(func=cmd_up)

    for role, text in (("api", "the HTTP API only (identity, compute, network, image, "
                               "volume)"),
                       ("conductor", "one conductor"), ("scheduler", "one scheduler"),
                       ("compute", "one compute host"),
                       ("volume", "the volume service (its sweep; os-services' entries)")):
        proc = sub.add_parser(role, help=f"run {text} in this process")
        _common(proc)
        proc.add_argument("--host", dest="compute_host",
                          help="this service's host name (default: the machine's)")
        if role == "api":
            proc.add_argument("--bind", help="HOST:PORT to listen on")
            proc.add_argument("--public-url", help="URL clients use, if not http://BIND")
            proc.add_argument("--no-defaults", dest="bootstrap_defaults", action="store_false",
                              default=None,
                              help="a fresh state dir gets no default image and network")
        if role == "compute":
            proc.add_argument("--driver", dest="compute_driver", help="fake or libvirt")
        proc.set_defaults(func=cmd_process, role=role)

    image = sub.add_parser("image", help="guest images")
    imagesub = image.add_subparsers(dest="image_command", required=True)
    tiny = imagesub.add_parser("build-tiny", help="build the tiny guest (Debian kernel + "
                               "busybox) and register it in a cloud")
    tiny.add_argument("--os-cloud", help="cloud in clouds.yaml (default: OS_CLOUD)")
    tiny.add_argument("--output", type=Path, default=TINY_OUTPUT,
                      help="where the kernel, ramdisk and disk are built")
    tiny.add_argument("--name", default="cirrus-tiny", help="image name")
    tiny.add_argument("--visibility", default="public", help="public, shared or private")
    tiny.add_argument("--no-register", action="store_true", help="only build")
    tiny.set_defaults(func=cmd_build_tiny)

    db = sub.add_parser("db", help="database administration")
    dbsub = db.add_subparsers(dest="db_command", required=True)
    upgrade = dbsub.add_parser("upgrade", help="apply schema migrations")
    _common(upgrade)
    upgrade.set_defaults(func=cmd_db_upgrade)
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    keys = ("state_dir", "database_url", "transport_url", "log_level", "bind",
            "public_url", "computes", "compute_driver", "compute_host", "api_workers",
            "bootstrap_defaults", "metrics_listen")
    overrides = {k: getattr(args, k, None) for k in keys}
    return load_settings(getattr(args, "config", None), overrides=overrides)


def setup_logging(settings: Settings) -> None:
    logdir = settings.state_dir / "logs"
    logdir.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [logging.FileHandler(logdir / "cirrus.log"),
                                       logging.StreamHandler(sys.stderr)]
    handlers[1].setLevel(logging.WARNING)
    for h in handlers:
        h.setFormatter(log.formatter(settings.log_format))
        h.addFilter(log.ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = handlers
    root.setLevel(settings.log_level.upper())


def quiet_server(config: Any, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM),
                 on_stop: Callable[[], None] | None = None) -> Any:
    """A uvicorn server that stops on ``signals`` and then returns normally
    (uvicorn re-raises the signal after shutdown, which would exit non-zero).

    With ``on_stop``, the first signal calls it instead (from the signal
    handler: it may only schedule work), and the server goes on serving
    until something sets ``should_exit``; a second signal stops it at once."""
    import contextlib

    import uvicorn

    class Server(uvicorn.Server):
        stopping = False

        def handle_exit(self, sig: int, frame: Any) -> None:
            if on_stop is None or self.stopping:
                super().handle_exit(sig, frame)
                return
            self.stopping = True
            on_stop()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            originals = {sig: signal.signal(sig, self.handle_exit)
                         for sig in signals}
            try:
                yield
            finally:
                for sig, handler in originals.items():
                    signal.signal(sig, handler)
    return Server(config)


def announce_metrics(cloud: Any) -> None:
    """Say where this process serves its metrics, if it does."""
    if cloud.exporter is not None:
        print(f"metrics: {cloud.exporter.url}", flush=True)


def announce_clouds_yaml(clouds: Path) -> None:
    """Tell the user where the clouds.yaml just written is and how to use it."""
    print(f"clouds.yaml: {clouds}", flush=True)
    print(f"  export OS_CLIENT_CONFIG_FILE={clouds}; openstack --os-cloud cirrus server list",
          flush=True)


async def serve(settings: Settings) -> None:
    """Start every service and the HTTP API; return on SIGINT/SIGTERM."""
    from cirrus.bootstrap import Cloud, write_clouds_yaml

    # Bound first: a taken port is one line before anything else has started.
    sock = listen_socket(settings.host, settings.port)
    cloud = Cloud(settings)
    try:
        await cloud.start()
    except BaseException:
        sock.close()
        raise
    settle_heap()
    loop = asyncio.get_running_loop()
    draining: list[asyncio.Task[None]] = []

    def stop_gracefully() -> None:
        def exit_now() -> None:
            server.should_exit = True
        draining.append(spawn(drain_then(cloud, exit_now), name="cirrus-drain"))

    def on_signal() -> None:  # in the signal handler: only schedule
        loop.call_soon_threadsafe(stop_gracefully)
    try:
        server = quiet_server(uvicorn_config(cloud.app, settings), on_stop=on_signal)
        print(f"cirrus is up at {settings.public_url}", flush=True)
        announce_metrics(cloud)
        announce_clouds_yaml(write_clouds_yaml(settings))
        await server.serve(sockets=[sock])
    finally:
        for task in draining:  # a second signal ends the grace period early
            task.cancel()
        await asyncio.gather(*draining, return_exceptions=True)
        await cloud.stop()
        sock.close()
        print("cirrus stopped", flush=True)


async def drain_then(cloud: Any, done: Callable[[], None]) -> None:
    """SIGTERM's grace period: ``cloud.drain()``, then ``done()`` (which
    ends the serving). Printed, so an operator sees why it waits."""
    grace = cloud.settings.shutdown_grace_period
    print(f"cirrus is shutting down: new builds are refused; builds in flight get {grace:g} s "
          "to finish (a second signal stops at once)", flush=True)
    left = await cloud.drain()
    if left:
        LOG.warning("%d builds did not finish within the %g s grace period; they go to ERROR",
                    left, grace)
    done()


def event_loop_runner() -> Any:
    """``uvloop.run`` where uvloop is installed, else ``asyncio.run``."""
    try:
        import uvloop

        return uvloop.run
    except ImportError:
        return asyncio.run


def cmd_up(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    check_state_dir(settings.state_dir)  # before the log file is opened in it
    setup_logging(settings)
    try:
        if settings.api_workers > 0:
            from cirrus.cli import workers

            return workers.run(settings)
        event_loop_runner()(serve(settings))
    except KeyboardInterrupt:
        pass
    return 0


async def run_process(settings: Settings, role: str) -> None:
    """One service (or the API) until SIGINT/SIGTERM. The schema must exist
    (``cirrus db upgrade``); only the API process bootstraps data, and writes
    ``STATE_DIR/clouds.yaml`` for it."""
    from cirrus.bootstrap import Cloud, write_clouds_yaml

    sock = listen_socket(settings.host, settings.port) if role == "api" else None
    cloud = Cloud(settings, api=role == "api", roles=() if role == "api" else (role,),
                  prepare_db=role == "api")
    try:
        await cloud.start()
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    settle_heap()
    announce_metrics(cloud)
    try:
        if sock is not None:
            print(f"cirrus api listening at {settings.public_url}", flush=True)
            # As ``cirrus up``: the users exist now (this process bootstrapped them).
            announce_clouds_yaml(write_clouds_yaml(settings))
            await quiet_server(uvicorn_config(cloud.app, settings)).serve(sockets=[sock])
        else:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            print(f"cirrus {role} running as {cloud.services[0].host}", flush=True)
            await stop.wait()
    finally:
        await cloud.stop()


def cmd_process(args: argparse.Namespace) -> int:
    import socket

    settings = settings_from(args)
    if not settings.compute_host and args.role != "api":
        settings.compute_host = socket.gethostname()
    check_state_dir(settings.state_dir)
    setup_logging(settings)
    # uvloop as ``cirrus up``: the loop's own Python (select, handles, callbacks)
    # was a fifth of a conductor's CPU on asyncio's (docs/performance.md).
    event_loop_runner()(run_process(settings, args.role))
    return 0


def cmd_build_tiny(args: argparse.Namespace) -> int:
    from cirrus.image.tiny import BuildError, build
    from cirrus.image.tiny.register import CloudConfigError, load_cloud, register

    try:
        guest = build(args.output)
        print(f"built {guest.kernel}, {guest.ramdisk}, {guest.disk} (kernel {guest.kernel_version})")
        if args.no_register:
            return 0
        ids = register(guest, load_cloud(args.os_cloud), args.name, args.visibility)
    except (BuildError, CloudConfigError) as e:
        print(f"cirrus: {e}", file=sys.stderr)
        return 1
    for role, image_id in ids.items():
        print(f"{role} {image_id}")
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from cirrus.db import migrate

    settings = settings_from(args)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(settings.database_url)
    print(f"database at revision {migrate.current(settings.database_url)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from cirrus.exception import CirrusException

    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"cirrus: {exc}", file=sys.stderr)
        return 2
    except CirrusException as exc:  # e.g. the hypervisor cannot be reached at start
        print(f"cirrus: {exc.format_message()}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
