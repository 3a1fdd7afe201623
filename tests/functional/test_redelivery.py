"""A message delivered twice, even twice at once, builds once.

On RabbitMQ a cast whose consumer lost its connection before acking comes
again, possibly while the first delivery is still being handled, and a publish
whose confirm was lost is sent again. Here the in-process bus is made to
deliver every cast twice, concurrently, and stale requests are replayed.
"""
from __future__ import annotations

import asyncio
import uuid as uuidlib
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations, compute_nodes, instances
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.context import admin_context
from tests.functional.servers import (build_events, db_count, server_body, upload_image,
                                      wait_for_status)

SERVERS = "/compute/v2.1/servers"


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


@pytest.fixture
def like_a_broker(cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process bus, which delivers at most once, stands for a broker
    that may deliver again: handlers take the care they take there."""
    monkeypatch.setattr(cloud.transport, "at_most_once", False)


@pytest.fixture
def every_cast_twice(cloud: Cloud, monkeypatch: pytest.MonkeyPatch, like_a_broker: None) -> None:
    transport = cloud.transport
    original = transport.cast

    async def cast(topic: str, server: str | None, message: dict[str, Any]) -> None:
        await original(topic, server, message)
        await original(topic, server, message)
    monkeypatch.setattr(transport, "cast", cast)


async def assert_built_once(cloud: Cloud, admin: httpx.AsyncClient, ids: list[str]) -> None:
    """ACTIVE, one build, one claim and one port each; node usage adds up."""
    for server_id in ids:
        server = await wait_for_status(admin, server_id, {"ACTIVE", "ERROR"})
        assert server["status"] == "ACTIVE", server.get("fault")
        assert len(await build_events(admin, server_id)) == 1
        ports = (await admin.get("/network/v2.0/ports", params={"device_id": server_id})
                 ).json()["ports"]
        assert len(ports) == 1, ports
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid.in_(ids)) == len(ids)

    def running(conn: sa.Connection) -> int:
        return conn.execute(sa.select(sa.func.sum(compute_nodes.c.running_vms))).scalar_one()
    assert await cloud.db.read(running) == len(ids)


async def test_every_cast_delivered_twice_builds_each_server_once(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str,
        every_cast_twice: None) -> None:
    resp = await demo.post(SERVERS, json=server_body(image, name="twin", min_count=4,
                                                     max_count=4, return_reservation_id=True))
    assert resp.status_code == 202, resp.text
    listed = await demo.get(SERVERS, params={"reservation_id": resp.json()["reservation_id"]})
    ids = [s["id"] for s in listed.json()["servers"]]
    assert len(ids) == 4
    await assert_built_once(cloud, admin, ids)


async def test_stale_build_requests_leave_an_active_server_alone(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str,
        like_a_broker: None) -> None:
    resp = await demo.post(SERVERS, json=server_body(image, name="stale"))
    server_id = resp.json()["server"]["id"]
    await wait_for_status(demo, server_id, {"ACTIVE"})

    def placement(conn: sa.Connection) -> Any:
        return conn.execute(sa.select(instances.c.host, instances.c.node).where(
            instances.c.uuid == server_id)).one()
    host, node = await cloud.db.read(placement)
    ctx = admin_context()
    # The conductor's request again (a redelivery after the build finished) …
    await ComputeTaskAPI(cloud.transport).build_instances(
        ctx, instance_uuids=[server_id], request_spec={"instance_uuids": [server_id]},
        filter_properties={}, build_params={})
    # … and the compute host's, as a host coming back finds it still queued.
    await ComputeAPI(cloud.transport).build_and_run_instance(
        ctx, host, instance_uuid=server_id, node=node, request_spec={}, filter_properties={},
        build_params={})
    await asyncio.sleep(0.3)  # the casts' handlers run as tasks: let them start
    for service in cloud.services:  # and any build they began finish
        builds = getattr(service.endpoint, "builds", None)
        for task in builds.tasks() if builds is not None else []:
            await task
    server = await wait_for_status(demo, server_id, {"ACTIVE", "ERROR"})
    assert server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None
    await assert_built_once(cloud, admin, [server_id])


def _spec(uuid: str) -> dict[str, Any]:
    return {"instance_uuids": [uuid], "num_instances": 1, "image": {"properties": {}},
            "flavor": {"vcpus": 1, "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0,
                       "swap": 0, "extra_specs": {}}}


async def _usage(cloud: Cloud) -> int:
    def used(conn: sa.Connection) -> int:
        return conn.execute(sa.select(sa.func.sum(compute_nodes.c.vcpus_used))).scalar_one()
    return await cloud.db.read(used)


async def test_a_repeated_scheduling_request_keeps_its_claim(
        cloud: Cloud, monkeypatch: pytest.MonkeyPatch) -> None:
    from cirrus import claims

    scheduler = next(s.endpoint for s in cloud.services if s.binary == "cirrus-scheduler")
    consumer = str(uuidlib.uuid4())
    first = await scheduler.select_destinations(admin_context(), _spec(consumer))
    again = await scheduler.select_destinations(admin_context(), _spec(consumer))
    assert again["destinations"] == first["destinations"]
    assert await _usage(cloud) == 1
    # A twin that claimed between our look and our insert: its claim is the answer.
    twin = str(uuidlib.uuid4())
    placed = await scheduler.select_destinations(admin_context(), _spec(twin))
    real, looks = claims.held, []

    def blind_look(conn: sa.Connection, node_id: int, consumer: str, *want: int) -> claims.Attempt:
        # The look saw nothing; the twin's claim came before the insert.
        return claims.Attempt(None, claims.claim(conn, node_id, consumer, *want))

    def look(conn: sa.Connection, consumer: str) -> int | None:
        looks.append(consumer)
        return real(conn, consumer)
    monkeypatch.setattr(claims, "claim_unless_held", blind_look)
    monkeypatch.setattr(claims, "held", look)
    raced = await scheduler.select_destinations(admin_context(), _spec(twin))
    assert len(looks) == 1  # the insert hit the twin's claim, and looked again
    assert raced["destinations"] == placed["destinations"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == twin) == 1
    assert await _usage(cloud) == 2


@pytest.fixture
def waiting_reads(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The conductor's reads of the instances still waiting for a host."""
    from cirrus.conductor import manager

    reads: list[list[str]] = []
    real = manager._waiting_for_host

    def counted(conn: sa.Connection, uuids: list[str]) -> list[str]:
        reads.append(list(uuids))
        return real(conn, uuids)
    monkeypatch.setattr(manager, "_waiting_for_host", counted)
    return reads


async def _boot(demo: httpx.AsyncClient, image: str, name: str, count: int = 1) -> list[str]:
    resp = await demo.post(SERVERS, json=server_body(image, name=name, min_count=count,
                                                     max_count=count,
                                                     return_reservation_id=True))
    assert resp.status_code == 202, resp.text
    listed = await demo.get(SERVERS, params={"reservation_id": resp.json()["reservation_id"]})
    ids = [s["id"] for s in listed.json()["servers"]]
    assert len(ids) == count
    for server_id in ids:
        server = await wait_for_status(demo, server_id, {"ACTIVE", "ERROR"})
        assert server["status"] == "ACTIVE", server.get("fault")
    return ids


@pytest.mark.parametrize("broker", [False, True])
async def test_one_instance_is_scheduled_unread_several_are_read(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str,
        waiting_reads: list[list[str]], monkeypatch: pytest.MonkeyPatch, broker: bool) -> None:
    """On any bus (``broker``: one that may deliver again) one instance goes
    to the scheduler unread: a repeated delivery keeps the first one's claim
    (see the next test). Several are read still: one gone would take the
    others' room."""
    if broker:
        monkeypatch.setattr(cloud.transport, "at_most_once", False)
    one = await _boot(demo, image, "once")
    assert waiting_reads == []
    await assert_built_once(cloud, admin, one)
    several = await _boot(demo, image, "several", count=2)
    assert [sorted(r) for r in waiting_reads] == [sorted(several)]


async def test_a_repeated_request_keeps_the_claim_of_a_placed_instance_whose_host_no_longer_passes(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str,
        like_a_broker: None) -> None:
    """The scheduler moves a held claim whose host is no longer a candidate
    only while the instance waits for a host: once a delivery placed it, the
    claim is that build's and stays, and the request gets no host (its
    instance is left alone by the conductor)."""
    from cirrus.scheduler.manager import _claim_first
    from cirrus.scheduler.spec import Spec

    [server_id] = await _boot(demo, image, "placed")
    before = await cloud.db.read(_allocation_of, server_id)
    assert before is not None
    spec = Spec.from_request(_spec(server_id))
    # No candidate at all (the host went away meanwhile): placed, kept.
    assert await cloud.db.run(_claim_first, server_id, [], spec, True) == (None, "placed", [])
    assert await cloud.db.read(_allocation_of, server_id) == before
    # A consumer whose instance waits for no host (it has none) is moved as before.
    waiting = str(uuidlib.uuid4())
    node_id = before[0]
    assert (await cloud.db.run(_claim_first, waiting, [node_id], spec, True))[:2] == (node_id, "new")
    assert await cloud.db.run(_claim_first, waiting, [], spec, True) == (None, "full", [])
    assert await cloud.db.read(_allocation_of, waiting) is None
    # Through the conductor: nothing cast, the server untouched.
    conductor = next(s.endpoint for s in cloud.services if s.binary == "cirrus-conductor")
    casts: list[str] = []

    async def build_and_run_instance(*_: Any, **kwargs: Any) -> None:
        casts.append(kwargs["instance_uuid"])
    conductor.compute_rpcapi.build_and_run_instance = build_and_run_instance
    await conductor.build_instances(admin_context(), [server_id], _spec(server_id), {}, {})
    assert casts == [] and await cloud.db.read(_allocation_of, server_id) == before
    await assert_built_once(cloud, admin, [server_id])


def _allocation_of(conn: sa.Connection, consumer: str) -> tuple[int, int] | None:
    row = conn.execute(sa.select(allocations.c.node_id, allocations.c.vcpus).where(
        allocations.c.consumer_uuid == consumer)).first()
    return None if row is None else (row[0], row[1])


async def test_a_request_for_an_instance_deleted_before_it_was_scheduled_leaves_no_claim(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str,
        waiting_reads: list[list[str]]) -> None:
    # On a bus that delivers once, a request that finds its instance gone is
    # scheduled unread: the claim the scheduler makes is given back, nothing
    # is built and nothing is recorded, as when the delete comes while the
    # scheduler decides.
    [server_id] = await _boot(demo, image, "gone")
    assert (await demo.delete(f"{SERVERS}/{server_id}")).status_code == 204
    await wait_for_status(demo, server_id, {"DELETED"})
    assert await _usage(cloud) == 0
    conductor = next(s.endpoint for s in cloud.services if s.binary == "cirrus-conductor")
    scheduler = next(s.endpoint for s in cloud.services if s.binary == "cirrus-scheduler")
    asked: list[list[str]] = []
    real_select = scheduler.select_destinations

    async def select(ctx: Any, request_spec: dict[str, Any]) -> Any:
        asked.append(list(request_spec["instance_uuids"]))
        return await real_select(ctx, request_spec)
    casts: list[str] = []

    async def build_and_run_instance(*_: Any, **kwargs: Any) -> None:
        casts.append(kwargs["instance_uuid"])
    conductor.scheduler_client.select_destinations = select
    conductor.compute_rpcapi.build_and_run_instance = build_and_run_instance

    def events(conn: sa.Connection) -> int:
        from cirrus.compute.models import instance_actions as act
        from cirrus.compute.models import instance_actions_events as ev
        return conn.execute(sa.select(sa.func.count()).select_from(ev).join(
            act, act.c.id == ev.c.action_id).where(act.c.instance_uuid == server_id)).scalar_one()
    before = await cloud.db.read(events)
    await conductor.build_instances(admin_context(), [server_id], _spec(server_id), {}, {})
    assert waiting_reads == [] and asked == [[server_id]] and casts == []
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == server_id) == 0
    assert await _usage(cloud) == 0
    assert await cloud.db.read(events) == before
    assert (await demo.get(f"{SERVERS}/{server_id}")).status_code == 404
