"""What a failure or a ``kill -9`` leaves of an attach or a detach, and the
volume sweep that settles it (issue 20: no volume left attaching/detaching or
attached to a deleted server).

A killed compute's leftovers are made here as the database holds them at
each point where the process could die — the attachment reserved or
exported, the mapping written with or without the connection info, the
attachment released before the mapping — and the sweep is run as its
periodic task would run it once the timeout has passed. Real block storage
(file backend), fake compute driver."""
from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute import bdms as bdm_db
from cirrus.compute.models import instances
from cirrus.db.base import utcnow
from cirrus.virt import exception as vexc
from cirrus.virt.fake import FaultRule
from cirrus.volume.periodic import SweepResult, sweep
from tests.functional.servers import active_server, fake_drivers, wait_for_status
from tests.functional.volumes import action, create_volume, show, volume_url

V344 = {"OpenStack-API-Version": "volume 3.44"}
CONNECTOR = {"host": "compute1", "ip": "127.0.0.1", "initiator": "iqn.x"}
TIMEOUT = 600.0
SERVERS = "/compute/v2.1/servers"


def _later() -> dt.datetime:
    return utcnow() + dt.timedelta(seconds=TIMEOUT + 1)


async def _sweep(cloud: Cloud, now: dt.datetime | None = None) -> SweepResult:
    assert cloud.db is not None
    result: SweepResult = await cloud.db.run(sweep, TIMEOUT, now)
    return result


async def _volume_status(client: httpx.AsyncClient, volume_id: str, wanted: str) -> None:
    for _ in range(1000):
        if (await show(client, "volumes", volume_id))["status"] == wanted:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"volume {volume_id} never became {wanted}")


async def _usage(client: httpx.AsyncClient) -> dict[str, Any]:
    base = await volume_url(client)
    return dict((await client.get(f"{base}/limits")).json()["limits"]["absolute"])


async def _server_volumes(client: httpx.AsyncClient, server: str) -> list[str]:
    resp = await client.get(f"{SERVERS}/{server}/os-volume_attachments")
    assert resp.status_code == 200, resp.text
    return [a["volumeId"] for a in resp.json()["volumeAttachments"]]


async def _reserve(client: httpx.AsyncClient, volume_id: str, server: str,
                   connector: dict[str, Any] | None) -> dict[str, Any]:
    """The attachment the compute API makes (and the host exports, with a connector)."""
    base = await volume_url(client)
    body: dict[str, Any] = {"volume_uuid": volume_id, "instance_uuid": server}
    if connector:
        body["connector"] = connector
    resp = await client.post(f"{base}/attachments", json={"attachment": body}, headers=V344)
    assert resp.status_code == 200, resp.text
    return dict(resp.json()["attachment"])


async def _mapping(cloud: Cloud, server: str, volume_id: str, attachment: dict[str, Any],
                   plugged: bool) -> None:
    """The mapping the compute API writes (with the connection info once plugged)."""
    assert cloud.db is not None
    await cloud.db.run(bdm_db.create, server, {
        "source_type": "volume", "destination_type": "volume", "volume_id": volume_id,
        "attachment_id": attachment["id"], "device_name": "/dev/vdb", "boot_index": None,
        "volume_size": 1, "delete_on_termination": False, "device_type": "disk",
        "connection_info": attachment["connection_info"] if plugged else None})


async def test_a_driver_failure_during_attach_leaves_the_volume_available(
        cloud: Cloud, demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    volume = await create_volume(demo)
    await _volume_status(demo, volume["id"], "available")
    usage = await _usage(demo)
    for driver in fake_drivers(cloud).values():
        driver.faults["attach_volume"].append(FaultRule(
            error=lambda i: vexc.VolumeAttachFailed(volume_id="v", reason="injected")))
    resp = await demo.post(f"{SERVERS}/{server}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": volume["id"]}})
    assert resp.status_code == 200, resp.text  # cast to the host, which fails
    await _volume_status(demo, volume["id"], "available")
    assert await _server_volumes(demo, server) == []
    shown = await show(demo, "volumes", volume["id"])
    assert shown["attachments"] == []
    assert await _usage(demo) == usage
    assert await _sweep(cloud, _later()) == SweepResult([], [])  # nothing left to fix


