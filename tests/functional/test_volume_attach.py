"""``os-volume_attachments`` through the HTTP API, with the fake block storage
(tests/fakes_volume.py) and the fake driver: attach, list, show, update,
detach, the delete of a server with volumes, bad input (nothing changed) and
faults during an attach (the volume released)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import block_device_mappings
from cirrus.virt import exception as vexc
from cirrus.virt.fake import FaultRule
from tests.fakes_volume import FakeVolumes, VolumeBackendError
from tests.functional.actions import last_action
from tests.functional.servers import active_server, db_count, fake_drivers, wait_for_status
from tests.functional.fake_block_storage import (SERVERS, attachments, cloud_options,  # noqa: F401
                                      guest_volumes, project_of, settings_overrides,
                                      volumes, wait_for, wait_until)


@pytest.fixture
async def server(demo: httpx.AsyncClient) -> str:
    return await active_server(demo)


@pytest.fixture
async def volume(demo: httpx.AsyncClient, volumes: FakeVolumes) -> str:
    return volumes.add_volume(await project_of(demo), size=2)


async def attach(client: httpx.AsyncClient, server_id: str, body: dict[str, Any],
                 version: str = "2.1") -> httpx.Response:
    return await client.post(f"{SERVERS}/{server_id}/os-volume_attachments",
                             json={"volumeAttachment": body},
                             headers={"OpenStack-API-Version": f"compute {version}"})


async def attached(client: httpx.AsyncClient, volumes: FakeVolumes, server_id: str,
                   volume_id: str, version: str = "2.1", **extra: Any) -> dict[str, Any]:
    resp = await attach(client, server_id, {"volumeId": volume_id, **extra}, version)
    assert resp.status_code == 200, resp.text
    await wait_until(lambda: volumes.status(volume_id) == "in-use", "the volume in use")
    return dict(resp.json()["volumeAttachment"])


async def test_attach_list_show_detach(cloud: Cloud, demo: httpx.AsyncClient,
                                       volumes: FakeVolumes, server: str, volume: str) -> None:
    view = await attached(demo, volumes, server, volume)
    assert view == {"id": volume, "volumeId": volume, "serverId": server, "device": "/dev/vdb"}
    assert guest_volumes(cloud, server)["/dev/vdb"]["driver_volume_type"] == "local"
    assert await attachments(demo, server) == [view]
    resp = await demo.get(f"{SERVERS}/{server}/os-volume_attachments/{volume}")
    assert resp.status_code == 200 and resp.json()["volumeAttachment"] == view
    action = await last_action(demo, server)
    assert action["action"] == "attach_volume"
    assert [(e["event"], e["result"]) for e in action["events"]] == \
        [("compute_attach_volume", "Success")]

    resp = await demo.delete(f"{SERVERS}/{server}/os-volume_attachments/{volume}")
    assert resp.status_code == 202, resp.text
    await wait_until(lambda: volumes.status(volume) == "available", "the volume available")
    await wait_until(lambda: not guest_volumes(cloud, server), "the guest without it")
    assert await attachments(demo, server) == []
    assert not volumes.attachments
    assert (await last_action(demo, server))["action"] == "detach_volume"


async def test_second_volume_takes_the_next_device(demo: httpx.AsyncClient,
                                                   volumes: FakeVolumes, server: str,
                                                   volume: str) -> None:
    other = volumes.add_volume(await project_of(demo))
    await attached(demo, volumes, server, volume)
    second = await attached(demo, volumes, server, other)
    assert second["device"] == "/dev/vdc"
    assert [a["volumeId"] for a in await attachments(demo, server)] == [volume, other]


@pytest.mark.parametrize("version, expected", [
    ("2.69", {"id", "volumeId", "serverId", "device"}),
    ("2.70", {"id", "volumeId", "serverId", "device", "tag"}),
    ("2.79", {"id", "volumeId", "serverId", "device", "tag", "delete_on_termination"}),
    ("2.89", {"volumeId", "serverId", "device", "tag", "delete_on_termination",
              "attachment_id", "bdm_uuid"}),
])
async def test_view_by_microversion(demo: httpx.AsyncClient, volumes: FakeVolumes, server: str,
                                    volume: str, version: str, expected: set[str]) -> None:
    await attached(demo, volumes, server, volume, version="2.79", tag="data",
                   delete_on_termination=True)
    [view] = await attachments(demo, server, version)
    assert set(view) == expected
    if "tag" in expected:
        assert view["tag"] == "data"
    if "delete_on_termination" in expected:
        assert view["delete_on_termination"] is True
    if "attachment_id" in expected:
        assert view["attachment_id"] in volumes.attachments


async def test_update_delete_on_termination_at_2_85(demo: httpx.AsyncClient,
                                                    volumes: FakeVolumes, server: str,
                                                    volume: str) -> None:
    await attached(demo, volumes, server, volume)
    url = f"{SERVERS}/{server}/os-volume_attachments/{volume}"
    headers = {"OpenStack-API-Version": "compute 2.85"}
    resp = await demo.put(url, headers=headers, json={"volumeAttachment": {
        "volumeId": volume, "delete_on_termination": True}})
    assert resp.status_code == 202, resp.text
    [view] = await attachments(demo, server, "2.85")
    assert view["delete_on_termination"] is True
    resp = await demo.put(url, headers=headers, json={"volumeAttachment": {
        "volumeId": volume, "device": "/dev/vdz"}})
    assert resp.status_code == 400, resp.text  # only delete_on_termination may change
    # Another volume id is a swap: an admin's call, refused to a member.
    other = volumes.add_volume(await project_of(demo))
    resp = await demo.put(url, headers=headers, json={"volumeAttachment": {"volumeId": other}})
    assert resp.status_code == 403, resp.text


async def test_delete_detaches_and_deletes_per_delete_on_termination(
        demo: httpx.AsyncClient, volumes: FakeVolumes, server: str) -> None:
    project = await project_of(demo)
    kept, dropped = volumes.add_volume(project), volumes.add_volume(project)
    await attached(demo, volumes, server, kept)
    await attached(demo, volumes, server, dropped, version="2.79", delete_on_termination=True)
    assert (await demo.delete(f"{SERVERS}/{server}")).status_code == 204
    await wait_for_status(demo, server, {"DELETED"})
    await wait_until(lambda: dropped not in volumes.volumes, "the volume deleted")
    assert volumes.status(kept) == "available"
    assert not volumes.attachments


@pytest.mark.parametrize("body, version, code", [
    ({}, "2.1", 400),  # volumeId is required
    ({"volumeId": "not-a-uuid"}, "2.1", 400),
    ({"volumeId": "VOLUME", "device": "sdb"}, "2.1", 400),  # not a device path
    ({"volumeId": "VOLUME", "tag": "t"}, "2.48", 400),  # tag from 2.49
    ({"volumeId": "VOLUME", "delete_on_termination": True}, "2.78", 400),  # from 2.79
    ({"volumeId": "VOLUME", "delete_on_termination": "maybe"}, "2.79", 400),
    ({"volumeId": "VOLUME", "extra": 1}, "2.1", 400),
    ({"volumeId": "00000000-0000-4000-8000-000000000000"}, "2.1", 404),  # unknown volume
    ({"volumeId": "IN_USE"}, "2.1", 400),  # another server's
    ({"volumeId": "OTHER_PROJECT"}, "2.1", 404),  # another project's: not found
    ({"volumeId": "VOLUME", "device": "/dev/vda"}, "2.1", 409),  # the root's device
])
async def test_bad_attach_changes_nothing(cloud: Cloud, demo: httpx.AsyncClient,
                                          volumes: FakeVolumes, server: str, volume: str,
                                          body: dict[str, Any], version: str,
                                          code: int) -> None:
    project = await project_of(demo)
    names = {"VOLUME": volume, "IN_USE": volumes.add_volume(project, status="in-use"),
             "OTHER_PROJECT": volumes.add_volume("someone-else")}
    body = {k: names.get(v, v) if isinstance(v, str) else v for k, v in body.items()}
    before = {v: volumes.status(v) for v in names.values()}
    resp = await attach(demo, server, body, version)
    assert resp.status_code == code, resp.text
    assert {v: volumes.status(v) for v in names.values()} == before
    assert not volumes.attachments
    assert await attachments(demo, server) == []
    assert await db_count(cloud, block_device_mappings,
                          block_device_mappings.c.instance_uuid == server) == 1  # the root


async def test_attaching_twice_is_refused(demo: httpx.AsyncClient, volumes: FakeVolumes,
                                          server: str, volume: str) -> None:
    await attached(demo, volumes, server, volume)
    resp = await attach(demo, server, {"volumeId": volume})
    assert resp.status_code == 400, resp.text
    assert len(await attachments(demo, server)) == 1


async def test_another_projects_server_is_not_found(tenants: Any, volumes: FakeVolumes,
                                                    demo: httpx.AsyncClient, server: str,
                                                    volume: str) -> None:
    other = tenants.clients["other"]  # a member of project "other"
    for resp in (await other.get(f"{SERVERS}/{server}/os-volume_attachments"),
                 await attach(other, server, {"volumeId": volume})):
        assert resp.status_code == 404, resp.text
    assert volumes.status(volume) == "available"


async def test_detach_unknown_volume_is_404(demo: httpx.AsyncClient, server: str,
                                            volume: str) -> None:
    resp = await demo.delete(f"{SERVERS}/{server}/os-volume_attachments/{volume}")
    assert resp.status_code == 404, resp.text
    assert "is not attached to volume" in resp.json()["itemNotFound"]["message"]


@pytest.mark.parametrize("op, fault", [
    ("driver", FaultRule(error=lambda i: vexc.VolumeAttachFailed(volume_id="v",
                                                                reason="injected"))),
    ("attachment_update", VolumeBackendError(reason="export failed")),
    ("attachment_complete", VolumeBackendError(reason="could not mark it in use")),
])
async def test_fault_during_attach_releases_the_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                                       volumes: FakeVolumes, server: str,
                                                       volume: str, op: str,
                                                       fault: Any) -> None:
    if op == "driver":
        for driver in fake_drivers(cloud).values():
            driver.faults["attach_volume"].append(fault)
    else:
        volumes.faults[op].append(fault)
    resp = await attach(demo, server, {"volumeId": volume})
    assert resp.status_code == 200, resp.text  # the attach itself is cast to the host
    await wait_until(lambda: volumes.status(volume) == "available", "the volume released")
    assert volumes.status(volume) == "available"
    assert not volumes.attachments
    assert await attachments(demo, server) == []
    assert not guest_volumes(cloud, server)
    action = await last_action(demo, server)
    [event] = action["events"]
    assert (event["event"], event["result"]) == ("compute_attach_volume", "Error")
    server_view = await wait_for_status(demo, server, {"ACTIVE"})
    assert server_view["OS-EXT-STS:task_state"] is None


async def test_fault_during_detach_keeps_the_volume_attached(
        cloud: Cloud, demo: httpx.AsyncClient, volumes: FakeVolumes, server: str,
        volume: str) -> None:
    await attached(demo, volumes, server, volume)
    for driver in fake_drivers(cloud).values():
        driver.faults["detach_volume"].append(FaultRule(
            error=lambda i: vexc.DeviceDetachFailed(device="/dev/vdb", reason="injected")))
    resp = await demo.delete(f"{SERVERS}/{server}/os-volume_attachments/{volume}")
    assert resp.status_code == 202, resp.text

    async def detach_failed() -> bool:
        action = await last_action(demo, server)
        return action["action"] == "detach_volume" and \
            [e["result"] for e in action["events"]] == ["Error"]
    await wait_for(detach_failed, "the detach to fail")
    assert volumes.status(volume) == "in-use"
    assert [a["volumeId"] for a in await attachments(demo, server)] == [volume]


async def test_rebuild_keeps_the_attached_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                                 volumes: FakeVolumes, server: str,
                                                 volume: str) -> None:
    await attached(demo, volumes, server, volume)
    image = (await demo.get(f"{SERVERS}/{server}")).json()["server"]["image"]["id"]
    resp = await demo.post(f"{SERVERS}/{server}/action", json={"rebuild": {"imageRef": image}})
    assert resp.status_code == 202, resp.text
    await wait_for(lambda: _rebuilt(demo, server), "the rebuild")
    assert set(guest_volumes(cloud, server)) == {"/dev/vdb"}  # the new guest has it
    assert volumes.status(volume) == "in-use"
    assert [a["volumeId"] for a in await attachments(demo, server)] == [volume]


async def _rebuilt(client: httpx.AsyncClient, server_id: str) -> bool:
    action = await last_action(client, server_id)
    return action["action"] == "rebuild" and \
        [e["result"] for e in action["events"]] == ["Success"]


async def test_unshelve_exports_the_volume_to_the_new_host(cloud: Cloud, demo: httpx.AsyncClient,
                                                           volumes: FakeVolumes, server: str,
                                                           volume: str) -> None:
    await attached(demo, volumes, server, volume)
    assert (await demo.post(f"{SERVERS}/{server}/action", json={"shelve": None})).status_code == 202
    await wait_for_status(demo, server, {"SHELVED_OFFLOADED"})
    updates = len([c for c in volumes.calls if c[0] == "attachment_update"])
    assert (await demo.post(f"{SERVERS}/{server}/action",
                            json={"unshelve": None})).status_code == 202
    active = await wait_for_status(demo, server, {"ACTIVE"})
    host = active.get("OS-EXT-SRV-ATTR:host") or \
        next(h for h, d in fake_drivers(cloud).items() if server in d.instances)
    assert set(guest_volumes(cloud, server)) == {"/dev/vdb"}
    assert len([c for c in volumes.calls if c[0] == "attachment_update"]) == updates + 1
    [ref] = volumes.volumes[volume]["attachments"]
    assert ref["host_name"] == host  # exported to where the server runs now
    assert volumes.status(volume) == "in-use"


async def swap(admin: httpx.AsyncClient, server: str, old: str, new: str) -> None:
    resp = await admin.put(f"{SERVERS}/{server}/os-volume_attachments/{old}",
                           json={"volumeAttachment": {"volumeId": new}})
    assert resp.status_code == 202, resp.text


async def test_an_admin_swaps_an_attached_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                                 admin: httpx.AsyncClient,
                                                 volumes: FakeVolumes, server: str,
                                                 volume: str) -> None:
    new = volumes.add_volume(await project_of(demo), size=2)
    await attached(demo, volumes, server, volume)
    await swap(admin, server, volume, new)
    await wait_until(lambda: volumes.status(volume) == "available", "the old volume released")
    assert volumes.status(new) == "in-use"
    [view] = await attachments(demo, server)
    assert (view["volumeId"], view["device"]) == (new, "/dev/vdb")
    assert new in guest_volumes(cloud, server)["/dev/vdb"]["data"]["device_path"]
    action = await last_action(admin, server)
    assert action["action"] == "swap_volume"
    assert [(e["event"], e["result"]) for e in action["events"]] == \
        [("compute_swap_volume", "Success")]


async def test_a_failed_swap_keeps_the_old_volume(cloud: Cloud, demo: httpx.AsyncClient,
                                                  admin: httpx.AsyncClient,
                                                  volumes: FakeVolumes, server: str,
                                                  volume: str) -> None:
    new = volumes.add_volume(await project_of(demo))
    await attached(demo, volumes, server, volume)
    for driver in fake_drivers(cloud).values():
        driver.faults["swap_volume"].append(FaultRule(
            error=lambda i: vexc.VolumeAttachFailed(volume_id=new, reason="copy failed")))
    await swap(admin, server, volume, new)
    await wait_until(lambda: volumes.status(new) == "available", "the new volume released")
    assert volumes.status(volume) == "in-use"
    assert [a["volumeId"] for a in await attachments(demo, server)] == [volume]
    assert volume in guest_volumes(cloud, server)["/dev/vdb"]["data"]["device_path"]


@pytest.mark.parametrize("new_status, code", [("in-use", 400), (None, 404)])
async def test_swap_to_a_volume_that_cannot_take_it(demo: httpx.AsyncClient,
                                                    admin: httpx.AsyncClient,
                                                    volumes: FakeVolumes, server: str,
                                                    volume: str, new_status: str | None,
                                                    code: int) -> None:
    new = volumes.add_volume(await project_of(demo), status=new_status) if new_status \
        else "00000000-0000-4000-8000-000000000009"
    await attached(demo, volumes, server, volume)
    resp = await admin.put(f"{SERVERS}/{server}/os-volume_attachments/{volume}",
                           json={"volumeAttachment": {"volumeId": new}})
    assert resp.status_code == code, resp.text
    assert volumes.status(volume) == "in-use"
    assert [a["volumeId"] for a in await attachments(demo, server)] == [volume]
