"""Shared fixtures: an in-process cloud and HTTP clients logged in as users.

The database is migrated and bootstrapped once per session into a template
file, which each test copies, so a test's cloud starts in milliseconds.
"""
from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.config import Settings

TEST_DEFAULTS: dict[str, Any] = {
    "computes": 2,
    "report_interval": 3600.0,
    "max_body_bytes": 1 << 20,
}


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    state = tmp_path_factory.mktemp("template")
    settings = Settings(state_dir=state, computes=0)
    if PG_URL:
        _pg_admin("DROP DATABASE IF EXISTS cirrus_template WITH (FORCE)")
        _pg_admin("CREATE DATABASE cirrus_template")
        settings = Settings(state_dir=state, computes=0, database_url=_pg_url("cirrus_template"))

    async def prepare() -> None:
        cloud = Cloud(settings, api=False, roles=())
        await cloud.start()
        await cloud.stop()

    asyncio.run(prepare())
    return state / "cirrus.db"


# With CIRRUS_TEST_DATABASE_URL (postgresql+psycopg://…) every test gets its own
# PostgreSQL database, cloned from a migrated and bootstrapped template.
PG_URL = os.environ.get("CIRRUS_TEST_DATABASE_URL", "")


def _pg_admin(sql: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text(sql))
    finally:
        engine.dispose()


def _pg_url(name: str) -> str:
    return PG_URL.rsplit("/", 1)[0] + "/" + name


def make_settings(tmp_path: Path, template_db: Path, **overrides: Any) -> Settings:
    values = {**TEST_DEFAULTS, **overrides}
    if PG_URL:
        name = f"cirrus_test_{uuid.uuid4().hex[:12]}"
        _pg_admin(f"CREATE DATABASE {name} TEMPLATE cirrus_template")
        values["database_url"] = _pg_url(name)
    else:
        shutil.copy(template_db, tmp_path / "cirrus.db")
    return Settings(state_dir=tmp_path, bind="127.0.0.1:8774", **values)


def drop_settings_db(settings: Settings) -> None:
    if PG_URL:
        name = settings.database_url.rsplit("/", 1)[1]
        _pg_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class Api:
    """An httpx client against the in-process app, with login helpers."""

    def __init__(self, cloud: Cloud) -> None:
        self.cloud = cloud
        self.transport = httpx.ASGITransport(app=cloud.app)
        self._tokens: dict[str, str] = {}

    def client(self, token: str | None = None, headers: dict[str, str] | None = None) -> httpx.AsyncClient:
        hdrs = {"X-Auth-Token": token} if token else {}
        hdrs.update(headers or {})
        return httpx.AsyncClient(transport=self.transport, base_url="http://127.0.0.1:8774",
                                 headers=hdrs)

    async def token(self, user: str = "demo", password: str | None = None,
                    project: str | None = None) -> str:
        key = f"{user}/{project}"
        if key not in self._tokens:
            pw = password or (self.cloud.settings.admin_password if user == "admin"
                              else self.cloud.settings.demo_password if user == "demo" else user)
            body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
                "name": user, "domain": {"id": "default"}, "password": pw}}},
                "scope": {"project": {"name": project or user, "domain": {"id": "default"}}}}}
            async with self.client() as c:
                resp = await c.post("/identity/v3/auth/tokens", json=body)
            assert resp.status_code == 201, resp.text
            self._tokens[key] = resp.headers["X-Subject-Token"]
        return self._tokens[key]

    async def as_user(self, user: str = "demo", **kw: Any) -> httpx.AsyncClient:
        return self.client(await self.token(user, **kw))


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """Override in a test module to change the cloud's settings."""
    return {}


@pytest.fixture
async def cloud(tmp_path: Path, template_db: Path,
                settings_overrides: dict[str, Any]) -> AsyncIterator[Cloud]:
    settings = make_settings(tmp_path, template_db, **settings_overrides)
    c = Cloud(settings)
    await c.start()
    try:
        yield c
    finally:
        await c.stop()
        drop_settings_db(settings)


@pytest.fixture
async def api(cloud: Cloud) -> Api:
    return Api(cloud)


@pytest.fixture
async def demo(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    async with await api.as_user("demo") as c:
        yield c


@pytest.fixture
async def admin(api: Api) -> AsyncIterator[httpx.AsyncClient]:
    async with await api.as_user("admin") as c:
        yield c
