"""The counts the database keeps itself (migrations 0006 and 0008), on both
databases: a project's live instances, cores and RAM (its quota usage), a
subnet's allocated addresses and a project's ports equal what counting the
rows gives — after creates, deletes soft and hard, resizes, moves, a script's
own SQL, a rolled-back unit, and after an upgrade of a database that already
held rows.
"""
from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import instance as inst
from cirrus.compute.models import instances, project_usages
from cirrus.config import Settings
from cirrus.db import migrate
from cirrus.db.base import utcnow
from cirrus.db.engine import make_engine
from cirrus.network.models import ip_allocations, networks, port_usages, ports, subnets
from tests.databases import Databases
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.functional.test_network import NET, make_net, make_port

SERVERS = "/compute/v2.1/servers"


def _instance(project: str, vcpus: int = 1, memory_mb: int = 512, **values: Any) -> dict[str, Any]:
    name = uuid.uuid4().hex[:8]
    return {"uuid": str(uuid.uuid4()), "project_id": project, "user_id": "u",
            "display_name": name, "hostname": name, "flavor": {}, "vcpus": vcpus,
            "memory_mb": memory_mb, "root_gb": 1, "vm_state": "active", "reservation_id": "r",
            "created_at": utcnow(), "deleted": False, **values}


def _add(conn: sa.Connection, project: str, vcpus: int = 1, memory_mb: int = 512,
         **values: Any) -> str:
    row = _instance(project, vcpus, memory_mb, **values)
    conn.execute(_instances_as_held(conn).insert().values(row))
    return row["uuid"]


def _instances_as_held(conn: sa.Connection) -> sa.Table:
    """The model's instances table, with the ``tags`` column a database before
    0013 still has (NOT NULL, no default: such a row must say its tags)."""
    if "tags" not in {c["name"] for c in sa.inspect(conn).get_columns("instances")}:
        return instances
    table = instances.to_metadata(sa.MetaData())
    table.append_column(sa.Column("tags", sa.JSON, nullable=False, default=[]))
    return table


def counted_usage(conn: sa.Connection) -> dict[str, tuple[int, int, int]]:
    """Each project's live instances, cores and RAM, counted from the rows."""
    rows = conn.execute(sa.select(
        instances.c.project_id, sa.func.count(), sa.func.sum(instances.c.vcpus),
        sa.func.sum(instances.c.memory_mb)).where(instances.c.deleted.is_(False))
        .group_by(instances.c.project_id))
    return {p: (int(n), int(c), int(r)) for p, n, c, r in rows}


def kept_usage(conn: sa.Connection) -> dict[str, tuple[int, int, int]]:
    """The same from the counters (a project that uses nothing may keep a row of zeros)."""
    rows = conn.execute(sa.select(project_usages.c.project_id, project_usages.c.instances,
                                  project_usages.c.cores, project_usages.c.ram))
    return {p: (n, c, r) for p, n, c, r in rows if (n, c, r) != (0, 0, 0)}


def counted_allocations(conn: sa.Connection) -> dict[str, int]:
    rows = conn.execute(sa.select(subnets.c.id, sa.func.count(ip_allocations.c.ip_address))
                        .select_from(subnets.outerjoin(ip_allocations))
                        .group_by(subnets.c.id))
    return dict(rows.all())


def kept_allocations(conn: sa.Connection) -> dict[str, int]:
    return dict(conn.execute(sa.select(subnets.c.id, subnets.c.allocated)).all())


def counted_ports(conn: sa.Connection) -> dict[str, int]:
    rows = conn.execute(sa.select(ports.c.project_id, sa.func.count()).group_by(ports.c.project_id))
    return dict(rows.all())


def kept_ports(conn: sa.Connection) -> dict[str, int]:
    rows = conn.execute(sa.select(port_usages.c.project_id, port_usages.c.ports))
    return {p: n for p, n in rows if n}


