"""The composition root: wires settings, database, bus and services.

``Cloud`` is used by ``cirrus up`` (everything in one loop), by the separate
process commands (one service each) and by the tests.
"""
from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import yaml

from cirrus.api.app import build_app
from cirrus.config import Settings
from cirrus.db import migrate
from cirrus.db.engine import Database
from cirrus.rpc import Transport, get_transport
from cirrus.service import Service

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


class Cloud:
    """Every cirrus service this process runs, started and stopped together."""

    def __init__(self, settings: Settings, *, api: bool = True,
                 roles: tuple[str, ...] = ("conductor", "scheduler", "compute")) -> None:
        self.settings = settings
        self.run_api = api
        self.roles = roles
        self.db: Database | None = None
        self.transport: Transport | None = None
        self.services: list[Service] = []
        self.state: dict[str, Any] = {}
        self.app = None

    async def start(self) -> None:
        s = self.settings
        s.state_dir.mkdir(parents=True, exist_ok=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, migrate.upgrade, s.database_url)
        self.db = Database(s.database_url)
        self.transport = get_transport(s.transport_url)
        await self.transport.start()
        await self.db.run(self._bootstrap_data)
        self.state = await self._build_state()
        for service in self._build_services():
            await service.start()
            self.services.append(service)
        if self.run_api:
            self.app = build_app(self.state)

    def _bootstrap_data(self, conn: Any) -> None:
        from cirrus.compute.flavors import seed_default_flavors
        from cirrus.identity.bootstrap import bootstrap_identity

        bootstrap_identity(conn, self.settings.admin_password, self.settings.demo_password)
        seed_default_flavors(conn)

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
        if state.get("network") is not None and state.get("compute_api") is not None:
            # network-vif-plugged goes to compute's external events, as Neutron's does.
            state["network"].set_event_sink(state["compute_api"].external_instance_event)
        return state

    def _build_services(self) -> list[Service]:
        assert self.db is not None and self.transport is not None
        out: list[Service] = []
        for role in self.roles:
            out.extend(_SERVICE_BUILDERS[role](self.settings, self.db, self.transport))
        return out

    async def stop(self) -> None:
        from cirrus.utils import cancel_all

        for service in reversed(self.services):
            await service.stop()
        self.services.clear()
        await cancel_all()
        if self.transport is not None:
            await self.transport.stop()
        if self.db is not None:
            self.db.close()


def _state_factories() -> list[tuple[str, Any]]:
    """(name, factory(settings, db, transport)) for every API-side service."""
    factories: list[tuple[str, Any]] = []
    for name, module, attr in _STATE_SERVICES:
        try:
            mod = __import__(module, fromlist=[attr])
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("cirrus."):
                raise
            LOG.warning("%s unavailable: %s", name, exc)
            continue  # stage not built yet
        factories.append((name, _tolerant(getattr(mod, attr), name)))
    return factories


def _tolerant(factory: Any, name: str) -> Any:
    def build(*args: Any) -> Any:
        try:
            return factory(*args)
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith("cirrus."):
                raise
            LOG.warning("%s unavailable: %s", name, exc)
            return None
    return build


# API-side services: app.state name, module, factory.
_STATE_SERVICES = (
    ("images", "cirrus.image.api", "make_image_api"),
    ("network", "cirrus.network.service", "make_network_service"),
    ("compute_api", "cirrus.compute.api", "make_compute_api"),
)


def _no_services(*_: Any) -> list[Service]:
    return []


def _builder(module: str, attr: str) -> Any:
    def build(settings: Settings, db: Database, transport: Transport) -> list[Service]:
        try:
            mod = __import__(module, fromlist=[attr])
            return getattr(mod, attr)(settings, db, transport)
        except (ModuleNotFoundError, ImportError) as exc:
            if not (getattr(exc, "name", None) or "cirrus.").startswith("cirrus."):
                raise
            LOG.warning("%s services unavailable: %s", module, exc)
            return []
    return build


_SERVICE_BUILDERS = {
    "conductor": _builder("cirrus.conductor.manager", "make_services"),
    "scheduler": _builder("cirrus.scheduler.manager", "make_services"),
    "compute": _builder("cirrus.compute.manager", "make_services"),
}
