"""The create of a fixed count as one statement on PostgreSQL
(``provision.create_in_one_statement``): the project's usage row locked, the
quota checked in SQL and the records inserted only if it passes. It must
write what the transaction path writes, refuse with the same message, write
nothing when it refuses, and keep the quota under concurrent creates. The API
tests run on SQLite too (the transaction path there), with the same
expectations: the outcomes may not depend on the database."""
from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import exception as exc
from cirrus.compute import provision, quotas, records
from cirrus.compute.models import (block_device_mappings, instance_actions, instance_info_caches,
                                   instances, project_usages)
from cirrus.compute.records import CreateRequest
from cirrus.context import RequestContext
from cirrus.db.onestatement import is_one_statement
from tests.functional.servers import db_count, server_body, upload_image

pytestmark = pytest.mark.storage

SERVERS = "/compute/v2.1/servers"

FLAVOR = {"flavorid": "1", "name": "m1.tiny", "vcpus": 2, "memory_mb": 512, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "rxtx_factor": 1.0, "extra_specs": {"a": "b"},
          "description": None}
IMAGE = {"id": "img", "properties": {"os": "x"}, "disk_format": "raw", "min_ram": 0}
AT = dt.datetime(2026, 1, 2, 3, 4, 5, 678901)


def _request(count: int, **extra: Any) -> CreateRequest:
    return CreateRequest(name="web", flavor_id="1", image_href="img", min_count=count,
                         max_count=count, metadata={"k": "v"}, requested_networks=None, **extra)


def _prepared(ctx: RequestContext, req: CreateRequest, count: int) -> list[dict[str, Any]]:
    return records.instance_rows(ctx, req, FLAVOR, IMAGE, "nova", None, "r-1", count, AT)


def _raw(conn: sa.Connection, table: sa.Table, where: Any, skip: tuple[str, ...]
         ) -> list[dict[str, Any]]:
    """``table``'s rows as the database holds them (text), in id order where
    the table has ids, without the columns of ``skip``."""
    order = [table.c.id] if "id" in table.c else [table.c.instance_uuid]
    rows = conn.execute(sa.select(*(sa.type_coerce(c, sa.String) for c in table.columns))
                        .where(where).order_by(*order)).all()
    return [{c.name: v for c, v in zip(table.columns, row) if c.name not in skip} for row in rows]


def _written(conn: sa.Connection, project: str) -> dict[str, list[dict[str, Any]]]:
    """Everything a create of ``project`` wrote, without what differs between
    two creates of one request (ids, uuids, the project, the action's times)."""
    uuids = sa.select(instances.c.uuid).where(instances.c.project_id == project)
    return {
        "instances": _raw(conn, instances, instances.c.project_id == project,
                          ("id", "uuid", "project_id")),
        "caches": _raw(conn, instance_info_caches, instance_info_caches.c.instance_uuid.in_(uuids),
                       ("instance_uuid",)),
        "mappings": _raw(conn, block_device_mappings,
                         block_device_mappings.c.instance_uuid.in_(uuids),
                         ("id", "instance_uuid", "uuid")),
        "actions": _raw(conn, instance_actions, instance_actions.c.project_id == project,
                        ("id", "instance_uuid", "project_id", "start_time", "created_at")),
    }


def _usage_row(conn: sa.Connection, project: str) -> Any:
    return conn.execute(sa.select(project_usages.c.instances, project_usages.c.cores,
                                  project_usages.c.ram)
                        .where(project_usages.c.project_id == project)).one_or_none()


async def test_one_statement_writes_what_the_transaction_writes(cloud: Cloud) -> None:
    """PostgreSQL: two servers created by the one statement and by the
    transaction path (their own projects, same request) store the same
    values in every table, and the ids set on the rows are theirs."""
    if not cloud.db.is_postgresql:
        pytest.skip("the one statement is PostgreSQL's")
    assert is_one_statement(provision.create_in_one_statement)
    settings = cloud.settings
    made: dict[str, list[dict[str, Any]]] = {}
    for project in ("p-one", "p-tx"):
        ctx = RequestContext(user_id="u", project_id=project, request_id="req-same")
        req = _request(2)
        rows = _prepared(ctx, req, 2)
        if project == "p-one":
            assert provision.one_statement_fits(True, req, None, 2, rows)
            made[project] = await cloud.db.run(provision.create_in_one_statement, settings, ctx,
                                               req, FLAVOR, IMAGE, rows)
        else:  # the transaction path: a count that might have shrunk
            req.min_count = 1
            assert not provision.one_statement_fits(True, req, None, 2, rows)
            made[project] = await cloud.db.run(provision.provision_instances, settings, ctx, req,
                                               FLAVOR, IMAGE, "nova", None, None, "r-1", 2, rows)
    with cloud.db.engine.connect() as conn:
        one, tx = _written(conn, "p-one"), _written(conn, "p-tx")
        assert [len(one[t]) for t in one] == [2, 2, 2, 2], one
        assert one == tx
        for rows in made.values():
            for row in rows:
                assert conn.execute(sa.select(instances.c.id).where(
                    instances.c.uuid == row["uuid"])).scalar_one() == row["id"]


