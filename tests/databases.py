"""The databases a test cloud runs on: SQLite and PostgreSQL.

Each is migrated and bootstrapped once per session into a template; each test
then gets its own copy in milliseconds — a copied file on SQLite, a database
created ``TEMPLATE …`` on PostgreSQL. Names carry a per-session token, so
sessions running at once on one PostgreSQL server never touch each other's.

Which backends run: ``CIRRUS_TEST_DATABASES`` (default ``sqlite,postgresql``;
with only ``CIRRUS_TEST_DATABASE_URL`` set, just ``postgresql``). The server is
``CIRRUS_TEST_DATABASE_URL`` or ``CIRRUS_TEST_PG_URL`` (a role that may create
databases), by default the one scripts/setup-postgres.sh starts.

Which tests run on each: every ``cloud`` test runs on the first backend chosen
(SQLite by default); the second pass, on PostgreSQL, takes only the tests of
the storage layer (:data:`STORAGE_SUITES`, or a test marked ``storage``) — where
the two databases can differ: locking and concurrent writes, quotas and
allocations counted in SQL, guarded saves, time and tag queries, ordering,
migrations. The rest (API validation, policy, fuzzing, the API's shapes) asks
the same of either database and costs four times as much on PostgreSQL.
``CIRRUS_TEST_EVERY_BACKEND=1`` runs every test on every backend chosen.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.config import Settings

DEFAULT_PG = "postgresql+psycopg://cirrus:cirrus@127.0.0.1:5432/cirrus"
PG_URL = os.environ.get("CIRRUS_TEST_DATABASE_URL") or os.environ.get("CIRRUS_TEST_PG_URL",
                                                                       DEFAULT_PG)
# scrypt at N = 2**4 rather than 2**14: a test cloud's users log in a few times
# each, and the suites log in thousands of times (tests/unit/test_foundation_rules.py
# holds the default's cost).
TEST_PASSWORD_HASH_ROUNDS = 4


# Paths under tests/ whose tests run on every backend (see the docstring above);
# a test elsewhere joins them with ``@pytest.mark.storage``.
STORAGE_SUITES = frozenset({
    # the lifecycle end to end, and the statements a build issues
    "functional/test_lifecycle.py", "functional/test_build_statements.py",
    "functional/test_build_folds.py",
    # admission, claims and allocations: counted and locked in SQL
    "functional/test_build_admission.py", "functional/test_build_outcomes.py",
    "functional/test_build_start.py", "functional/test_claims.py",
    "functional/test_move_claims.py", "functional/test_hypervisors.py",
    # guarded saves met twice, and what a restart finds in the database
    "functional/test_redelivery.py", "functional/test_restart.py",
    "functional/test_first_run.py", "functional/test_host_cache.py",
    # quotas and usage: sums, counts and time ranges in SQL
    "functional/test_network_quotas.py", "functional/test_quota_classes.py",
    "functional/test_port_quota.py", "functional/test_usage_counters.py",
    "functional/test_tenant_usage.py", "functional/test_usage_audit_log.py",
    "functional/test_soft_delete.py", "security/test_network_tags_quotas.py",
    # address allocation (IPAM) and bulk creates in one unit
    "functional/test_network.py", "functional/test_network_bulk.py",
    # tag filters, sorting and markers (NULL order and collation differ)
    "functional/test_server_tags.py", "functional/test_network_tags.py",
    "functional/test_image.py",
    # unique names: a duplicate is an IntegrityError in a savepoint, raised by each dialect
    "functional/test_identity_admin.py", "functional/test_keypairs.py",
    # tokens' keys, revocation events' timestamps, the actions' record
    "functional/test_identity_tokens.py", "security/test_identity_revocation.py",
    "functional/test_instance_actions.py", "unit/test_preflight_rules.py",
})


def backends() -> list[str]:
    chosen = os.environ.get("CIRRUS_TEST_DATABASES")
    if chosen is None:
        chosen = "postgresql" if os.environ.get("CIRRUS_TEST_DATABASE_URL") else \
            "sqlite,postgresql"
    return [b.strip() for b in chosen.split(",") if b.strip()]


def backends_for(path: str, storage_marked: bool) -> list[str]:
    """The backends a ``cloud`` test at ``path`` (relative to tests/) runs on:
    every one chosen for the storage layer's tests, the first one for the rest."""
    chosen = backends()
    if storage_marked or path in STORAGE_SUITES or os.environ.get("CIRRUS_TEST_EVERY_BACKEND"):
        return chosen
    return chosen[:1]


