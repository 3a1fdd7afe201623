"""The composition root: wires settings, database, bus and services.

``Cloud`` is used by ``cirrus up`` (everything in one loop), by the separate
process commands (one service each) and by the tests.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import yaml

from cirrus import observe
from cirrus.api.asgi import ApiApp
from cirrus.api.app import build_app
from cirrus.config import Settings, split_bind
from cirrus.console.serialproxy import SerialProxy
from cirrus.compute.stuck_builds import fail_stuck_builds, shutting_down, stuck_builds
from cirrus.db import migrate
from cirrus.db.engine import Database
from cirrus.first_run import ensure_defaults
from cirrus.metrics import Exporter, MeteredTransport, Metrics
from cirrus.metrics.exporter import parse_listen
from cirrus.network.api import make_network_api
from cirrus.preflight import check_state_dir, database_step, transport_step
from cirrus.rpc import Transport, get_transport
from cirrus.service import Service

if TYPE_CHECKING:
    import httpx  # (imported on first use by cirrus.image.client)

    from cirrus.scheduler.manager import DecisionObserver
    from cirrus.volume.cinder import VolumeAPI

LOG = logging.getLogger(__name__)
DRAIN_POLL_S = 0.1  # how often a drain looks whether the builds in flight are done


def write_clouds_yaml(settings: Settings) -> Path:
    """``STATE_DIR/clouds.yaml`` with the ``cirrus`` and ``cirrus-admin`` clouds."""
    auth_url = settings.public_url.rstrip("/") + "/identity"

    def cloud(user: str, password: str, project: str) -> dict[str, Any]:
        return {"auth": {"auth_url": auth_url, "username": user, "password": password,
                         "project_name": project, "user_domain_name": "Default",
                         "project_domain_name": "Default"},
                "region_name": settings.region, "identity_api_version": 3,
                "interface": "public"}

    path = settings.state_dir / "clouds.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"clouds": {"cirrus": cloud("demo", settings.demo_password, "demo"),
                       "cirrus-admin": cloud("admin", settings.admin_password, "admin")}}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    path.chmod(0o600)
    return path


def bootstrap_data(conn: Any, settings: Settings) -> None:
    """The admin and demo users, projects and roles, and the default flavors."""
    from cirrus.compute.flavors import seed_default_flavors
    from cirrus.identity.bootstrap import bootstrap_identity

    bootstrap_identity(conn, settings.admin_password, settings.demo_password,
                       settings.password_hash_rounds)
    seed_default_flavors(conn)


class Cloud:
    """Every cirrus service this process runs, started and stopped together."""

    def __init__(self, settings: Settings, *, api: bool = True,
                 roles: tuple[str, ...] = ("conductor", "scheduler", "compute", "volume"),
                 prepare_db: bool = True, bus_hub: bool = False,
                 http_transport: httpx.AsyncBaseTransport | None = None,
                 defaults: bool | None = None,
                 volume_api: VolumeAPI | None = None) -> None:
        """``http_transport``: how computes reach the HTTP API (the image
        service); None: over the network, at the configured URLs.
        ``defaults``: this process gives a fresh cloud its defaults, if
        ``bootstrap_defaults`` (None: if it prepares the database and serves the API).
        ``volume_api``: block storage as the compute API and the computes
        reach it (tests pass a fake); None: the configured one."""
        self.make_defaults = prepare_db and api if defaults is None else defaults
        self.settings = settings
        self.http_transport = http_transport
        self.volume_api = volume_api
        self.bus_hub = bus_hub
        self.prepare_db = prepare_db
        self.run_api = api
        self.roles = roles
        self.db: Database | None = None
        self.transport: Transport | None = None
        self.services: list[Service] = []
        self.state: dict[str, Any] = {}
        self.app: ApiApp | None = None
        self.serial_proxy: SerialProxy | None = None
        self.draining = False  # drain() was called: stop() fails the builds left
        # This cloud's own registry (docs/operations.md, "Metrics"); none, and
        # nothing on any path observed, when it serves no metrics.
        self.metrics = Metrics() if parse_listen(settings.metrics_listen) else None
        self.exporter: Exporter | None = None

    async def start(self) -> None:
        """Start everything; on a failure, stop what had started and raise
        (:class:`~cirrus.preflight.StartupError` for a state dir, database
        or bus that cannot be used)."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        s = self.settings
        check_state_dir(s.state_dir)
        loop = asyncio.get_running_loop()
        # Migrated (the API and ``cirrus up``) or at least reached once, so an
        # unreachable database is one line here, not a traceback from a service.
        await loop.run_in_executor(None, database_step, s.database_url,
                                   migrate.upgrade_if_needed if self.prepare_db
                                   else migrate.current, s.database_url)
        m = self.metrics
        self.db = Database(s.database_url, m.db if m else None,
                           check_units=s.db_check_units)
        transport = get_transport(s.transport_url, hub=self.bus_hub)
        self.transport = MeteredTransport(transport, m.bus) if m else transport
        await transport_step(s.transport_url, self.transport.start)
        if self.prepare_db:
            await self.db.run(bootstrap_data, s)
        self.state = await self._build_state()
        if self.make_defaults and s.bootstrap_defaults:
            await ensure_defaults(s, self.db, self.state["images"], self.state["network"])
        for service in self._build_services():
            await service.start()
            self.services.append(service)
        if self.run_api:
            self.app = build_app(self.state)
            if s.serial_console_enabled:
                await self._start_serial_proxy()
        if m is not None:
            self._watch(m)
            self.exporter = Exporter(m.registry, s.metrics_listen)
            self.exporter.start()

    def _watch(self, metrics: Metrics) -> None:
        """Point the metrics at what they read when scraped, and at the boot steps."""
        observe.add_sink(metrics.boot)
        for service in self.services:
            if service.binary == "cirrus-compute":
                metrics.boot.watch_host(service.host, service.endpoint.builds,
                                        self.settings.max_concurrent_builds)
        if "compute_api" in self.state:
            metrics.boot.watch_admission(self.state["compute_api"].admission)

    async def _start_serial_proxy(self) -> None:
        """The serial console proxy beside the API that hands out its URLs."""
        assert self.db is not None
        s = self.settings
        host, port = split_bind(s.serialproxy_bind) if s.serialproxy_bind else (s.host, 0)
        self.serial_proxy = SerialProxy(self.db, host, port)
        await self.serial_proxy.start()
        if not s.serial_console_base_url:
            s.serial_console_base_url = f"ws://{host}:{self.serial_proxy.port}/"

    async def _build_state(self) -> dict[str, Any]:
        """The objects the HTTP handlers use, in ``app.state``."""
        from cirrus.identity.manager import IdentityService

        assert self.db is not None and self.transport is not None
        identity = IdentityService(self.settings, self.db)
        await identity.start()
        state: dict[str, Any] = {"settings": self.settings, "db": self.db,
                                 "transport": self.transport, "identity": identity}
        if self.metrics is not None:  # the API's requests are timed
            state["metrics"] = self.metrics
        for name, factory in _state_factories(self.volume_api, identity.catalog_generation):
            state[name] = factory(self.settings, self.db, self.transport)
        # network-vif-plugged goes to compute's external events, as Neutron's does.
        state["network"].set_event_sink(state["compute_api"].external_instance_event)
        return state

    def _build_services(self) -> list[Service]:
        assert self.db is not None and self.transport is not None
        out: list[Service] = []
        for role in self.roles:
            if role == "compute":
                out.extend(_compute(self.settings, self.db, self.transport, self.http_transport,
                                    self.volume_api))
            elif role == "scheduler":
                out.extend(_scheduler(self.settings, self.db, self.transport,
                                      self.metrics.scheduler if self.metrics else None))
            else:
                out.extend(_SERVICE_BUILDERS[role](self.settings, self.db, self.transport))
        return out

    async def drain(self) -> int:
        """A stop's first step (SIGTERM): from now on every new build is
        refused (503), and the builds in flight that this process runs get
        ``shutdown_grace_period`` seconds to finish. Returns how many did not
        (:meth:`stop` fails them, with a fault that says so)."""
        self.draining = True
        compute_api = self.state.get("compute_api")
        if compute_api is not None:
            compute_api.admission.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.shutdown_grace_period
        while (left := len(await self._unfinished_builds())) and loop.time() < deadline:
            await asyncio.sleep(DRAIN_POLL_S)
        return left

    async def _unfinished_builds(self) -> list[dict[str, Any]]:
        """The builds this process's services own: on its compute hosts, and
        (with a conductor) those not scheduled yet."""
        hosts = [svc.host for svc in self.services if svc.binary == "cirrus-compute"]
        unscheduled = "conductor" in self.roles
        if self.db is None or not (hosts or unscheduled):
            return []
        return await self.db.read(stuck_builds, 0, hosts, unscheduled)

    async def _fail_unfinished_builds(self) -> None:
        """After a drain: the builds the grace period did not see finish go to
        ERROR, their fault naming the shutdown, instead of waiting in BUILD for
        the next start (or ``instance_build_timeout``)."""
        rows = await self._unfinished_builds()
        if rows and self.db is not None:
            network = make_network_api(self.settings, self.db, None, None)
            await fail_stuck_builds(self.db, network, rows,
                                    shutting_down(self.settings.shutdown_grace_period), None)

    async def stop(self) -> None:
        """Stop taking messages, then stop each service; every task they
        started ends with them (none is left running on the loop)."""
        if self.metrics is not None:
            observe.remove_sink(self.metrics.boot)
        if self.exporter is not None:
            await self.exporter.stop()
            self.exporter = None
        if self.serial_proxy is not None:
            await self.serial_proxy.stop()
            self.serial_proxy = None
        # The bus first: a message still being delivered could start work
        # (a build) on a service that has already stopped.
        if self.transport is not None:
            await self.transport.stop()
            self.transport = None
        if self.draining:
            await self._fail_unfinished_builds()
        for service in reversed(self.services):
            await service.stop()
        self.services.clear()
        if self.db is not None:
            self.db.close()
            self.db = None


