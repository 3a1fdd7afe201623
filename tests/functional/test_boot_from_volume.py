"""Boot from volume and the block device mappings of ``POST /servers``
(BDM v2 and the legacy v1), with the fake block storage: each source made
ready by the build, the root volume not claimed on the host, detaching it
refused, bad mappings 400 with nothing changed, a failed volume aborting the
build with the volumes released."""
from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations, block_device_mappings, instances
from cirrus.context import RequestContext
from tests.fakes_volume import FakeVolumes, VolumeBackendError
from tests.functional.servers import (create_server, db_count, fake_drivers, upload_image,
                                      wait_for_status)
from tests.functional.fake_block_storage import (SERVERS, attachments, cloud_options,  # noqa: F401
                                      guest_volumes, project_of, settings_overrides,
                                      volumes, wait_until)

SMALL = "2"  # m1.small: 20 GB of root disk, which a volume-backed server does not claim


def bfv_body(bdms: list[dict[str, Any]], image: str | None = None, name: str = "bfv",
             **extra: Any) -> dict[str, Any]:
    server: dict[str, Any] = {"name": name, "flavorRef": SMALL, "networks": "auto",
                              "block_device_mapping_v2": bdms, **extra}
    if image is not None:
        server["imageRef"] = image
    return {"server": server}


def root_volume(volume_id: str, **extra: Any) -> dict[str, Any]:
    return {"source_type": "volume", "destination_type": "volume", "uuid": volume_id,
            "boot_index": 0, **extra}


async def claimed_disk(cloud: Cloud, server_id: str) -> int:
    def read(conn: sa.Connection) -> int:
        return int(conn.execute(sa.select(allocations.c.disk_gb).where(
            allocations.c.consumer_uuid == server_id)).scalar_one())
    assert cloud.db is not None
    return await cloud.db.read(read)


@pytest.fixture
async def project(demo: httpx.AsyncClient) -> str:
    return await project_of(demo)


async def test_boot_from_an_existing_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                            volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, size=5, bootable=True)
    created = await create_server(demo, bfv_body([root_volume(volume)]))
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["image"] == ""  # volume-backed
    assert volumes.status(volume) == "in-use"
    assert set(guest_volumes(cloud, server["id"])) == {"/dev/vda"}
    assert await claimed_disk(cloud, server["id"]) == 0  # the root is not on the host
    [view] = await attachments(demo, server["id"])
    assert (view["volumeId"], view["device"]) == (volume, "/dev/vda")
    # The root volume cannot be detached.
    resp = await demo.delete(f"{SERVERS}/{server['id']}/os-volume_attachments/{volume}")
    assert resp.status_code == 400, resp.text
    assert "root device" in resp.json()["badRequest"]["message"]
    assert volumes.status(volume) == "in-use"
    # Delete: detached, kept (delete_on_termination defaults to false).
    assert (await demo.delete(f"{SERVERS}/{server['id']}")).status_code == 204
    await wait_for_status(demo, server["id"], {"DELETED"})
    await wait_until(lambda: volumes.status(volume) == "available", "the volume available")
    assert not volumes.attachments


async def test_boot_from_image_to_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                         volumes: FakeVolumes) -> None:
    volumes.creating_polls = 2  # the build waits for the new volume
    image = await upload_image(demo)
    created = await create_server(demo, bfv_body([{
        "source_type": "image", "destination_type": "volume", "uuid": image, "boot_index": 0,
        "volume_size": 3, "delete_on_termination": True}]))
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["image"] == ""
    [made] = list(volumes.volumes.values())
    assert made["status"] == "in-use" and made["size"] == 3
    assert made["volume_image_metadata"] == {"image_id": image}
    assert made["name"] == f"{server['id']}-image-vol"
    assert await claimed_disk(cloud, server["id"]) == 0
    assert (await demo.delete(f"{SERVERS}/{server['id']}")).status_code == 204
    await wait_until(lambda: not volumes.volumes, "the volume deleted with the server")


async def test_image_server_with_blank_and_snapshot_volumes(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, project: str) -> None:
    image = await upload_image(demo)
    source = volumes.add_volume(project, size=4)
    snapshot = await volumes.create_snapshot_force(
        await _ctx(project), source, "snap", "")
    created = await create_server(demo, bfv_body([
        {"source_type": "blank", "destination_type": "volume", "volume_size": 1},
        {"source_type": "snapshot", "destination_type": "volume", "uuid": snapshot["id"],
         "delete_on_termination": True},
    ], image=image))
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["image"]["id"] == image
    assert set(guest_volumes(cloud, server["id"])) == {"/dev/vdb", "/dev/vdc"}
    made = {v["name"]: v for v in volumes.volumes.values() if v["id"] != source}
    assert made[f"{server['id']}-blank-vol"]["size"] == 1
    assert made[f"{server['id']}-snap-vol"]["size"] == 4  # the snapshot's size
    assert await claimed_disk(cloud, server["id"]) == 20  # the image root is on the host


