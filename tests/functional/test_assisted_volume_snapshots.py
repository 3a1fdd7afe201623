"""``os-assisted-volume-snapshots`` through the HTTP API (fake block storage,
fake driver): the host makes and merges overlays on the attached volume's
file chain and reports each outcome to block storage; the API's 400s
(Nova's: no mapping, a multiattach volume, a busy server, a bad body)."""
from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.context import admin_context
from cirrus.virt import exception as vexc
from cirrus.virt.fake import FaultRule
from tests.fakes_volume import FakeVolumes
from tests.functional.fake_block_storage import (cloud_options, project_of,  # noqa: F401
                                                 settings_overrides, volumes, wait_until)
from tests.functional.servers import active_server, fake_drivers
from tests.functional.test_volume_attach import attached

AVS = "/compute/v2.1/os-assisted-volume-snapshots"


def chain(cloud: Cloud, server_id: str, volume_id: str) -> list[str]:
    for driver in fake_drivers(cloud).values():
        if (server_id, volume_id) in driver.volume_chains:
            return driver.volume_chains[(server_id, volume_id)]
    return []


def reports(volumes: FakeVolumes) -> list[str]:
    return [subject for op, subject in volumes.calls if op == "update_snapshot_status"]


@pytest.fixture
async def setup(demo: httpx.AsyncClient, volumes: FakeVolumes) -> tuple[str, str, str]:
    """A server with a volume attached, and a snapshot block storage made of it."""
    server = await active_server(demo)
    volume = volumes.add_volume(await project_of(demo), size=1)
    await attached(demo, volumes, server, volume)
    snapshot = await volumes.create_snapshot_force(admin_context(), volume, "s", "")
    volumes.snapshots[snapshot["id"]]["status"] = "creating"
    return server, volume, snapshot["id"]


def create_body(volume: str, **info: Any) -> dict[str, Any]:
    return {"snapshot": {"volume_id": volume, "create_info": {
        "snapshot_id": info.pop("snapshot_id", "s1"), "type": "qcow2",
        "new_file": info.pop("new_file", "volume.s1"), **info}}}


async def delete(client: httpx.AsyncClient, snapshot_id: str, info: dict[str, Any],
                 version: str = "2.1") -> httpx.Response:
    return await client.delete(f"{AVS}/{snapshot_id}", params={"delete_info": json.dumps(info)},
                               headers={"OpenStack-API-Version": f"compute {version}"})


async def test_create_then_merge(cloud: Cloud, admin: httpx.AsyncClient, volumes: FakeVolumes,
                                 setup: tuple[str, str, str]) -> None:
    server, volume, snap = setup
    resp = await admin.post(AVS, json=create_body(volume, snapshot_id=snap, new_file="v.s1",
                                                  id=snap))
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"snapshot": {"id": snap, "volumeId": volume}}
    await wait_until(lambda: f"{snap}:creating:90%" in reports(volumes), "the host's report")
    assert chain(cloud, server, volume) == [volume, "v.s1"]
    second = await admin.post(AVS, json=create_body(volume, snapshot_id=snap, new_file="v.s2"))
    assert second.json() == {"snapshot": {"id": None, "volumeId": volume}}  # no id given
    await wait_until(lambda: chain(cloud, server, volume) == [volume, "v.s1", "v.s2"],
                     "the second overlay")
    # commit v.s1 into the base, then pull the base into the active file
    volumes.snapshots[snap]["status"] = "deleting"
    gone = await delete(admin, snap, {"volume_id": volume, "type": "qcow2",
                                      "file_to_merge": "v.s1", "merge_target_file": volume})
    assert gone.status_code == 204, gone.text
    await wait_until(lambda: chain(cloud, server, volume) == [volume, "v.s2"], "the commit")
    await wait_until(lambda: f"{snap}:deleting:90%" in reports(volumes), "the delete report")
    await delete(admin, snap, {"volume_id": volume, "type": "qcow2", "file_to_merge": None,
                               "merge_target_file": None})
    await wait_until(lambda: chain(cloud, server, volume) == ["v.s2"], "the pull")


async def test_a_failed_host_reports_error(cloud: Cloud, admin: httpx.AsyncClient,
                                           volumes: FakeVolumes,
                                           setup: tuple[str, str, str]) -> None:
    server, volume, snap = setup
    for driver in fake_drivers(cloud).values():
        driver.faults["volume_snapshot_create"].append(FaultRule(
            error=lambda _: vexc.VolumeSnapshotFailed(volume_id=volume, reason="injected")))
    resp = await admin.post(AVS, json=create_body(volume, snapshot_id=snap))
    assert resp.status_code == 200
    await wait_until(lambda: f"{snap}:error:" in reports(volumes), "the error report")
    assert chain(cloud, server, volume) == []


