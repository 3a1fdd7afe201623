"""The Prepared statements of plain server listings and of one server's view
read exactly what the Core statements they stand in for read, on each database
(``storage``: the statuses, changes-since and ordering are SQL the two databases
may read differently)."""
from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import sqlalchemy as sa

from cirrus.compute import queries
from cirrus.compute.models import (block_device_mappings, instance_group_members,
                                   instance_groups, instance_info_caches, instances, tags)
from cirrus.config import Settings
from cirrus.db.engine import Database

pytestmark = pytest.mark.storage

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, 678901)
STATES = ["active", "error", "building", "active", "stopped", "deleted", "active", "active"]


def _uuid(i: int) -> str:
    return str(uuid.UUID(int=i + 1))


@pytest.fixture
def db(tmp_path: Path, database: Any) -> Iterator[Database]:
    settings = Settings(state_dir=tmp_path, **database.for_test(tmp_path))
    found = Database(settings.database_url)
    found.run_sync(_populate)
    yield found
    found.close()
    database.drop(settings)


def _instance(i: int) -> dict[str, Any]:
    created = T0 + dt.timedelta(seconds=i % 4)  # ties: the id orders them
    return {"uuid": _uuid(i), "project_id": "p1" if i % 3 else "p2", "user_id": "u",
            "display_name": f"vm-{i % 5}", "hostname": f"vm-{i}", "image_ref": "img",
            "vcpus": 1, "memory_mb": 512, "root_gb": 1, "flavor": {"flavorid": "1"},
            "vm_state": STATES[i % len(STATES)], "task_state": "rebooting" if i == 7 else None,
            "power_state": 1, "host": "h1", "metadata": {}, "system_metadata": {},
            "security_groups": ["default"], "reservation_id": "r-1", "locked": False,
            "created_at": created, "launched_at": created,
            "updated_at": T0 + dt.timedelta(seconds=10 + i) if i % 2 else None,
            "deleted": STATES[i % len(STATES)] == "deleted"}


def _populate(conn: sa.Connection) -> None:
    conn.execute(instances.insert(), [_instance(i) for i in range(24)])
    conn.execute(instance_info_caches.insert(), [
        {"instance_uuid": _uuid(i), "network_info": [{"id": f"port-{i}"}], "created_at": T0}
        for i in range(0, 24, 2)])
    conn.execute(tags.insert(), [{"resource_id": _uuid(1), "tag": t} for t in ("b", "a", "c")])
    conn.execute(block_device_mappings.insert(), [
        {"instance_uuid": _uuid(1), "source_type": "volume", "destination_type": "volume",
         "volume_id": v, "boot_index": b, "delete_on_termination": d, "created_at": T0}
        for v, b, d in (("vol-2", None, False), ("vol-1", 0, True), ("vol-3", None, True))])
    conn.execute(instance_groups.insert(), [
        {"uuid": g, "name": g, "policy": "affinity", "rules": {}, "project_id": "p1",
         "user_id": "u", "created_at": T0} for g in ("g1", "g2")])
    conn.execute(instance_group_members.insert(), [
        {"group_uuid": g, "instance_uuid": _uuid(1)} for g in ("g1", "g2")])


def _core(conn: sa.Connection, q: queries.ListQuery, **kw: Any) -> list[dict[str, Any]]:
    """The listing as the Core statement reads it (no Prepared shape kept)."""
    saved = queries.PLAIN_SHAPES
    queries.PLAIN_SHAPES = 0
    try:
        return queries.list_instances(conn, q, **kw)
    finally:
        queries.PLAIN_SHAPES = saved


SINCE = T0 + dt.timedelta(seconds=13)


@pytest.mark.parametrize("query", [
    dict(project_id="p1"),
    dict(project_id="p1", limit=3),
    dict(project_id="p1", limit=0),
    dict(project_id="p1", status=["ACTIVE"], changes_since=SINCE, limit=1000),
    dict(project_id="p1", status=["ERROR"], changes_since=SINCE),
    dict(project_id="p2", status=["active", "SHUTOFF"]),
    dict(project_id="p1", status=["DELETED"]),
    dict(project_id="p1", status=["nonsense"]),
    dict(project_id="p1", status=["REBOOT"]),  # three task states: not a plain shape
    dict(project_id="p1", changes_since=SINCE),  # deleted servers too
    dict(project_id="p1", deleted=True),
    dict(project_id="p1", sort=[("display_name", "asc")], limit=4),
    dict(project_id="p1", sort=[("updated_at", "desc")]),
    dict(project_id="nobody", status=["ACTIVE"]),
])
@pytest.mark.parametrize("columns", ["basic", "view"])
def test_a_plain_listing_reads_what_the_core_statement_reads(
        db: Database, query: dict[str, Any], columns: str) -> None:
    q = queries.ListQuery(**query)
    kw: dict[str, Any] = ({"columns": queries.BASIC_COLUMNS} if columns == "basic"
                          else {"network_info": True})
    want = db.run_sync(_core, q, **kw)
    got = db.run_sync(queries.list_instances, q, **kw)
    assert got == want
    assert db.run_sync(queries.list_instances, q, **kw) == want  # the kept statement again