def fire_deferred(conn: sa.Connection) -> None:
    """PostgreSQL changes the counters at COMMIT (migration 0032): fire what
    this transaction queued so far, so the counters can be read inside it."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SET CONSTRAINTS ALL IMMEDIATE"))
        conn.execute(sa.text("SET CONSTRAINTS ALL DEFERRED"))


def assert_counters_right(conn: sa.Connection) -> None:
    fire_deferred(conn)
    assert kept_usage(conn) == counted_usage(conn)
    assert kept_allocations(conn) == counted_allocations(conn)
    assert kept_ports(conn) == counted_ports(conn)


async def test_usage_follows_every_change_of_the_instances(cloud: Cloud) -> None:
    """Code's and a script's changes alike; updates that set no counted
    column (the guarded saves) leave the counter alone."""
    assert cloud.db is not None

    def changes(conn: sa.Connection) -> dict[str, tuple[int, int, int]]:
        a, b, c = (_add(conn, "u-p1", vcpus=v, memory_mb=256 * v) for v in (1, 2, 4))
        gone = _add(conn, "u-p1", vcpus=8, deleted=True)
        other = _add(conn, "u-p2", vcpus=2)
        fire_deferred(conn)
        assert kept_usage(conn)["u-p1"] == (3, 7, 1792)
        steps = [
            lambda: inst.soft_delete(conn, b),
            lambda: inst.soft_delete(conn, b),  # again: nothing more to uncount
            lambda: inst.save(conn, a, {"task_state": "rebooting"}),
            lambda: conn.execute(instances.update().where(instances.c.uuid == c).values(
                vcpus=6, memory_mb=4096)),  # a resize
            lambda: conn.execute(instances.update().where(instances.c.uuid == gone).values(
                vcpus=16)),  # a deleted one's resize counts nothing
            lambda: conn.execute(instances.update().where(instances.c.uuid == a).values(
                project_id="u-p2")),  # a move
            lambda: conn.execute(instances.update().where(instances.c.uuid == gone).values(
                deleted=False)),  # a restore
            lambda: conn.execute(instances.delete().where(instances.c.uuid.in_([c, b]))),
            lambda: conn.execute(sa.text(
                "UPDATE instances SET vcpus = vcpus * 2, memory_mb = memory_mb + 1 "
                "WHERE project_id IN ('u-p1', 'u-p2')")),  # a script, many rows at once
            lambda: conn.execute(sa.text("DELETE FROM instances WHERE uuid = :u"), {"u": other}),
        ]
        for step in steps:
            step()
            assert_counters_right(conn)
        return kept_usage(conn)

    kept = await cloud.db.run(changes)
    assert kept == {"u-p1": (1, 32, 513), "u-p2": (1, 2, 257)}

    def failing(conn: sa.Connection) -> None:
        _add(conn, "u-p1", vcpus=3)
        raise RuntimeError("the create fails after its insert")
    with pytest.raises(RuntimeError):
        await cloud.db.run(failing)
    assert await cloud.db.read(kept_usage) == kept
    await cloud.db.read(assert_counters_right)


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


async def test_servers_created_and_deleted_through_the_api_are_counted(
        cloud: Cloud, demo: httpx.AsyncClient, image: str) -> None:
    """What ``GET /limits`` reports as used is the counter, and it follows
    creates (a refused one adds nothing) and deletes."""
    assert cloud.db is not None

    async def used() -> tuple[int, int, int]:
        absolute = (await demo.get("/compute/v2.1/limits")).json()["limits"]["absolute"]
        return absolute["totalInstancesUsed"], absolute["totalCoresUsed"], absolute["totalRAMUsed"]
    created = await create_server(demo, server_body(image, min_count=3, max_count=3))
    assert await used() == (3, 3, 1536)  # m1.tiny: 1 core, 512 MB
    refused = await demo.post(SERVERS, json=server_body(image, min_count=8, max_count=8))
    assert refused.status_code == 403, refused.text
    assert await used() == (3, 3, 1536)
    listed = (await demo.get(SERVERS)).json()["servers"]
    await wait_for_status(demo, listed[0]["id"], {"ACTIVE"})
    assert (await demo.delete(f"{SERVERS}/{listed[0]['id']}")).status_code == 204
    await wait_for_status(demo, listed[0]["id"], {"DELETED"})
    assert await used() == (2, 2, 1024)
    assert created["id"] in {s["id"] for s in listed}
    await cloud.db.read(assert_counters_right)


async def test_allocations_follow_ports_and_scripts(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    """Ports created, re-addressed and deleted through the API, a cascade from a
    port's row, and a script's own inserts and moves of addresses."""
    assert cloud.db is not None
    net = await make_net(demo, "counted", "10.40.0.0/24")
    made = [(await make_port(demo, net["id"])).json()["port"] for _ in range(4)]
    await cloud.db.read(assert_counters_right)
    assert (await demo.delete(f"{NET}/ports/{made[0]['id']}")).status_code == 204
    resp = await demo.put(f"{NET}/ports/{made[1]['id']}", json={"port": {"fixed_ips": [
        {"ip_address": "10.40.0.200"}]}})
    assert resp.status_code == 200, resp.text
    await cloud.db.read(assert_counters_right)
    second = (await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.41.0.0/24", "ip_version": 4}})).json()["subnet"]

    def script(conn: sa.Connection) -> dict[str, int]:
        conn.execute(sa.text("INSERT INTO ip_allocations (network_id, ip_address, subnet_id, "
                             "port_id) VALUES (:n, '10.41.0.9', :s, :p)"),
                     {"n": net["id"], "s": second["id"], "p": made[2]["id"]})
        assert_counters_right(conn)
        conn.execute(ip_allocations.update().where(
            ip_allocations.c.port_id == made[3]["id"]).values(subnet_id=second["id"]))
        assert_counters_right(conn)
        conn.execute(ports.delete().where(ports.c.id == made[2]["id"]))  # cascades
        assert_counters_right(conn)
        # A port handed to another project moves between the projects' counts.
        conn.execute(ports.update().where(ports.c.id == made[3]["id"]).values(
            project_id="another"))
        assert_counters_right(conn)
        return kept_allocations(conn)
    kept = await cloud.db.run(script)
    assert kept[second["id"]] == 1
    assert (await cloud.db.read(kept_ports))["another"] == 1


async def test_a_migration_counts_what_the_database_holds(tmp_path: Path,
                                                          database: Databases) -> None:
    """An upgrade from 0005 of a database with instances and addresses starts
    the counters at their counts, and the triggers keep them from there; a
    downgrade takes counters and triggers away and leaves writes working."""
    settings = Settings(state_dir=tmp_path, **database.for_test(tmp_path, empty=True))
    url = settings.database_url
    try:
        migrate.upgrade(url, "0005")
        engine = make_engine(url)
        try:
            with engine.begin() as conn:
                _hold_rows(conn)
            migrate.upgrade(url)
            with engine.begin() as conn:
                assert kept_usage(conn) == counted_usage(conn) == {
                    "m-p1": (2, 3, 1024), "m-p2": (1, 4, 512)}
                assert sorted(kept_allocations(conn).values()) == [0, 3]
                assert_counters_right(conn)
                _add(conn, "m-p1", vcpus=2)
                fire_deferred(conn)
                assert kept_usage(conn)["m-p1"] == (3, 5, 1536)
            _downgrade(url)
            with engine.begin() as conn:
                inspector = sa.inspect(conn)
                assert not inspector.has_table("project_usages")
                assert "allocated" not in {c["name"] for c in inspector.get_columns("subnets")}
                conn.execute(_instances_as_held(conn).insert().values(_instance("m-p1")))
                conn.execute(sa.text("DELETE FROM ip_allocations"))
        finally:
            engine.dispose()
    finally:
        database.drop(settings)


def _downgrade(url: str) -> None:
    from alembic import command

    command.downgrade(migrate.alembic_config(url), "0005")


def _hold_rows(conn: sa.Connection) -> None:
    """What a cloud at 0005 holds: live and deleted instances in two projects,
    a network with two subnets, one of them with three addresses."""
    for vcpus, deleted in ((1, False), (2, False), (8, True)):
        _add(conn, "m-p1", vcpus=vcpus, deleted=deleted)
    _add(conn, "m-p2", vcpus=4)
    now = utcnow()
    conn.execute(networks.insert().values(id="net-m", name="m", project_id="m-p1",
                                          created_at=now))
    for sid, cidr in (("sub-a", "10.50.0.0/24"), ("sub-b", "10.51.0.0/24")):
        # The models' subnets with only the columns 0005 has (``allocated``
        # has no default of the model's own, so the insert leaves it out).
        conn.execute(subnets.insert().values(
            id=sid, network_id="net-m", project_id="m-p1", ip_version=4, cidr=cidr,
            created_at=now))
    for i in range(3):
        conn.execute(ports.insert().values(id=f"port-{i}", network_id="net-m", project_id="m-p1",
                                           mac_address=f"fa:16:3e:00:00:0{i}", created_at=now))
        conn.execute(ip_allocations.insert().values(network_id="net-m",
                                                    ip_address=f"10.50.0.{i + 2}",
                                                    subnet_id="sub-a", port_id=f"port-{i}"))
