"""Server actions that touch images, through the HTTP API with the fake driver:
rebuild, createImage, createBackup, shelve, shelveOffload, unshelve."""
from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations
from cirrus.context import admin_context
from cirrus.network.models import ports
from cirrus.virt.fake import FaultRule, fail_for_instance, hold
from tests.tenants import make_tenants
from tests.functional.servers import (create_server, db_count, fake_drivers, server_body,
                                      upload_image, wait_for_status)

SERVERS = "/compute/v2.1/servers"
IMAGES = "/image/v2/images"


def v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def act(client: httpx.AsyncClient, server_id: str, body: Any,
              version: str = "2.1") -> httpx.Response:
    return await client.post(f"{SERVERS}/{server_id}/action", json=body, headers=v(version))


async def boot(client: httpx.AsyncClient, image: str, name: str = "vm", **extra: Any) -> str:
    created = await create_server(client, server_body(image, name, **extra))
    await wait_for_status(client, created["id"], {"ACTIVE"})
    return created["id"]


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo, name="base", min_ram=0, os_distro="cirros")


@pytest.fixture
async def active(demo: httpx.AsyncClient, image: str) -> str:
    return await boot(demo, image)


async def wait_idle(client: httpx.AsyncClient, server_id: str, timeout: float = 20.0) -> dict:
    """The server once no task runs on it."""
    deadline = time.monotonic() + timeout
    while True:
        server = (await client.get(f"{SERVERS}/{server_id}")).json()["server"]
        if server["OS-EXT-STS:task_state"] is None:
            return server
        assert time.monotonic() < deadline, server["OS-EXT-STS:task_state"]
        await asyncio.sleep(0.02)