@pytest.mark.parametrize("query, plain", [
    (dict(project_id="p1", status=["ACTIVE"], changes_since=SINCE, limit=1000), True),
    (dict(project_id="p1"), True),
    (dict(project_id="p1", status=["REBOOT"]), False),
    (dict(project_id="p1", status=["deleted"]), False),
    (dict(project_id="p1", marker=_uuid(1)), False),
    (dict(project_id="p1", sort=[("display_name", "asc"), ("uuid", "asc")]), False),
    (dict(project_id="p1", status=["ACTIVE", "ERROR", "BUILD"]), False),
    (dict(project_id=None, all_projects=True), False),
    (dict(project_id="p1", image="img"), False),
    (dict(project_id="p1", tags=["a"]), False),
])
def test_which_listings_are_plain(query: dict[str, Any], plain: bool) -> None:
    shape = queries._plain_shape(queries.ListQuery(**query), queries.BASIC_COLUMNS, False,
                                 1000, None)
    assert (shape is not None) == plain


def test_unknown_statuses_share_one_shape() -> None:
    def shape(status: str) -> Any:
        return queries._plain_shape(queries.ListQuery(project_id="p", status=[status]),
                                    queries.BASIC_COLUMNS, False, None, None)
    assert shape("x") == shape("y" * 300) != shape("ACTIVE")


def test_shapes_kept_are_bounded(monkeypatch: pytest.MonkeyPatch, db: Database) -> None:
    monkeypatch.setattr(queries, "_PLAIN", {})
    monkeypatch.setattr(queries, "PLAIN_SHAPES", 1)
    first = queries.ListQuery(project_id="p1", status=["ACTIVE"])
    other = queries.ListQuery(project_id="p1", status=["ERROR"])
    want = db.run_sync(_core, other)
    db.run_sync(queries.list_instances, first)
    assert db.run_sync(queries.list_instances, other) == want
    assert len(queries._PLAIN) == 1


def test_one_servers_tags_volumes_and_groups_read_as_for_many(db: Database) -> None:
    def read(conn: sa.Connection) -> tuple[Any, ...]:
        one = [queries.get_for_view(conn, _uuid(1))]
        many = [dict(one[0]), queries.get_for_view(conn, _uuid(3))]
        queries.with_tags(conn, one)
        queries.with_tags(conn, many)
        queries.with_volumes(conn, one)
        queries.with_volumes(conn, many)
        return one[0], many[0], sorted(queries.server_groups_of(conn, _uuid(1)))
    one, many, groups = db.run_sync(read)
    assert one["tags"] == many["tags"] == ["a", "b", "c"]
    assert one["volumes_attached"] == many["volumes_attached"] == [
        ("vol-1", True), ("vol-2", False), ("vol-3", True)]
    assert groups == ["g1", "g2"]


def _apart(conn: sa.Connection, uuid: str, groups: bool) -> dict[str, Any]:
    row = queries.get_for_view(conn, uuid)
    queries.with_tags(conn, [row])
    queries.with_volumes(conn, [row])
    if groups:
        row["server_groups"] = queries.server_groups_of(conn, uuid)
    return row


@pytest.mark.parametrize("groups", [False, True])
@pytest.mark.parametrize("i", [1, 2, 3, 4])  # tags, volumes, groups; none; no info cache
def test_one_servers_view_in_one_statement_reads_what_four_read(
        db: Database, i: int, groups: bool) -> None:
    if not db.is_postgresql:
        pytest.skip("the one statement is PostgreSQL's (SQLite reads on the loop's thread)")
    want = db.run_sync(_apart, _uuid(i), groups)
    got = db.run_sync(lambda conn: queries.get_for_view_in_one(conn, _uuid(i), groups=groups))
    if groups:
        got["server_groups"].sort()
        want["server_groups"].sort()
    assert got == want
    assert list(got) == list(want)  # the same keys in the same order
    if i == 1:
        assert got["tags"] == ["a", "b", "c"]
        assert got["volumes_attached"] == [("vol-1", True), ("vol-2", False), ("vol-3", True)]
        assert sorted(got.get("server_groups", ["g1", "g2"])) == ["g1", "g2"]
    else:
        assert got["tags"] == [] and got["volumes_attached"] == []


def test_one_servers_view_in_one_statement_of_a_missing_or_deleted_server(db: Database) -> None:
    if not db.is_postgresql:
        pytest.skip("PostgreSQL's statement")
    for gone in (_uuid(5), _uuid(99)):  # deleted (STATES[5]), never there
        with pytest.raises(queries.exc.InstanceNotFound):
            db.run_sync(lambda conn: queries.get_for_view_in_one(conn, gone, groups=False))