@pytest.mark.parametrize("own, class_limits, count, message", [
    # the project's own limit
    ({"instances": 2}, {}, 3,
     "Quota exceeded for instances: Requested 3, but already used 1 of 2 instances"),
    # the default class's, over the settings' (cores 20 by default)
    ({}, {"cores": 5}, 3, "Quota exceeded for cores: Requested 6, but already used 2 of 5 cores"),
    # the settings' own (ram 51200 by default): 512 × 100
    ({"instances": -1, "cores": -1}, {}, 100,
     "Quota exceeded for ram: Requested 51200, but already used 512 of 51200 ram"),
])
async def test_a_refused_create_writes_nothing_and_says_why(
        cloud: Cloud, own: dict[str, int], class_limits: dict[str, int], count: int,
        message: str) -> None:
    """Over quota, whichever limit (the project's, the default class's, the
    settings'): TooManyInstances with the message of the check in Python,
    and nothing of the create in any table, the usage row as it was."""
    ctx = RequestContext(user_id="u", project_id="p-over", request_id="req-over")

    def limit(conn: sa.Connection) -> None:
        quotas.set_limits(conn, "p-over", own)
        quotas.set_class_limits(conn, quotas.DEFAULT_CLASS, class_limits)
    await cloud.db.run(limit)
    first = _request(1)
    await cloud.db.run(_create, cloud, ctx, first, _prepared(ctx, first, 1))
    with cloud.db.engine.connect() as conn:
        before, usage = _written(conn, "p-over"), _usage_row(conn, "p-over")
    req = _request(count)
    with pytest.raises(exc.TooManyInstances) as raised:
        await cloud.db.run(_create, cloud, ctx, req, _prepared(ctx, req, count))
    assert raised.value.format_message() == message
    with cloud.db.engine.connect() as conn:
        assert _written(conn, "p-over") == before
        assert _usage_row(conn, "p-over") == usage == (1, 2, 512)


async def test_a_resource_the_flavor_takes_none_of_does_not_refuse(cloud: Cloud) -> None:
    """PostgreSQL: a project over its cores limit (lowered below its usage)
    may still create a fixed count of a flavor of no vCPUs, as
    ``InstanceQuota.allowed`` says (and main's pipelined path did). The
    transaction path's ``recheck`` refuses it (it does not skip a resource
    the flavor takes none of): a difference older than this statement."""
    if not cloud.db.is_postgresql:
        pytest.skip("the transaction path's recheck refuses it")
    ctx = RequestContext(user_id="u", project_id="p-zero", request_id="req-zero")
    first = _request(1)
    await cloud.db.run(_create, cloud, ctx, first, _prepared(ctx, first, 1))
    await cloud.db.run(quotas.set_limits, "p-zero", {"cores": 1})  # 2 used
    req = _request(2)
    no_cores = {**FLAVOR, "vcpus": 0}
    rows = records.instance_rows(ctx, req, no_cores, IMAGE, "nova", None, "r-1", 2, AT)
    made = await cloud.db.run(provision.provision_instances, cloud.settings, ctx, req, no_cores,
                              IMAGE, "nova", None, None, "r-1", 2, rows)
    assert len(made) == 2
    with cloud.db.engine.connect() as conn:
        assert _usage_row(conn, "p-zero") == (3, 2, 1536)


