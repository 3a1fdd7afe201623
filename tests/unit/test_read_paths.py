"""The server read paths' shortcuts keep their guarantees: rows read cheaply are
the rows SQLAlchemy reads, opened tokens are kept but expiry and revocation
still hold, a point read in the loop falls back to the DB threads when busy."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sqlalchemy.dialects.sqlite import dialect as _sqlite

from cirrus.compute import queries
from cirrus.compute.models import instance_faults, instance_info_caches, instances, tags
from cirrus.config import Settings
from cirrus.db import migrate
from cirrus.db.engine import Database, fetch_all
from cirrus.db.rows import (PreparedRead, RowReader, fetch_dicts, json_dumps, json_loads,
                             read_here)
from cirrus.identity import generation as generations, revocation
from cirrus.identity.exception import Unauthorized
from cirrus.identity.manager import IdentityService
from cirrus.identity.revocation import RevokeEvent
from cirrus.identity.tokens import TokenData, TokenProvider, new_audit_id, new_key


sqlite_dialect = _sqlite()


@pytest.mark.parametrize("text", [
    '{"a": [1, 2.5, null, true, "\\u00e9\\ud83d\\ude00"]}', "[]", "{}", "-0", "1e400",
    "NaN", '{"big": 123456789012345678901234567890}', '"\\ud800"', '{"a": 1, "a": 2}', '["\ud800"]', "18446744073709551615",
])
def test_json_loads_is_json_loads(text: str) -> None:
    want, got = json.loads(text), json_loads(text)
    assert repr(got) == repr(want) or (isinstance(want, float) and math.isnan(want)
                                       and math.isnan(got))


class _Text(str):
    pass


@pytest.mark.parametrize("value", [
    {"a": [1, 2.5, None, True, "\u00e9\U0001f600"]}, [], {}, None, -0.0, 1e16, (1, "x"),
    float("nan"), [float("inf"), None], {"n": float("-inf")}, 2 ** 70, "\ud800", {1: "k"},
    {None: 1, True: 2, 2.5: 3}, _Text("s"), {"k": [_Text("s")]},
])
def test_json_dumps_reads_back_as_json_dumps(value: Any) -> None:
    """What a JSON column stores reads back as json's text would: NaN and
    ±Infinity (orjson would write null), huge integers, lone surrogates,
    non-string keys included."""
    want, got = json.loads(json.dumps(value)), json.loads(json_dumps(value))
    assert repr(got) == repr(want) and isinstance(json_dumps(value), str)


@pytest.mark.parametrize("value", [dt.datetime(2026, 1, 2), {"at": dt.date(2026, 1, 2)}, object()])
def test_json_dumps_refuses_what_json_refuses(value: Any) -> None:
    with pytest.raises(TypeError):
        json_dumps(value)


@pytest.fixture
def db(tmp_path: Path) -> Any:
    settings = Settings(state_dir=tmp_path)
    migrate.upgrade(settings.database_url)
    database = Database(settings.database_url)
    yield database
    database.close()


def _instance(i: int, **values: Any) -> dict[str, Any]:
    now = dt.datetime(2026, 1, 2, 3, 4, 5, 678901) + dt.timedelta(seconds=i)
    row = {"uuid": str(uuid.UUID(int=i + 1)), "project_id": "p1" if i % 3 else "p2",
           "user_id": "u", "display_name": f"vm-{i}", "hostname": f"vm-{i}",
           "image_ref": "img", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
           "flavor": {"flavorid": "1", "name": "m1.tiny", "vcpus": 1, "memory_mb": 512,
                      "root_gb": 1, "extra_specs": {"hw:x": "1"}, "rxtx_factor": 1.0},
           "vm_state": "error" if i == 4 else "active", "power_state": 1, "host": "h1",
           "metadata": {"k": str(i)} if i % 2 else {}, "system_metadata": {"image_kernel_id": "k"},
           "security_groups": ["default"], "reservation_id": "r-1",
           "config_drive": bool(i % 2), "locked": i == 3, "launched_at": now, "created_at": now,
           "deleted": i == 5}
    row.update(values)
    return row


def _populate(conn: sa.Connection) -> None:
    conn.execute(instances.insert(), [_instance(i) for i in range(8)])
    conn.execute(tags.insert(), [{"resource_id": str(uuid.UUID(int=i + 1)), "tag": "t"}
                                 for i in range(1, 8, 2)])
    conn.execute(instance_info_caches.insert(), [
        {"instance_uuid": str(uuid.UUID(int=i + 1)), "network_info": [{"id": f"port-{i}"}],
         "created_at": dt.datetime(2026, 1, 1)} for i in range(0, 8, 2)])
    conn.execute(instance_faults.insert(), [
        {"instance_uuid": str(uuid.UUID(int=5)), "code": 500, "message": m,
         "created_at": dt.datetime(2026, 1, 1)} for m in ("first", "latest")])


def test_rows_read_cheaply_equal_sqlalchemys(db: Database) -> None:
    db.run_sync(_populate)
    stmt = sa.select(instances).order_by(instances.c.id)

    def both(conn: sa.Connection) -> tuple[Any, Any, Any]:
        return (fetch_all(conn, stmt), fetch_dicts(conn, stmt),
                PreparedRead(sa.select(instances).where(instances.c.uuid == sa.bindparam("uuid")))
                .all(conn, uuid=str(uuid.UUID(int=2))))
    want, got, one = db.run_sync(both)
    assert got == want and [type(v) for v in got[0].values()] == [type(v) for v in want[0].values()]
    assert one == [want[1]]


def test_equal_json_texts_of_one_result_are_parsed_once(db: Database) -> None:
    db.run_sync(_populate)
    rows = db.run_sync(fetch_dicts, sa.select(instances.c.flavor, instances.c.metadata))
    assert all(r["flavor"] is rows[0]["flavor"] for r in rows)
    assert rows[0]["metadata"] == {} and rows[1]["metadata"] == {"k": "1"}


def test_raw_columns_keep_the_drivers_value(db: Database) -> None:
    db.run_sync(_populate)
    stmt = sa.select(instance_info_caches.c.network_info)
    rows = db.run_sync(fetch_dicts, stmt, RowReader(stmt.selected_columns, raw=("network_info",)))
    assert rows[0]["network_info"] == '[{"id":"port-0"}]'  # SQLite's text (json_dumps wrote it)
    assert queries.network_info_of(rows[0]["network_info"]) == [{"id": "port-0"}]


def test_timestamps_as_stored_format_as_isotime() -> None:
    from cirrus.api.compute.views import iso_of
    from cirrus.db.base import isotime

    for value in (dt.datetime(2026, 1, 2, 3, 4, 5, 678901), dt.datetime(2026, 1, 2, 3, 4, 5)):
        stored = sa.DateTime().dialect_impl(sqlite_dialect).bind_processor(sqlite_dialect)(value)
        assert iso_of(stored) == iso_of(value) == isotime(value) == "2026-01-02T03:04:05Z"
    assert iso_of("2026-01-02T03:04:05") == "2026-01-02T03:04:05Z" and iso_of(None) is None


def test_get_for_view_and_listing(db: Database) -> None:
    db.run_sync(_populate)
    full = {r["uuid"]: r for r in db.run_sync(fetch_all, sa.select(instances))}
    row = db.run_sync(queries.get_for_view, str(uuid.UUID(int=3)))
    parsed = {k: full[row["uuid"]][k] for k in queries.VIEW_COLUMNS}
    assert {k: row[k] for k in queries.VIEW_COLUMNS if k not in queries.AS_STORED} == {
        k: v for k, v in parsed.items() if k not in queries.AS_STORED}
    assert row["created_at"] == "2026-01-02 03:04:07.678901"  # SQLite's text
    assert queries.network_info_of(row["network_info"]) == [{"id": "port-2"}]
    assert queries.network_info_of(db.run_sync(queries.get_for_view, str(uuid.UUID(int=2)))
                                   ["network_info"]) == []  # no cache row
    with pytest.raises(queries.exc.InstanceNotFound):
        db.run_sync(queries.get_for_view, str(uuid.UUID(int=6)))  # deleted
    failed = db.run_sync(queries.get_for_view, str(uuid.UUID(int=5)))
    assert db.run_sync(queries.latest_fault, failed)["message"] == "latest"
    assert db.run_sync(queries.latest_faults, [failed])[failed["uuid"]]["message"] == "latest"
    # the page stops in SQL; filters applied in Python still see every row
    page = db.run_sync(queries.list_instances, queries.ListQuery(project_id="p1", limit=2))
    assert [r["display_name"] for r in page] == ["vm-7", "vm-4"]
    named = db.run_sync(queries.list_instances,
                        queries.ListQuery(project_id="p1", limit=1, name="vm-[12]"))
    assert [r["display_name"] for r in named] == ["vm-2"]
    every_project = queries.ListQuery(project_id=None, all_projects=True, tags=["t"])
    tagged = db.run_sync(queries.list_instances, every_project, columns=queries.BASIC_COLUMNS)
    assert sorted(r["display_name"] for r in tagged) == ["vm-1", "vm-3", "vm-7"]


async def test_read_here_falls_back_to_the_db_threads_when_busy(db: Database) -> None:
    calls: list[str] = []

    def read(conn: sa.Connection) -> str:
        import threading

        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            raise sa.exc.OperationalError("SELECT", {}, Exception("database is locked"))
        return "ok"
    assert await read_here(db, read) == "ok"
    assert calls[0] == "MainThread" and calls[1].startswith("db-r")

    def broken(conn: sa.Connection) -> None:
        raise sa.exc.OperationalError("SELECT", {}, Exception("no such table: x"))
    with pytest.raises(sa.exc.OperationalError):
        await read_here(db, broken)


class _RevocationStore:
    """Stands in for a database that is not SQLite (so every read goes through
    ``read``): the revocation generation and events, and how often each is read."""

    is_sqlite = False

    def __init__(self) -> None:
        self.generation = 0
        self.events: list[tuple[RevokeEvent, int, dt.datetime]] = []
        self.reads: Counter[str] = Counter()

    async def read(self, fn: Any, *args: Any) -> Any:
        self.reads[fn.__name__] += 1
        await asyncio.sleep(0.01)
        if fn is generations.read_generations:
            return self.generation, 0  # (revocation, catalog)
        assert fn is revocation.events_since
        return self.generation, [e for e in self.events if e[1] > args[0]]

    def revoke(self, event: RevokeEvent) -> None:
        """A revocation committed by another API process."""
        self.generation += 1
        self.events.append((event, self.generation, dt.datetime.utcnow()))


def _identity(store: _RevocationStore) -> tuple[IdentityService, TokenProvider]:
    service = IdentityService(Settings(), store)  # type: ignore[arg-type]
    service.provider = TokenProvider([new_key()])
    return service, service.provider


def _token(provider: TokenProvider, ttl: float) -> tuple[str, str]:
    now = time.time()
    audit = new_audit_id()
    return provider.issue(TokenData(user_id="u", expires_at=now + ttl, issued_at=now,
                                    audit_id=audit, methods=["password"], project_id="p",
                                    roles=["member"])), audit


async def test_a_kept_token_still_expires_and_can_be_revoked(monkeypatch: Any) -> None:
    store = _RevocationStore()
    identity, provider = _identity(store)
    token, audit = _token(provider, ttl=60)
    assert (await identity.validate(token)).user_id == "u"
    monkeypatch.setattr(provider, "open", lambda *a: pytest.fail("kept tokens are not reopened"))
    assert (await identity.validate(token)).audit_id == audit
    # revoked elsewhere (another API process): refused by the next validation
    store.revoke(RevokeEvent(audit_id=audit))
    with pytest.raises(Unauthorized, match="revoked"):
        await identity.validate(token)
    # expiry is checked on every use, kept or not
    monkeypatch.undo()
    expiring, _ = _token(provider, ttl=0.05)
    await identity.validate(expiring)
    await asyncio.sleep(0.1)
    with pytest.raises(Unauthorized, match="expired"):
        await identity.validate(expiring)
    with pytest.raises(Unauthorized):
        await identity.validate(expiring[:-4] + "AAAA")  # forged: never kept


async def test_concurrent_validations_share_the_generation_read_and_the_reload() -> None:
    store = _RevocationStore()
    identity, provider = _identity(store)
    token, _ = _token(provider, ttl=60)
    await asyncio.gather(*(identity.validate(token) for _ in range(20)))
    assert store.reads == {"read_generations": 1}
    store.revoke(RevokeEvent(user_id="someone else"))
    await asyncio.gather(*(identity.validate(token) for _ in range(20)))
    assert store.reads == {"read_generations": 2, "events_since": 1}