async def test_legacy_block_device_mapping(cloud: Cloud, demo: httpx.AsyncClient,
                                           volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, bootable=True)
    created = await create_server(demo, {"server": {
        "name": "legacy", "flavorRef": SMALL, "networks": "auto",
        "block_device_mapping": [{"volume_id": volume, "device_name": "vda"}]}})
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["image"] == ""
    assert volumes.status(volume) == "in-use"


async def test_a_volume_that_fails_aborts_the_build(cloud: Cloud, demo: httpx.AsyncClient,
                                                    volumes: FakeVolumes,
                                                    project: str) -> None:
    kept = volumes.add_volume(project)
    volumes.create_fails = True
    image = await upload_image(demo)
    created = await create_server(demo, bfv_body([
        {"source_type": "image", "destination_type": "volume", "uuid": image,
         "boot_index": 0, "volume_size": 1},
        {"source_type": "volume", "destination_type": "volume", "uuid": kept}]))
    server = await wait_for_status(demo, created["id"], {"ERROR"})
    assert "Failure prepping block device" in server["fault"]["message"]
    assert "did not finish being created" in server["fault"]["message"]
    # No reschedule (another host would meet the same volume), everything released.
    assert volumes.status(kept) == "available"
    assert not volumes.attachments
    assert [op for op, _ in volumes.calls].count("create") == 1


async def test_a_failed_export_releases_the_reserved_volume(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, bootable=True)
    volumes.faults["attachment_update"].append(VolumeBackendError(reason="no export"))
    created = await create_server(demo, bfv_body([root_volume(volume)]))
    server = await wait_for_status(demo, created["id"], {"ERROR"})
    assert "no export" in server["fault"]["message"]
    await wait_until(lambda: volumes.status(volume) == "available", "the volume released")
    assert not volumes.attachments


async def _ctx(project: str) -> RequestContext:
    return RequestContext(user_id="u", project_id=project, roles=["member"])


def _bdm(kind: str, volume: str, image: str) -> list[dict[str, Any]]:
    """The mappings of one bad request, by name."""
    v = {"source_type": "volume", "destination_type": "volume", "uuid": volume}
    i = {"source_type": "image", "destination_type": "volume", "uuid": image}
    return {
        "unknown volume": [root_volume("00000000-0000-4000-8000-000000000000")],
        "volume in use": [root_volume("IN_USE")],
        "not bootable": [root_volume("PLAIN")],
        "another project's volume": [root_volume("FOREIGN")],
        "boot index gap": [{**v, "boot_index": 0}, {**i, "boot_index": 2, "volume_size": 1}],
        "image to volume without a size": [{**i, "boot_index": 0}],
        "volume smaller than the image": [{**i, "boot_index": 0, "volume_size": 1}],
        "blank volume without a size": [{**v, "boot_index": 0},
                                        {"source_type": "blank", "destination_type": "volume"}],
        "unknown source": [{**v, "boot_index": 0, "source_type": "disk"}],
        "unknown destination": [{**v, "boot_index": 0, "destination_type": "cloud"}],
        "unknown disk bus": [{**v, "boot_index": 0, "disk_bus": "floppy-ish"}],
        "negative size": [{**i, "boot_index": 0, "volume_size": -1}],
        "unknown key": [{**v, "boot_index": 0, "colour": "red"}],
        "tag before 2.42": [{**v, "boot_index": 0, "tag": "t"}],
        "volume to local": [{**v, "boot_index": 0, "destination_type": "local"}],
        "unknown snapshot": [{"source_type": "snapshot", "destination_type": "volume",
                              "uuid": "00000000-0000-4000-8000-000000000001",
                              "boot_index": 0}],
    }[kind]


@pytest.mark.parametrize("kind", [
    "unknown volume", "volume in use", "not bootable", "another project's volume",
    "boot index gap", "image to volume without a size", "volume smaller than the image",
    "blank volume without a size", "unknown source", "unknown destination",
    "unknown disk bus", "negative size", "unknown key", "tag before 2.42", "volume to local",
    "unknown snapshot"])