def _state_factories(volume_api: VolumeAPI | None = None,
                     catalog: Callable[[], int | None] | None = None) -> list[tuple[str, Any]]:
    """(name, factory(settings, db, transport)) for every API-side service
    (``catalog``: the catalog generation the compute API keys its lookups by)."""
    from cirrus.api.metadata.service import make_metadata_service
    from cirrus.compute.api import make_compute_api
    from cirrus.image.api import make_image_api
    from cirrus.network.service import make_network_service
    from cirrus.volume.manager import make_block_storage

    return [("images", make_image_api), ("network", make_network_service),
            ("compute_api", functools.partial(make_compute_api, volume_api=volume_api,
                                              catalog=catalog)),
            ("volume", make_block_storage), ("metadata", make_metadata_service)]


def _conductor(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    from cirrus.conductor.manager import make_services

    return make_services(settings, db, transport)


def _scheduler(settings: Settings, db: Database, transport: Transport,
               observer: DecisionObserver | None = None) -> list[Service]:
    from cirrus.scheduler.manager import make_services

    return make_services(settings, db, transport, observer)


def _compute(settings: Settings, db: Database, transport: Transport,
             http_transport: httpx.AsyncBaseTransport | None = None,
             volume_api: VolumeAPI | None = None) -> list[Service]:
    from cirrus.compute.manager import make_services

    return make_services(settings, db, transport, http_transport, volume_api)


# The services a process can run, by role (``cirrus up`` runs all three).
def _volume(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    from cirrus.volume.manager import make_services

    return make_services(settings, db, transport)


_SERVICE_BUILDERS = {"conductor": _conductor, "scheduler": _scheduler, "compute": _compute,
                     "volume": _volume}