def _create(conn: sa.Connection, cloud: Cloud, ctx: RequestContext, req: CreateRequest,
            rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The create as the API runs it for a fixed count (its unit inside)."""
    return provision.provision_instances(conn, cloud.settings, ctx, req, FLAVOR, IMAGE, "nova",
                                         None, None, "r-1", req.max_count, rows)


async def test_the_unit_runs_alone_in_autocommit(cloud: Cloud) -> None:
    """PostgreSQL: the API's unit declared one statement runs without a
    transaction (the database's check of units refuses a second write), and
    the usage row is free as soon as it returns."""
    if not cloud.db.is_postgresql:
        pytest.skip("the one statement is PostgreSQL's")
    assert cloud.db.check_units  # a second writing statement would raise
    ctx = RequestContext(user_id="u", project_id="p-free", request_id="req-free")
    req = _request(3)
    rows = await cloud.db.run(provision.create_in_one_statement, cloud.settings, ctx, req,
                              FLAVOR, IMAGE, _prepared(ctx, req, 3))
    assert len({r["id"] for r in rows}) == 3
    with cloud.db.engine.connect() as conn, conn.begin():
        conn.execute(sa.text("SET LOCAL lock_timeout = '200ms'"))
        assert quotas.locked_usage(conn, "p-free") == {"instances": 3, "cores": 6, "ram": 1536}


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


@pytest.mark.parametrize("settings_overrides", [{"quota_instances": 4}])
async def test_concurrent_fixed_creates_keep_the_quota(cloud: Cloud, demo: httpx.AsyncClient,
                                                       image: str) -> None:
    """12 creates of two servers at once against an instances quota of 4:
    exactly two are accepted, every other one refused naming the quota as
    used in full, and the counter agrees with the rows."""
    resps = await asyncio.gather(*[
        demo.post(SERVERS, json=server_body(image, name=f"q{i}", min_count=2, max_count=2))
        for i in range(12)])
    assert sorted(r.status_code for r in resps) == [202] * 2 + [403] * 10, \
        [r.text for r in resps if r.status_code not in (202, 403)]
    for resp in resps:
        if resp.status_code == 403:
            assert resp.json() == {"forbidden": {"code": 403, "message": (
                "Quota exceeded for instances: Requested 2, but already used 4 of 4 instances")}}
    assert await db_count(cloud, instances, instances.c.deleted.is_(False)) == 4
    actions = await db_count(cloud, instance_actions, instance_actions.c.action == "create")
    assert actions == 4


async def _own_network(client: httpx.AsyncClient) -> str:
    net = (await client.post("/network/v2.0/networks", json={"network": {"name": "own"}}))
    assert net.status_code == 201, net.text
    net_id = str(net.json()["network"]["id"])
    sub = await client.post("/network/v2.0/subnets", json={"subnet": {
        "network_id": net_id, "ip_version": 4, "cidr": "10.77.0.0/24"}})
    assert sub.status_code == 201, sub.text
    return net_id


@pytest.mark.parametrize("settings_overrides", [{"quota_ports": 1, "quota_instances": 1}])
@pytest.mark.parametrize("by_id", [False, True], ids=["auto", "by-id"])
async def test_the_port_quota_is_checked_before_the_instances(cloud: Cloud,
                                                              demo: httpx.AsyncClient,
                                                              by_id: bool) -> None:
    """A create's port quota, its networks ``auto`` or asked by id (on
    PostgreSQL checked by the create's own statement, no read before it): no
    port free is PortLimitExceeded, before the instances' quota (the
    networks are checked first, as in Nova), nothing made; a project over
    its port limit is told by how much."""
    from cirrus.network import quotas as port_quotas
    from cirrus.network.ports import ports_of_project

    image = await upload_image(demo)
    networks: Any = [{"uuid": await _own_network(demo)}] if by_id else "auto"
    resp = await demo.post(SERVERS, json=server_body(image, networks=networks))
    assert resp.status_code == 202, resp.text
    server = (await demo.get(f"{SERVERS}/{resp.json()['server']['id']}")).json()["server"]
    for _ in range(200):  # the build's port, counted at its commit
        if await cloud.db.read(ports_of_project, server["tenant_id"]) == 1:
            break
        await asyncio.sleep(0.05)
    # both quotas used up
    resp = await demo.post(SERVERS, json=server_body(image, networks=networks))
    assert resp.status_code == 403, resp.text
    assert resp.json()["forbidden"]["message"] == "Maximum number of ports exceeded"
    await cloud.db.run(port_quotas.update, cloud.settings, server["tenant_id"], {"port": 0},
                       True)
    resp = await demo.post(SERVERS, json=server_body(image, networks=networks))
    assert resp.status_code == 403, resp.text
    assert resp.json()["forbidden"]["message"] == \
        "The number of defined ports: 1 is over the limit: 0"
    assert await db_count(cloud, instances) == 1