def _prepare(settings: Settings) -> None:
    """Migrate and bootstrap (what ``cirrus up`` does on a fresh state dir)."""
    from cirrus.bootstrap import Cloud

    async def run() -> None:
        cloud = Cloud(settings, api=False, roles=())
        await cloud.start()
        await cloud.stop()
    asyncio.run(run())


class SQLiteDatabases:
    name = "sqlite"

    def __init__(self, workdir: Path) -> None:
        self.template = workdir / "cirrus.db"
        _prepare(Settings(state_dir=workdir, computes=0,
                          password_hash_rounds=TEST_PASSWORD_HASH_ROUNDS))

    def for_test(self, state_dir: Path, empty: bool = False) -> dict[str, Any]:
        """Settings values for one test's own copy (``empty``: a database
        without any schema, for tests of the migrations)."""
        if not empty:
            shutil.copy(self.template, state_dir / "cirrus.db")
        return {}

    def drop(self, settings: Settings) -> None:
        """The copy goes with the test's tmp_path."""

    def close(self) -> None:
        """Nothing outlives the session's temporary directory."""


@contextlib.contextmanager
def scratch_postgres(prefix: str) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database named after ``prefix``,
    dropped after (the test skips where no PostgreSQL runs)."""
    reason = PostgresDatabases.unreachable()
    if reason:
        pytest.skip(reason)
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    try:
        yield PG_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with admin.connect() as conn:
            drop_database(conn, name)
        admin.dispose()


def drop_database(conn: sa.Connection, name: str) -> None:
    """Drop ``name``, ending what is still connected to it. PostgreSQL 15's
    ``WITH (FORCE)`` refuses when an autovacuum worker happens to be in the
    database (a worker has no role the test's role is a member of: "must be a
    member of the role whose process is being terminated"); a plain DROP ends
    autovacuum workers itself, so it follows, our own connections being gone."""
    try:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    except sa.exc.ProgrammingError as error:
        if getattr(error.orig, "sqlstate", None) != "42501":  # insufficient_privilege
            raise
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name}"))


class PostgresDatabases:
    name = "postgresql"

    def __init__(self, workdir: Path) -> None:
        self.prefix = f"cirrus_t{uuid.uuid4().hex[:8]}"
        self.template = f"{self.prefix}_template"
        self.created: set[str] = set()
        self._admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool)
        self._create(self.template, "")
        _prepare(Settings(state_dir=workdir, computes=0, database_url=self._url(self.template),
                          password_hash_rounds=TEST_PASSWORD_HASH_ROUNDS))

    @staticmethod
    def unreachable() -> str | None:
        """Why no test can run on PostgreSQL here, or None."""
        try:
            engine = sa.create_engine(PG_URL, poolclass=sa.NullPool,
                                      connect_args={"connect_timeout": 3})
            with engine.connect():
                pass
        except Exception as exc:  # noqa: BLE001 - any reason is a reason to skip
            safe = PG_URL.split("@")[-1]
            return (f"no PostgreSQL at {safe} ({type(exc).__name__}: {str(exc).strip()[:160]}); "
                    f"scripts/setup-postgres.sh starts one")
        return None

    def _url(self, name: str) -> str:
        return PG_URL.rsplit("/", 1)[0] + "/" + name

    def _execute(self, sql: str) -> None:
        with self._admin.connect() as conn:
            conn.execute(sa.text(sql))

    def _create(self, name: str, template: str) -> None:
        self._execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        self.created.add(name)

    def _drop(self, name: str) -> None:
        # FORCE: a connection a test left behind must not keep its database alive.
        # It may not end an autovacuum worker (a superuser backend) that is
        # visiting the database; those finish within moments, so try again.
        for attempt in range(40):
            try:
                self._execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                break
            except sa.exc.ProgrammingError as error:
                if "pg_signal_backend" not in str(error) or attempt == 39:
                    raise
                time.sleep(0.25)
        self.created.discard(name)

    def for_test(self, state_dir: Path, empty: bool = False) -> dict[str, Any]:
        name = f"{self.prefix}_{uuid.uuid4().hex[:12]}"
        self._create(name, "" if empty else self.template)
        return {"database_url": self._url(name)}

    def drop(self, settings: Settings) -> None:
        self._drop(settings.database_url.rsplit("/", 1)[1])

    def close(self) -> None:
        """Drop the template and whatever a failed teardown left."""
        for name in sorted(self.created - {self.template}) + [self.template]:
            self._drop(name)
        self._admin.dispose()


Databases = SQLiteDatabases | PostgresDatabases