async def test_bad_mappings_are_400_and_change_nothing(cloud: Cloud, demo: httpx.AsyncClient,
                                                       volumes: FakeVolumes, project: str,
                                                       kind: str) -> None:
    volume = volumes.add_volume(project, bootable=True)
    names = {"IN_USE": volumes.add_volume(project, status="in-use", bootable=True),
             "PLAIN": volumes.add_volume(project),
             "FOREIGN": volumes.add_volume("someone-else", bootable=True)}
    image = await upload_image(demo, min_disk=2)
    bdms = [{k: names.get(v, v) if isinstance(v, str) else v for k, v in b.items()}
            for b in _bdm(kind, volume, image)]
    before = {v: volumes.status(v) for v in [volume, *names.values()]}
    resp = await demo.post(f"{SERVERS}", json=bfv_body(bdms))
    assert resp.status_code == 400, resp.text
    assert {v: volumes.status(v) for v in before} == before
    assert not volumes.attachments
    assert await db_count(cloud, instances) == 0
    assert await db_count(cloud, block_device_mappings) == 0


async def test_request_level_mapping_errors(cloud: Cloud, demo: httpx.AsyncClient,
                                            volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, bootable=True)
    both = bfv_body([root_volume(volume)])
    both["server"]["block_device_mapping"] = [{"volume_id": volume, "device_name": "vda"}]
    many = bfv_body([root_volume(volume)], min_count=2)
    for body in (both, many):
        resp = await demo.post(SERVERS, json=body)
        assert resp.status_code == 400, resp.text
    assert volumes.status(volume) == "available"
    assert await db_count(cloud, instances) == 0


@pytest.mark.parametrize("settings_overrides", [{"cross_az_attach": False}])
async def test_volume_in_another_zone_without_cross_az_attach(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, bootable=True, availability_zone="elsewhere")
    resp = await demo.post(SERVERS, json=bfv_body([root_volume(volume)],
                                                  availability_zone="nova"))
    assert resp.status_code == 400, resp.text
    assert "availability_zone" in resp.text
    assert volumes.status(volume) == "available"


async def test_tagged_volume_at_2_42(cloud: Cloud, demo: httpx.AsyncClient,
                                     volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, bootable=True)
    created = await create_server(demo, bfv_body([root_volume(volume, tag="root")]),
                                  version="2.42")
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    [view] = await attachments(demo, created["id"], "2.70")
    assert view["tag"] == "root"


async def test_snapshot_of_a_volume_backed_server(cloud: Cloud, demo: httpx.AsyncClient,
                                                  volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, size=2, bootable=True)
    created = await create_server(demo, bfv_body([root_volume(volume)]))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    resp = await demo.post(f"{SERVERS}/{created['id']}/action",
                           json={"createImage": {"name": "bfv-snap"}},
                           headers={"OpenStack-API-Version": "compute 2.45"})
    assert resp.status_code == 202, resp.text
    image = (await demo.get(f"/image/v2/images/{resp.json()['image_id']}")).json()
    assert (image["status"], image["size"]) == ("active", 0)
    [snapshot] = volumes.snapshots.values()
    assert snapshot["volume_id"] == volume
    [mapping] = json.loads(image["block_device_mapping"])
    assert mapping["source_type"] == "snapshot" and mapping["snapshot_id"] == snapshot["id"]
    assert (mapping["boot_index"], mapping["device_name"]) == (0, "/dev/vda")
    assert mapping["volume_id"] is None
    assert (image["bdm_v2"], image["root_device_name"]) == ("True", "/dev/vda")
    assert volumes.status(volume) == "in-use"  # the server goes on with it
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["OS-EXT-STS:task_state"] is None


async def test_a_delete_done_by_the_api_releases_the_volumes(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, project: str) -> None:
    """The host is down: the API deletes the server itself (Nova's local
    delete), and releases its volumes as the host would have."""
    kept = volumes.add_volume(project, bootable=True)
    image = await upload_image(demo)
    created = await create_server(demo, bfv_body([
        root_volume(kept),
        {"source_type": "image", "destination_type": "volume", "uuid": image,
         "volume_size": 1, "delete_on_termination": True}]))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    [made] = [v for v in volumes.volumes if v != kept]
    cloud.settings.service_down_time = 0  # every compute looks down from now on
    assert (await demo.delete(f"{SERVERS}/{created['id']}")).status_code == 204
    await wait_for_status(demo, created["id"], {"DELETED"})
    # Deleted here: the host never destroyed its guest.
    assert any(created["id"] in driver.instances for driver in fake_drivers(cloud).values())
    assert volumes.status(kept) == "available"
    assert made not in volumes.volumes
    assert not volumes.attachments


async def test_a_volume_backed_server_is_not_rebuilt_with_an_image(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, project: str) -> None:
    volume = volumes.add_volume(project, bootable=True)
    created = await create_server(demo, bfv_body([root_volume(volume)]))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    image = await upload_image(demo)
    resp = await demo.post(f"{SERVERS}/{created['id']}/action",
                           json={"rebuild": {"imageRef": image}})
    assert resp.status_code == 400, resp.text
    assert "volume-backed" in resp.json()["badRequest"]["message"]
    server = await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert server["OS-EXT-STS:task_state"] is None