async def wait_image(client: httpx.AsyncClient, image_id: str, status: str,
                     timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        resp = await client.get(f"{IMAGES}/{image_id}")
        if status == "gone" and resp.status_code == 404:
            return {}
        if resp.status_code == 200 and resp.json()["status"] == status:
            return resp.json()
        assert time.monotonic() < deadline, resp.text
        await asyncio.sleep(0.02)


async def events_of(client: httpx.AsyncClient, server_id: str, action: str) -> dict:
    actions = (await client.get(f"{SERVERS}/{server_id}/os-instance-actions")).json()
    request_id = next(a["request_id"] for a in actions["instanceActions"] if a["action"] == action)
    resp = await client.get(f"{SERVERS}/{server_id}/os-instance-actions/{request_id}",
                            headers=v("2.51"))
    return resp.json()["instanceAction"]


async def wait_actions_done(client: httpx.AsyncClient, server_id: str, action: str,
                            timeout: float = 20.0) -> None:
    """Until every ``action`` of the server has its compute event finished."""
    url = f"{SERVERS}/{server_id}/os-instance-actions"
    deadline = time.monotonic() + timeout
    while True:
        listed = (await client.get(url)).json()["instanceActions"]
        shown = [(await client.get(f"{url}/{a['request_id']}")).json()["instanceAction"]
                 for a in listed if a["action"] == action]
        if all(any(e["event"].startswith("compute_") and e["finish_time"] for e in a["events"])
               for a in shown):
            return
        assert time.monotonic() < deadline, shown
        await asyncio.sleep(0.02)


def notifications(cloud: Cloud, server_id: str) -> list[str]:
    """The event types the compute hosts sent about ``server_id``, in order per host."""
    return [n["event_type"] for svc in cloud.services if svc.binary == "cirrus-compute"
            for n in svc.endpoint.notifier.sent if n["payload"].get("instance_id") == server_id]


async def wait_notified(cloud: Cloud, server_id: str, wanted: set[str],
                        timeout: float = 20.0) -> None:
    """Until the compute hosts sent each of ``wanted`` about the server."""
    deadline = time.monotonic() + timeout
    while not wanted <= set(notifications(cloud, server_id)):
        assert time.monotonic() < deadline, notifications(cloud, server_id)
        await asyncio.sleep(0.02)


def driver_of(cloud: Cloud, server: dict) -> Any:
    return fake_drivers(cloud)[server["OS-EXT-SRV-ATTR:host"]]


# -- rebuild ------------------------------------------------------------------------------
async def test_rebuild_new_image_keeps_ports_and_addresses(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    before = (await admin.get(f"{SERVERS}/{active}")).json()["server"]
    other = await upload_image(demo, name="other")
    resp = await act(demo, active, {"rebuild": {"imageRef": other, "name": "renamed",
                                                "metadata": {"k": "v"}}})
    assert resp.status_code == 202, resp.text
    body = resp.json()["server"]
    assert body["status"] == "REBUILD" and body["name"] == "renamed"
    assert body["image"]["id"] == other and body["metadata"] == {"k": "v"}
    assert body["adminPass"] and resp.headers["Location"].endswith(f"/servers/{active}")
    assert "OS-EXT-STS:task_state" not in body  # the short view below 2.75
    after = await wait_for_status(admin, active, {"ACTIVE"})
    assert after["addresses"] == before["addresses"]
    assert after["OS-EXT-STS:task_state"] is None and after["OS-EXT-STS:power_state"] == 1
    assert driver_of(cloud, after).instances[active].image_ref == other
    await wait_actions_done(demo, active, "rebuild")
    action = await events_of(demo, active, "rebuild")
    assert [e["event"] for e in action["events"]] == ["compute_rebuild_instance"]
    assert action["events"][0]["result"] == "Success"
    await wait_notified(cloud, active, {"compute.instance.rebuild.start",
                                        "compute.instance.rebuild.end"})


async def test_rebuild_of_a_stopped_server_stays_stopped(demo: httpx.AsyncClient,
                                                         active: str, image: str) -> None:
    await act(demo, active, {"os-stop": None})
    await wait_for_status(demo, active, {"SHUTOFF"})
    assert (await act(demo, active, {"rebuild": {"imageRef": image}})).status_code == 202
    server = await wait_idle(demo, active)
    assert server["status"] == "SHUTOFF" and server["OS-EXT-STS:power_state"] == 4


@pytest.mark.parametrize("version,present,absent", [
    ("2.1", set(), {"description", "key_name", "user_data", "locked"}),
    ("2.19", {"description", "locked"}, {"key_name", "user_data"}),
    ("2.54", {"key_name"}, {"user_data", "trusted_image_certificates"}),
    ("2.57", {"user_data"}, {"trusted_image_certificates", "server_groups"}),
    ("2.63", {"trusted_image_certificates"}, {"server_groups", "OS-EXT-STS:vm_state"}),
    ("2.71", {"server_groups"}, {"OS-EXT-STS:vm_state"}),
    ("2.75", {"OS-EXT-STS:vm_state", "OS-EXT-AZ:availability_zone", "security_groups"}, set()),
    ("2.90", {"OS-EXT-SRV-ATTR:hostname"}, set()),
])
async def test_rebuild_reply_per_microversion(demo: httpx.AsyncClient, active: str, image: str,
                                              version: str, present: set, absent: set) -> None:
    resp = await act(demo, active, {"rebuild": {"imageRef": image}}, version)
    assert resp.status_code == 202, resp.text
    server = resp.json()["server"]
    assert present <= set(server) and not absent & set(server), sorted(server)
    await wait_idle(demo, active)


async def test_rebuild_fields_of_later_microversions(demo: httpx.AsyncClient, active: str,
                                                     image: str) -> None:
    fields = {"imageRef": image, "description": "d", "key_name": None, "user_data": "aGk=",
              "hostname": "new-host"}
    resp = await act(demo, active, {"rebuild": fields}, "2.90")
    assert resp.status_code == 202, resp.text
    server = resp.json()["server"]
    assert server["description"] == "d" and server["user_data"] == "aGk="
    assert server["OS-EXT-SRV-ATTR:hostname"] == "new-host" and server["key_name"] is None
    await wait_idle(demo, active)
    # Each of them is refused below its microversion.
    for key, since in (("description", "2.19"), ("key_name", "2.54"), ("user_data", "2.57"),
                       ("hostname", "2.90"), ("trusted_image_certificates", "2.63")):
        major, minor = since.split(".")
        below = f"{major}.{int(minor) - 1}"
        resp = await act(demo, active, {"rebuild": {"imageRef": image, key: fields.get(key)}},
                         below)
        assert resp.status_code == 400 and key in resp.text, (key, resp.text)


async def test_rebuild_personality_only_below_257(demo: httpx.AsyncClient, active: str,
                                                  image: str) -> None:
    files = [{"path": "/etc/motd", "contents": "aGk="}]
    resp = await act(demo, active, {"rebuild": {"imageRef": image, "personality": files}}, "2.57")
    assert resp.status_code == 400
    resp = await act(demo, active, {"rebuild": {"imageRef": image, "personality": files}}, "2.56")
    assert resp.status_code == 202
    await wait_idle(demo, active)


@pytest.mark.parametrize("body", [
    {"rebuild": {}}, {"rebuild": None}, {"rebuild": {"imageRef": "x", "color": "red"}},
    {"rebuild": {"imageRef": 5.5}}, {"rebuild": {"imageRef": "x", "metadata": {"k": 1}}},
    {"rebuild": {"imageRef": "x", "accessIPv4": "::1"}},
    {"rebuild": {"imageRef": "x", "preserve_ephemeral": "maybe"}},
])
async def test_rebuild_bad_bodies_are_400(demo: httpx.AsyncClient, active: str,
                                          body: dict) -> None:
    assert (await act(demo, active, body)).status_code == 400


async def test_rebuild_image_checks_as_at_boot(demo: httpx.AsyncClient, active: str) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    assert (await act(demo, active, {"rebuild": {"imageRef": missing}})).status_code == 400
    queued = (await demo.post(IMAGES, json={"name": "q", "disk_format": "raw",
                                            "container_format": "bare"})).json()["id"]
    assert (await act(demo, active, {"rebuild": {"imageRef": queued}})).status_code == 400
    big = await upload_image(demo, name="big", min_ram=1 << 20)
    assert (await act(demo, active, {"rebuild": {"imageRef": big}})).status_code == 400
    resp = await act(demo, active, {"rebuild": {"imageRef": big, "key_name": "nope"}}, "2.54")
    assert resp.status_code == 400
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "ACTIVE"  # nothing refused changed the server


async def test_rebuild_failure_is_error_with_fault(cloud: Cloud, demo: httpx.AsyncClient,
                                                   admin: httpx.AsyncClient, image: str) -> None:
    server_id = await boot(demo, image, "doomed")
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(fail_for_instance("doomed"))
    assert (await act(demo, server_id, {"rebuild": {"imageRef": image}})).status_code == 202
    server = await wait_for_status(admin, server_id, {"ERROR"})
    assert server["OS-EXT-STS:task_state"] is None and "injected fault" in server["fault"]["message"]
    action = await events_of(demo, server_id, "rebuild")
    assert action["events"][0]["result"] == "Error"


async def test_rebuild_from_a_wrong_state_is_409(demo: httpx.AsyncClient, active: str,
                                                 image: str) -> None:
    await act(demo, active, {"shelve": None})
    await wait_for_status(demo, active, {"SHELVED_OFFLOADED"})
    resp = await act(demo, active, {"rebuild": {"imageRef": image}})
    assert resp.status_code == 409


async def test_rebuild_without_password_reply(cloud: Cloud, demo: httpx.AsyncClient,
                                              active: str, image: str) -> None:
    cloud.settings.enable_instance_password = False
    resp = await act(demo, active, {"rebuild": {"imageRef": image, "adminPass": "s3cret"}})
    assert resp.status_code == 202 and "adminPass" not in resp.json()["server"]
    await wait_idle(demo, active)


# -- createImage ----------------------------------------------------------------------------
async def test_create_image_snapshot_boots(cloud: Cloud, demo: httpx.AsyncClient,
                                           active: str, image: str) -> None:
    resp = await act(demo, active, {"createImage": {"name": "snap", "metadata": {"tier": "web"}}},
                     "2.45")
    assert resp.status_code == 202 and "Location" not in resp.headers
    snap_id = resp.json()["image_id"]
    snap = await wait_image(demo, snap_id, "active")
    assert snap["name"] == "snap" and snap["visibility"] == "private"
    assert snap["instance_uuid"] == active and snap["image_type"] == "snapshot"
    assert snap["base_image_ref"] == image and snap["tier"] == "web"
    assert snap["os_distro"] == "cirros"  # the base image's properties carried over
    assert snap["disk_format"] == "raw" and snap["min_disk"] >= 1
    server = await wait_idle(demo, active)
    assert server["status"] == "ACTIVE"
    action = await events_of(demo, active, "createImage")
    assert [e["event"] for e in action["events"]] == ["compute_snapshot_instance"]
    await wait_notified(cloud, active, {"compute.instance.snapshot.start",
                                        "compute.instance.snapshot.end"})
    # The snapshot boots.
    booted = await boot(demo, snap_id, "from-snap")
    shown = (await demo.get(f"{SERVERS}/{booted}")).json()["server"]
    assert shown["image"]["id"] == snap_id


async def test_create_image_location_below_245(demo: httpx.AsyncClient, active: str) -> None:
    resp = await act(demo, active, {"createImage": {"name": "snap"}}, "2.44")
    assert resp.status_code == 202 and not resp.content
    image_id = resp.headers["Location"].rsplit("/", 1)[1]
    assert "/image/v2/images/" in resp.headers["Location"]
    await wait_image(demo, image_id, "active")
    await wait_idle(demo, active)


async def test_snapshot_task_states_in_order(cloud: Cloud, demo: httpx.AsyncClient,
                                             admin: httpx.AsyncClient, active: str) -> None:
    server = (await admin.get(f"{SERVERS}/{active}")).json()["server"]
    release = asyncio.Event()
    driver_of(cloud, server).faults["snapshot"].append(hold(release))
    resp = await act(demo, active, {"createImage": {"name": "snap"}}, "2.45")
    assert resp.status_code == 202
    held = await wait_for_status(demo, active, {"ACTIVE"})
    assert held["OS-EXT-STS:task_state"] in ("image_snapshot_pending", "image_snapshot")
    # Another image action waits its turn: 409 while one runs.
    assert (await act(demo, active, {"createImage": {"name": "two"}})).status_code == 409
    release.set()
    assert (await wait_idle(demo, active))["status"] == "ACTIVE"
    await wait_image(demo, resp.json()["image_id"], "active")


async def test_snapshot_failure_deletes_the_image(cloud: Cloud, demo: httpx.AsyncClient,
                                                  image: str) -> None:
    server_id = await boot(demo, image, "nosnap")
    for driver in fake_drivers(cloud).values():
        driver.faults["snapshot"].append(FaultRule(
            error=lambda i: RuntimeError("disk unreadable"), instance_name="nosnap"))
    resp = await act(demo, server_id, {"createImage": {"name": "snap"}}, "2.45")
    await wait_image(demo, resp.json()["image_id"], "gone")
    server = await wait_idle(demo, server_id)
    assert server["status"] == "ACTIVE"  # a failed snapshot leaves the server as it was
    action = await events_of(demo, server_id, "createImage")
    assert action["events"][0]["result"] == "Error"


async def test_create_image_metadata_limits(demo: httpx.AsyncClient, active: str) -> None:
    many = {f"k{i}": "v" for i in range(129)}
    resp = await act(demo, active, {"createImage": {"name": "s", "metadata": many}}, "2.38")
    assert resp.status_code == 403  # Nova's metadata quota, checked up to 2.38
    resp = await act(demo, active, {"createImage": {"name": "s", "metadata": many}}, "2.39")
    assert resp.status_code == 403  # the image service's property quota, as Nova maps it
    assert (await wait_idle(demo, active))["status"] == "ACTIVE"


@pytest.mark.parametrize("body", [
    {"createImage": {}}, {"createImage": {"name": ""}}, {"createImage": {"name": 5}},
    {"createImage": {"name": "x", "extra": 1}}, {"createImage": {"name": "x", "metadata": []}},
    {"createImage": None},
])
async def test_create_image_bad_bodies_are_400(demo: httpx.AsyncClient, active: str,
                                               body: dict) -> None:
    assert (await act(demo, active, body)).status_code == 400


# -- createBackup ---------------------------------------------------------------------------
async def backup(client: httpx.AsyncClient, server_id: str, rotation: int,
                 backup_type: str = "daily") -> str:
    resp = await act(client, server_id, {"createBackup": {
        "name": f"b{rotation}", "backup_type": backup_type, "rotation": rotation}}, "2.45")
    assert resp.status_code == 202, resp.text
    await wait_actions_done(client, server_id, "createBackup")  # rotation comes after the task
    return resp.json()["image_id"]



async def backups_of(client: httpx.AsyncClient, server_id: str) -> list[dict]:
    images = (await client.get(IMAGES)).json()["images"]
    return [i for i in images if i.get("instance_uuid") == server_id
            and i.get("image_type") == "backup"]


async def test_backup_rotation_keeps_the_newest(demo: httpx.AsyncClient, active: str) -> None:
    first = await backup(demo, active, 2)
    second = await backup(demo, active, 2)
    weekly = await backup(demo, active, 2, "weekly")
    third = await backup(demo, active, 2)
    kept = {i["id"]: i for i in await backups_of(demo, active)}
    assert set(kept) == {second, third, weekly} and first not in kept
    assert kept[third]["backup_type"] == "daily" and kept[third]["status"] == "active"
    await backup(demo, active, 0)  # rotation 0: none of the daily ones stay
    assert {i["id"] for i in await backups_of(demo, active)} == {weekly}
    action = await events_of(demo, active, "createBackup")
    assert [e["event"] for e in action["events"]] == ["compute_backup_instance"]


async def test_backups_are_listed_by_their_properties(demo: httpx.AsyncClient,
                                                      active: str) -> None:
    """The image API filters on properties, as Tempest lists a server's
    backups (test_create_backup): only this server's daily ones, oldest first."""
    first = await backup(demo, active, 2)
    await backup(demo, active, 2, "weekly")
    second = await backup(demo, active, 2)
    params = {"status": "active", "sort_key": "created_at", "sort_dir": "asc",
              "image_type": "backup", "backup_type": "daily", "instance_uuid": active}
    listed = (await demo.get(IMAGES, params=params)).json()["images"]
    assert [i["id"] for i in listed] == [first, second]
    params["instance_uuid"] = "no-such-server"
    assert (await demo.get(IMAGES, params=params)).json()["images"] == []


async def test_backup_location_below_245(demo: httpx.AsyncClient, active: str) -> None:
    resp = await act(demo, active, {"createBackup": {"name": "b", "backup_type": "daily",
                                                     "rotation": "1"}})
    assert resp.status_code == 202 and "/compute/v2.1/images/" in resp.headers["Location"]
    await wait_idle(demo, active)


@pytest.mark.parametrize("body", [
    {"createBackup": {"name": "b", "backup_type": "daily"}},
    {"createBackup": {"name": "b", "rotation": 1}},
    {"createBackup": {"name": "b", "backup_type": "daily", "rotation": -1}},
    {"createBackup": {"name": "b", "backup_type": "daily", "rotation": "x"}},
    {"createBackup": {"name": "b", "backup_type": 7, "rotation": 1}},
    {"createBackup": {"name": "b", "backup_type": "d", "rotation": 1, "more": 1}},
])
async def test_backup_bad_bodies_are_400(demo: httpx.AsyncClient, active: str,
                                         body: dict) -> None:
    assert (await act(demo, active, body)).status_code == 400


# -- shelve / offload / unshelve --------------------------------------------------------------
async def test_shelve_offloads_at_once_and_unshelve_reschedules(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    before = (await admin.get(f"{SERVERS}/{active}")).json()["server"]
    host = before["OS-EXT-SRV-ATTR:host"]
    assert (await act(demo, active, {"shelve": None})).status_code == 202
    shelved = await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    assert shelved["OS-EXT-SRV-ATTR:host"] is None and shelved["OS-EXT-STS:task_state"] is None
    assert shelved["addresses"] == before["addresses"]  # ports kept
    assert active not in fake_drivers(cloud)[host].instances
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == active) == 0
    assert await db_count(cloud, ports, ports.c.device_id == active,
                          ports.c.binding_host_id != "") == 0
    snaps = [i for i in (await demo.get(IMAGES)).json()["images"] if i["name"] == "vm-shelved"]
    assert len(snaps) == 1 and snaps[0]["status"] == "active"
    assert (await act(demo, active, {"unshelve": None})).status_code == 202
    server = await wait_for_status(admin, active, {"ACTIVE"})
    new_host = server["OS-EXT-SRV-ATTR:host"]
    assert new_host and server["OS-EXT-STS:task_state"] is None
    assert server["addresses"] == before["addresses"]
    assert fake_drivers(cloud)[new_host].instances[active].image_ref == snaps[0]["id"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == active) == 1
    assert await db_count(cloud, ports, ports.c.device_id == active,
                          ports.c.binding_host_id == new_host) >= 1
    await wait_image(demo, snaps[0]["id"], "gone")  # the shelved image is deleted
    for name in ("shelve", "unshelve"):
        await wait_actions_done(demo, active, name)
        action = await events_of(demo, active, name)
        assert all(e["result"] == "Success" for e in action["events"]), action
    events = [e["event"] for e in (await events_of(demo, active, "unshelve"))["events"]]
    assert set(events) == {"schedule_instances", "compute_unshelve_instance"}
    await wait_notified(cloud, active, {
        f"compute.instance.{verb}.{phase}" for verb in ("shelve", "shelve_offload", "unshelve")
        for phase in ("start", "end")})


@pytest.mark.parametrize("settings_overrides", [{"shelved_offload_time": -1}])
async def test_shelve_without_offload_then_offload_and_unshelve(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    assert (await act(demo, active, {"shelve": None})).status_code == 202
    shelved = await wait_for_status(admin, active, {"SHELVED"})
    host = shelved["OS-EXT-SRV-ATTR:host"]
    assert host and shelved["OS-EXT-STS:power_state"] == 4
    # unshelve of a server still on its host: powered on there.
    assert (await act(demo, active, {"unshelve": None})).status_code == 202
    server = await wait_for_status(admin, active, {"ACTIVE"})
    assert server["OS-EXT-SRV-ATTR:host"] == host and server["OS-EXT-STS:power_state"] == 1
    # shelveOffload is the admin's.
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED"})
    assert (await act(demo, active, {"shelveOffload": None})).status_code == 403
    assert (await act(admin, active, {"shelveOffload": None})).status_code == 202
    offloaded = await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    assert offloaded["OS-EXT-SRV-ATTR:host"] is None
    assert active not in fake_drivers(cloud)[host].instances


@pytest.mark.parametrize("settings_overrides", [{"shelved_offload_time": 1}])
async def test_shelved_servers_are_offloaded_by_the_periodic_task(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED"})
    deadline = time.monotonic() + 20
    while (await admin.get(f"{SERVERS}/{active}")).json()["server"]["status"] != "SHELVED_OFFLOADED":
        for svc in cloud.services:
            if svc.binary == "cirrus-compute":
                await svc.endpoint.shelving.poll_shelved_instances()
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)


async def test_unshelve_availability_zone_at_277(demo: httpx.AsyncClient,
                                                 admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    for body in ({"unshelve": {}}, {"unshelve": {"availability_zone": None}},
                 {"unshelve": {"availability_zone": "nova", "host": "h"}}):
        assert (await act(demo, active, body, "2.77")).status_code == 400, body
    resp = await act(demo, active, {"unshelve": {"availability_zone": "nowhere"}}, "2.77")
    assert resp.status_code == 400
    # Below 2.77 any value is taken (and ignored).
    resp = await act(demo, active, {"unshelve": {"availability_zone": "nowhere"}}, "2.76")
    assert resp.status_code == 202
    await wait_for_status(admin, active, {"ACTIVE"})
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    resp = await act(demo, active, {"unshelve": {"availability_zone": "nova"}}, "2.77")
    assert resp.status_code == 202
    server = await wait_for_status(admin, active, {"ACTIVE"})
    assert server["OS-EXT-AZ:availability_zone"] == "nova"


async def test_unshelve_with_no_valid_host_stays_offloaded(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    services = (await admin.get("/compute/v2.1/os-services", params={"binary": "nova-compute"},
                                headers=v("2.53"))).json()["services"]
    for service in services:
        resp = await admin.put(f"/compute/v2.1/os-services/{service['id']}",
                               json={"status": "disabled"}, headers=v("2.53"))
        assert resp.status_code == 200, resp.text
    cloud.settings.scheduler_cache_seconds = 0  # see the change at once
    assert (await act(demo, active, {"unshelve": None})).status_code == 202
    server = await wait_idle(admin, active)
    assert server["status"] == "SHELVED_OFFLOADED"
    action = await events_of(demo, active, "unshelve")
    assert action["events"][0]["event"] == "schedule_instances"
    assert action["events"][0]["result"] == "Error"
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == active) == 0


async def test_unshelve_spawn_failure_goes_back_offloaded(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str) -> None:
    server_id = await boot(demo, image, "nounshelve")
    await act(demo, server_id, {"shelve": None})
    await wait_for_status(admin, server_id, {"SHELVED_OFFLOADED"})
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(fail_for_instance("nounshelve"))
    await act(demo, server_id, {"unshelve": None})
    server = await wait_idle(admin, server_id)
    assert server["status"] == "SHELVED_OFFLOADED" and server["OS-EXT-SRV-ATTR:host"] is None
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == server_id) == 0
    action = await events_of(demo, server_id, "unshelve")
    assert any(e["result"] == "Error" for e in action["events"])


async def test_shelve_state_guards(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                   active: str) -> None:
    assert (await act(demo, active, {"unshelve": None})).status_code == 409
    assert (await act(admin, active, {"shelveOffload": None})).status_code == 409
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    assert (await act(demo, active, {"shelve": None})).status_code == 409
    assert (await act(demo, active, {"createImage": {"name": "x"}})).status_code == 409
    # A 409 leaves no stray image behind.
    names = [i["name"] for i in (await demo.get(IMAGES)).json()["images"]]
    assert "x" not in names and names.count("vm-shelved") == 1


async def test_image_actions_on_another_projects_server_are_404(api: Any) -> None:
    tenants = await make_tenants(api)
    try:
        image = await upload_image(tenants.member, name="mine")
        server_id = await boot(tenants.member, image)
        for body in ({"rebuild": {"imageRef": image}}, {"createImage": {"name": "x"}},
                     {"createBackup": {"name": "b", "backup_type": "d", "rotation": 1}},
                     {"shelve": None}, {"unshelve": None}):
            resp = await act(tenants.other, server_id, body)
            assert resp.status_code == 404, (body, resp.text)
    finally:
        for client in tenants.clients.values():
            await client.aclose()


async def test_deleting_a_shelved_server_deletes_its_image_and_ports(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"shelve": None})
    shelved = await wait_for_status(admin, active, {"SHELVED_OFFLOADED"})
    assert shelved["OS-EXT-SRV-ATTR:host"] is None
    snaps = [i for i in (await demo.get(IMAGES)).json()["images"] if i["name"] == "vm-shelved"]
    assert (await demo.delete(f"{SERVERS}/{active}")).status_code == 204
    await wait_for_status(demo, active, {"DELETED"})
    await wait_image(demo, snaps[0]["id"], "gone")
    assert await db_count(cloud, ports, ports.c.device_id == active) == 0
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == active) == 0


@pytest.mark.parametrize("settings_overrides", [{"shelved_offload_time": -1}])
async def test_a_repeated_unshelve_does_not_touch_the_guest(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"shelve": None})
    await wait_for_status(admin, active, {"SHELVED"})
    await act(demo, active, {"unshelve": None})
    server = await wait_for_status(admin, active, {"ACTIVE"})
    host = server["OS-EXT-SRV-ATTR:host"]
    manager = next(s.endpoint for s in cloud.services
                   if s.binary == "cirrus-compute" and s.host == host)
    rule = FaultRule(error=lambda i: RuntimeError("powered on twice"), times=1)
    manager.driver.faults["power_on"].append(rule)
    await manager.unshelve_instance(admin_context(), active, None)  # the bus again
    assert rule.times == 1  # never reached the hypervisor
    assert (await admin.get(f"{SERVERS}/{active}")).json()["server"]["status"] == "ACTIVE"