async def test_a_delete_the_host_cannot_do_reports_error_deleting(
        cloud: Cloud, admin: httpx.AsyncClient, volumes: FakeVolumes,
        setup: tuple[str, str, str]) -> None:
    server, volume, snap = setup
    # Tempest's call: no type, nothing to merge; Nova casts it, the host refuses.
    resp = await delete(admin, snap, {"volume_id": volume})
    assert resp.status_code == 204
    await wait_until(lambda: f"{snap}:error_deleting:" in reports(volumes), "the report")
    unknown = await delete(admin, "no-such-snapshot", {"volume_id": volume, "type": "qcow2",
                                                       "file_to_merge": "nothing"})
    assert unknown.status_code == 204  # block storage hears of it, not the caller
    await wait_until(lambda: any(r.startswith("no-such-snapshot:error_deleting")
                                 for r in reports(volumes)), "the unknown snapshot's report")


@pytest.mark.parametrize("body, field", [
    ({}, "snapshot"),
    ({"snapshot": {"volume_id": "v"}}, "create_info"),
    ({"snapshot": {"volume_id": "", "create_info": {}}}, "volume_id"),
    ({"snapshot": {"volume_id": "v", "create_info": {"type": "qcow2", "new_file": "f"}}},
     "snapshot_id"),
    ({"snapshot": {"volume_id": "v", "create_info": {"snapshot_id": "s", "type": "raw",
                                                     "new_file": "f"}}}, "type"),
    ({"snapshot": {"volume_id": "v", "create_info": {"snapshot_id": "s", "type": "qcow2",
                                                     "new_file": "f", "x": 1}}}, "x"),
    ({"snapshot": {"volume_id": "v", "create_info": {"snapshot_id": 5, "type": "qcow2",
                                                     "new_file": "f"}}}, "snapshot_id"),
    ({"snapshot": {"volume_id": "v", "create_info": {}, "extra": 1}}, "extra"),
])
async def test_bad_create_bodies_are_400(admin: httpx.AsyncClient, body: dict[str, Any],
                                         field: str) -> None:
    resp = await admin.post(AVS, json=body)
    assert resp.status_code == 400 and field in resp.text, resp.text


async def test_refusals_are_400(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                volumes: FakeVolumes) -> None:
    unmapped = volumes.add_volume(await project_of(demo))
    for volume_id in (unmapped, "x" * 40):
        resp = await admin.post(AVS, json=create_body(volume_id))
        assert resp.status_code == 400 and "No volume Block Device Mapping" in resp.text
    for volume_id in (unmapped, "a\x00b"):  # a NUL reaches the query only through delete_info
        resp = await delete(admin, "s", {"volume_id": volume_id, "type": "qcow2"})
        assert resp.status_code == 400 and "No volume Block Device Mapping" in resp.text
    for params in ({}, {"delete_info": "not json"}, {"delete_info": "[]"}):
        bad = await admin.delete(f"{AVS}/s", params=params)
        assert bad.status_code == 400, params
    extra = await admin.delete(f"{AVS}/s", params={"delete_info": json.dumps(
        {"volume_id": unmapped}), "other": "1"}, headers={"OpenStack-API-Version": "compute 2.75"})
    assert extra.status_code == 400 and "other" in extra.text
    older = await admin.delete(f"{AVS}/s", params={"delete_info": json.dumps(
        {"volume_id": unmapped}), "other": "1"}, headers={"OpenStack-API-Version": "compute 2.74"})
    assert older.status_code == 400 and "No volume Block Device Mapping" in older.text


async def test_a_multiattached_volume_is_400(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                            volumes: FakeVolumes) -> None:
    shared = volumes.add_volume(await project_of(demo), multiattach=True)
    for _ in range(2):
        await attached(demo, volumes, await active_server(demo), shared)
    resp = await admin.post(AVS, json=create_body(shared))
    assert resp.status_code == 400 and "multiple attachments" in resp.text


async def test_a_busy_server_is_400(admin: httpx.AsyncClient, cloud: Cloud,
                                    setup: tuple[str, str, str]) -> None:
    server, volume, _ = setup
    import sqlalchemy as sa

    from cirrus.compute.models import instances

    def busy(conn: sa.Connection) -> None:
        conn.execute(instances.update().where(instances.c.uuid == server).values(
            task_state="rebooting"))
    assert cloud.db is not None
    await cloud.db.run(busy)
    resp = await admin.post(AVS, json=create_body(volume))
    assert resp.status_code == 400 and "task_state rebooting" in resp.text


async def test_only_admins(demo: httpx.AsyncClient, setup: tuple[str, str, str]) -> None:
    _, volume, snap = setup
    assert (await demo.post(AVS, json=create_body(volume))).status_code == 403
    assert (await delete(demo, snap, {"volume_id": volume})).status_code == 403
