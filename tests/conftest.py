"""Shared fixtures: an in-process cloud and HTTP clients logged in as users.

The database is migrated and bootstrapped once per session into a template,
which each test copies, so a test's cloud starts in milliseconds; every test
using ``cloud`` runs on SQLite and on PostgreSQL (tests/databases.py).
"""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from cirrus.bootstrap import Cloud
from cirrus.config import Settings
from tests.databases import (TEST_PASSWORD_HASH_ROUNDS, Databases, PostgresDatabases,
                             SQLiteDatabases, backends_for)
from tests.tenants import Tenants, make_tenants

TEST_DEFAULTS: dict[str, Any] = {
    "computes": 2,
    "report_interval": 3600.0,
    "max_body_bytes": 1 << 20,
    # Tests count images and networks from an empty cloud (tests/functional/test_first_run.py
    # turns the defaults on).
    "bootstrap_defaults": False,
    "password_hash_rounds": TEST_PASSWORD_HASH_ROUNDS,
    "db_check_units": True,
}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test of the storage layer runs on SQLite and on PostgreSQL, any other
    on SQLite only (tests/databases.py says which and why)."""
    if "database" not in metafunc.fixturenames:
        return
    path = Path(str(metafunc.definition.fspath)).relative_to(Path(__file__).parent).as_posix()
    marked = metafunc.definition.get_closest_marker("storage") is not None
    metafunc.parametrize("database", backends_for(path, marked), indirect=True, scope="session")


@pytest.fixture(scope="session")
def database(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Databases]:
    """The backend every ``cloud`` of this session's pass runs on, as
    :func:`pytest_generate_tests` chose it for the test (tests/databases.py).
    The PostgreSQL pass skips, saying why, when no server is reachable."""
    workdir = tmp_path_factory.mktemp(f"template-{request.param}")
    if request.param == "sqlite":
        dbs: Databases = SQLiteDatabases(workdir)
    elif request.param == "postgresql":
        reason = PostgresDatabases.unreachable()
        if reason:
            pytest.skip(reason)
        dbs = PostgresDatabases(workdir)
    else:
        raise pytest.UsageError(f"CIRRUS_TEST_DATABASES: unknown backend {request.param!r}")
    try:
        yield dbs
    finally:
        dbs.close()


@pytest.fixture(autouse=True)
def no_leaked_tasks(request: pytest.FixtureRequest) -> None:
    """Fail an async test that leaves asyncio tasks pending on its loop.

    Requested first (autouse), the check is torn down last: after the test
    and after its fixtures' teardown, so a service whose stop forgets a task
    is caught. Sync tests run no loop and are left alone."""
    if pytest_asyncio.is_async_test(request.node):
        request.getfixturevalue("_leaked_task_check")


@pytest.fixture
async def _leaked_task_check() -> AsyncIterator[None]:
    before = asyncio.all_tasks()
    yield
    pending = pending_tasks(before)
    if pending:
        for task in pending:
            task.cancel()
        # Let them unwind before the loop closes (bounded: a task may ignore
        # cancellation).
        await asyncio.wait(pending, timeout=10)
    leaked = pending
    if leaked:
        names = ", ".join(sorted(t.get_name() for t in leaked))
        pytest.fail(f"test left {len(leaked)} asyncio task(s) pending: {names}", pytrace=False)


def pending_tasks(before: set[asyncio.Task[Any]]) -> set[asyncio.Task[Any]]:
    """Tasks started since ``before`` and still pending, other than the caller.

    No grace: a task that a stop cancelled but did not await is still pending
    here, and that stop is the bug (its task may still touch what the test
    tore down)."""
    current = asyncio.current_task()
    return {task for task in asyncio.all_tasks() - before if task is not current}


def make_settings(tmp_path: Path, database: Databases, **overrides: Any) -> Settings:
    values = {**TEST_DEFAULTS, **database.for_test(tmp_path), **overrides}
    return Settings(state_dir=tmp_path, bind="127.0.0.1:8774", **values)


class Api:
    """An httpx client against the in-process app, with login helpers."""

    def __init__(self, cloud: Cloud) -> None:
        assert cloud.app is not None, "a cloud started without its API"
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


class AppTransport(httpx.AsyncBaseTransport):
    """The in-process cloud's own API app as its computes' HTTP transport
    (image downloads, snapshot uploads): the requests go through the real
    routes, auth and policies, without a listening socket."""

    def __init__(self, app: Callable[[], Any]) -> None:
        self.app = app

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await httpx.ASGITransport(app=self.app()).handle_async_request(request)


@pytest.fixture
def cloud_options() -> dict[str, Any]:
    """Override in a test module to give the Cloud more (e.g. a fake ``volume_api``)."""
    return {}


@pytest.fixture
async def cloud(tmp_path: Path, database: Databases, settings_overrides: dict[str, Any],
                cloud_options: dict[str, Any]) -> AsyncIterator[Cloud]:
    settings = make_settings(tmp_path, database, **settings_overrides)
    c = Cloud(settings, http_transport=AppTransport(lambda: c.app), **cloud_options)
    try:
        await c.start()
        yield c
    finally:
        try:
            await c.stop()
        finally:
            database.drop(settings)


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


# Suites that change the machine (bridges, namespaces, libvirt guests, service
# processes) run on one xdist worker, one after the other; the rest spread out.
MACHINE_SUITES = ("host", "realvm", "multihost")


# tryfirst: xdist's worker turns the mark into the node id's ``@machine`` suffix
# in its own hook of this name, which must see the mark already.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).parent
    for item in items:
        parts = Path(str(item.fspath)).relative_to(root).parts
        if parts and parts[0] in MACHINE_SUITES:
            item.add_marker(pytest.mark.xdist_group("machine"))


@pytest.fixture
async def tenants(api: Api) -> AsyncIterator[Tenants]:
    """One client per persona (tests/tenants.py), for the security suite and
    any test that needs another project or role."""
    t = await make_tenants(api)
    try:
        yield t
    finally:
        for c in t.clients.values():
            await c.aclose()