async def test_a_failed_shelve_clears_its_task_and_its_image(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str) -> None:
    server_id = await boot(demo, image, "noshelve")
    for driver in fake_drivers(cloud).values():
        driver.faults["snapshot"].append(FaultRule(
            error=lambda i: RuntimeError("no space for the snapshot"), instance_name="noshelve"))
    assert (await act(demo, server_id, {"shelve": None})).status_code == 202
    server = await wait_idle(admin, server_id)
    assert server["OS-EXT-STS:vm_state"] == "active" and server["OS-EXT-SRV-ATTR:host"]
    action = await events_of(demo, server_id, "shelve")
    assert action["events"][0]["event"] == "compute_shelve_instance"
    assert action["events"][0]["result"] == "Error"
    names = [i["name"] for i in (await demo.get(IMAGES)).json()["images"]]
    assert "noshelve-shelved" not in names


async def test_rebuild_sets_and_clears_the_key_pair(demo: httpx.AsyncClient, active: str,
                                                    image: str) -> None:
    resp = await demo.post("/compute/v2.1/os-keypairs", json={"keypair": {"name": "rk"}},
                           headers=v("2.1"))
    assert resp.status_code == 200, resp.text
    resp = await act(demo, active, {"rebuild": {"imageRef": image, "key_name": "rk"}}, "2.54")
    assert resp.status_code == 202 and resp.json()["server"]["key_name"] == "rk"
    await wait_idle(demo, active)
    resp = await act(demo, active, {"rebuild": {"imageRef": image, "key_name": None}}, "2.54")
    assert resp.status_code == 202 and resp.json()["server"]["key_name"] is None
    await wait_idle(demo, active)


async def test_an_admins_rebuild_reply_carries_user_data_once(admin: httpx.AsyncClient,
                                                              active: str, image: str) -> None:
    """From 2.75 the reply is the full view, but as Nova's rebuild view: the
    user data as ``user_data`` only, not also as the admin's extended attribute."""
    resp = await act(admin, active, {"rebuild": {"imageRef": image}}, "2.75")
    assert resp.status_code == 202, resp.text
    server = resp.json()["server"]
    assert "user_data" in server and "OS-EXT-SRV-ATTR:user_data" not in server
    assert "OS-EXT-SRV-ATTR:host" in server  # the other admin attributes stay
    await wait_idle(admin, active)