@pytest.mark.parametrize("plugged, status, listed", [
    (False, "available", False),  # died before the plug: undone
    (True, "in-use", True),       # died after the plug, before attachment_complete: finished
])
async def test_a_compute_killed_mid_attach(cloud: Cloud, demo: httpx.AsyncClient,
                                           plugged: bool, status: str, listed: bool) -> None:
    server = await active_server(demo)
    volume = await create_volume(demo)
    attachment = await _reserve(demo, volume["id"], server, CONNECTOR if plugged else None)
    await _mapping(cloud, server, volume["id"], attachment, plugged)
    # Before the timeout the attach may still be running: nothing changes.
    assert await _sweep(cloud) == SweepResult([], [])
    result = await _sweep(cloud, _later())
    assert (result.completed, result.released) == \
        (([attachment["id"]], []) if plugged else ([], [attachment["id"]]))
    assert (await show(demo, "volumes", volume["id"]))["status"] == status
    assert await _server_volumes(demo, server) == ([volume["id"]] if listed else [])
    assert await _sweep(cloud, _later()) == SweepResult([], [])  # settled for good


async def test_a_compute_killed_mid_detach_after_the_release(cloud: Cloud,
                                                             demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    volume = await create_volume(demo)
    resp = await demo.post(f"{SERVERS}/{server}/os-volume_attachments",
                           json={"volumeAttachment": {"volumeId": volume["id"]}})
    assert resp.status_code == 200, resp.text
    await _volume_status(demo, volume["id"], "in-use")
    # The host unplugged it and released the attachment, then died: the
    # mapping is left naming a released attachment.
    [ref] = (await show(demo, "volumes", volume["id"]))["attachments"]
    base = await volume_url(demo)
    resp = await demo.delete(f"{base}/attachments/{ref['attachment_id']}", headers=V344)
    assert resp.status_code == 200, resp.text
    assert await _server_volumes(demo, server) == [volume["id"]]
    result = await _sweep(cloud)
    assert len(result.unmapped) == 1
    assert await _server_volumes(demo, server) == []
    assert (await show(demo, "volumes", volume["id"]))["status"] == "available"


async def test_a_server_under_an_action_is_left_alone(cloud: Cloud,
                                                      demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    volume = await create_volume(demo)
    attachment = await _reserve(demo, volume["id"], server, None)
    await _mapping(cloud, server, volume["id"], attachment, plugged=False)
    assert cloud.db is not None
    await cloud.db.run(lambda c: c.execute(instances.update().where(
        instances.c.uuid == server).values(task_state="rebuilding")))
    assert await _sweep(cloud, _later()) == SweepResult([], [])
    assert (await show(demo, "volumes", volume["id"]))["status"] == "reserved"


@pytest.mark.parametrize("steps, stuck, settled", [
    (["os-reserve"], "attaching", "available"),
    (["os-reserve", "os-attach", "os-begin_detaching"], "detaching", "in-use"),
])
async def test_a_legacy_reserve_or_detach_never_followed_up(
        cloud: Cloud, demo: httpx.AsyncClient, steps: list[str], stuck: str,
        settled: str) -> None:
    volume = await create_volume(demo)
    server = await active_server(demo)
    args = {"os-reserve": None, "os-begin_detaching": None,
            "os-attach": {"instance_uuid": server, "mountpoint": "/dev/vdc"}}
    for name in steps:
        resp = await action(demo, volume["id"], name, args[name])
        assert resp.status_code == 202, (name, resp.text)
    assert (await show(demo, "volumes", volume["id"]))["status"] == stuck
    assert (await _sweep(cloud)).settled == []
    assert (await _sweep(cloud, _later())).settled == [volume["id"]]
    assert (await show(demo, "volumes", volume["id"]))["status"] == settled


async def test_a_deleted_servers_volume_is_released(cloud: Cloud,
                                                    demo: httpx.AsyncClient) -> None:
    """A server deleted while its compute was dead: whatever the delete could
    not release, the sweep does."""
    server = await active_server(demo)
    volume = await create_volume(demo)
    attachment = await _reserve(demo, volume["id"], server, CONNECTOR)
    assert cloud.db is not None
    await cloud.db.run(lambda c: c.execute(instances.update().where(
        instances.c.uuid == server).values(deleted=True)))
    assert (await _sweep(cloud)).released == [attachment["id"]]
    assert (await show(demo, "volumes", volume["id"]))["status"] == "available"
    await wait_for_status(demo, server, {"DELETED"})
