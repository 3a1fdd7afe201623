"""The composition root: wires settings, database, bus and services.

``Cloud`` is used by ``cirrus up`` (everything in one loop), by the separate
process commands (one service each) and by the tests.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from starlette.applications import Starlette

from cirrus.api.app import build_app
from cirrus.config import Settings, split_bind
from cirrus.console.serialproxy import SerialProxy
from cirrus.db import migrate
from cirrus.db.engine import Database
from cirrus.rpc import Transport, get_transport
from cirrus.service import Service

if TYPE_CHECKING:
    import httpx  # (imported on first use by cirrus.image.client)

LOG = logging.getLogger(__name__)


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

    bootstrap_identity(conn, settings.admin_password, settings.demo_password)
    seed_default_flavors(conn)


class Cloud:
    """Every cirrus service this process runs, started and stopped together."""

    def __init__(self, settings: Settings, *, api: bool = True,
                 roles: tuple[str, ...] = ("conductor", "scheduler", "compute", "volume"),
                 prepare_db: bool = True, bus_hub: bool = False,
                 http_transport: httpx.AsyncBaseTransport | None = None) -> None:
        """``http_transport``: how computes reach the HTTP API (the image
        service); None: over the network, at the configured URLs."""
        self.settings = settings
        self.http_transport = http_transport
        self.bus_hub = bus_hub
        self.prepare_db = prepare_db
        self.run_api = api
        self.roles = roles
        self.db: Database | None = None
        self.transport: Transport | None = None
        self.services: list[Service] = []
        self.state: dict[str, Any] = {}
        self.app: Starlette | None = None
        self.serial_proxy: SerialProxy | None = None

    async def start(self) -> None:
        s = self.settings
        s.state_dir.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        if self.prepare_db:
            await loop.run_in_executor(None, migrate.upgrade_if_needed, s.database_url)
        self.db = Database(s.database_url)
        self.transport = get_transport(s.transport_url, hub=self.bus_hub)
        await self.transport.start()
        if self.prepare_db:
            await self.db.run(bootstrap_data, s)
        self.state = await self._build_state()
        for service in self._build_services():
            await service.start()
            self.services.append(service)
        if self.run_api:
            self.app = build_app(self.state)
            if s.serial_console_enabled:
                await self._start_serial_proxy()

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
        for name, factory in _state_factories():
            state[name] = factory(self.settings, self.db, self.transport)
        # network-vif-plugged goes to compute's external events, as Neutron's does.
        state["network"].set_event_sink(state["compute_api"].external_instance_event)
        return state

    def _build_services(self) -> list[Service]:
        assert self.db is not None and self.transport is not None
        out: list[Service] = []
        for role in self.roles:
            if role == "compute":
                out.extend(_compute(self.settings, self.db, self.transport, self.http_transport))
            else:
                out.extend(_SERVICE_BUILDERS[role](self.settings, self.db, self.transport))
        return out

    async def stop(self) -> None:
        """Stop taking messages, then stop each service; every task they
        started ends with them (none is left running on the loop)."""
        if self.serial_proxy is not None:
            await self.serial_proxy.stop()
            self.serial_proxy = None
        # The bus first: a message still being delivered could start work
        # (a build) on a service that has already stopped.
        if self.transport is not None:
            await self.transport.stop()
        for service in reversed(self.services):
            await service.stop()
        self.services.clear()
        if self.db is not None:
            self.db.close()


def _state_factories() -> list[tuple[str, Any]]:
    """(name, factory(settings, db, transport)) for every API-side service."""
    from cirrus.compute.api import make_compute_api
    from cirrus.image.api import make_image_api
    from cirrus.network.service import make_network_service
    from cirrus.volume.manager import make_block_storage

    return [("images", make_image_api), ("network", make_network_service),
            ("compute_api", make_compute_api), ("volume", make_block_storage)]


def _conductor(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    from cirrus.conductor.manager import make_services

    return make_services(settings, db, transport)


def _scheduler(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    from cirrus.scheduler.manager import make_services

    return make_services(settings, db, transport)


def _compute(settings: Settings, db: Database, transport: Transport,
             http_transport: httpx.AsyncBaseTransport | None = None) -> list[Service]:
    from cirrus.compute.manager import make_services

    return make_services(settings, db, transport, http_transport)


# The services a process can run, by role (``cirrus up`` runs all three).
def _volume(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    from cirrus.volume.manager import make_services

    return make_services(settings, db, transport)


_SERVICE_BUILDERS = {"conductor": _conductor, "scheduler": _scheduler, "compute": _compute,
                     "volume": _volume}
