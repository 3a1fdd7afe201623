"""Moving servers between hosts: resize, confirm, revert, cold and live
migration, evacuation (the fake driver, two simulated hosts)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations, compute_nodes
from tests.functional.servers import (create_server, db_count, fake_drivers, server_body,
                                      upload_image, wait_for_status)

SERVERS = "/compute/v2.1/servers"


def v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def act(client: httpx.AsyncClient, server_id: str, body: Any,
              version: str = "2.1") -> httpx.Response:
    return await client.post(f"{SERVERS}/{server_id}/action", json=body, headers=v(version))


async def host_of(admin: httpx.AsyncClient, server_id: str) -> str:
    server = (await admin.get(f"{SERVERS}/{server_id}")).json()["server"]
    return server["OS-EXT-SRV-ATTR:host"]


async def claims_of(cloud: Cloud, consumer: str) -> list[dict[str, Any]]:
    import sqlalchemy as sa

    def read(conn: sa.Connection) -> list[dict[str, Any]]:
        return [dict(r) for r in conn.execute(sa.select(
            allocations.c.consumer_uuid, allocations.c.vcpus, allocations.c.memory_mb,
            compute_nodes.c.host).join(compute_nodes).where(
            allocations.c.consumer_uuid == consumer)).mappings()]
    assert cloud.db is not None
    return await cloud.db.read(read)


@pytest.fixture
async def active(demo: httpx.AsyncClient) -> str:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    return created["id"]


async def test_resize_then_confirm(cloud: Cloud, demo: httpx.AsyncClient,
                                   admin: httpx.AsyncClient, active: str) -> None:
    source = await host_of(admin, active)
    resp = await act(demo, active, {"resize": {"flavorRef": "2"}})
    assert resp.status_code == 202, resp.text
    server = await wait_for_status(demo, active, {"VERIFY_RESIZE", "ERROR"})
    assert server["status"] == "VERIFY_RESIZE", server.get("fault")
    assert server["flavor"]["id"] == "2"
    dest = await host_of(admin, active)
    assert dest != source
    migrations = (await admin.get("/compute/v2.1/os-migrations", headers=v("2.80"))).json()
    (m,) = migrations["migrations"]
    assert m["status"] == "finished" and m["migration_type"] == "resize"
    assert (m["source_compute"], m["dest_compute"]) == (source, dest)
    held = await claims_of(cloud, m["uuid"])
    assert [c["host"] for c in held] == [source]
    resp = await act(demo, active, {"confirmResize": None})
    assert resp.status_code == 204, resp.text
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert await claims_of(cloud, m["uuid"]) == []
    assert [c["host"] for c in await claims_of(cloud, active)] == [dest]
    assert active not in fake_drivers(cloud)[source].instances
    assert active in fake_drivers(cloud)[dest].instances


async def test_a_resized_servers_console_can_be_read(demo: httpx.AsyncClient,
                                                     active: str) -> None:
    """VERIFY_RESIZE: the guest runs on the destination, so its console is
    there to read (Nova refuses console output only off any host)."""
    assert (await act(demo, active, {"resize": {"flavorRef": "2"}})).status_code == 202
    server = await wait_for_status(demo, active, {"VERIFY_RESIZE", "ERROR"})
    assert server["status"] == "VERIFY_RESIZE", server.get("fault")
    resp = await act(demo, active, {"os-getConsoleOutput": {}})
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["output"], str)


async def events_of(admin: httpx.AsyncClient, server_id: str, action: str) -> list[dict]:
    """The events of the newest ``action`` on the server (as an admin sees them)."""
    url = f"{SERVERS}/{server_id}/os-instance-actions"
    actions = (await admin.get(url)).json()["instanceActions"]
    request_id = next(a["request_id"] for a in actions if a["action"] == action)
    shown = (await admin.get(f"{url}/{request_id}", headers=v("2.84"))).json()
    return shown["instanceAction"]["events"]


async def settled_events(admin: httpx.AsyncClient, server_id: str, action: str,
                         timeout: float = 20.0) -> list[dict]:
    """The action's events once each has a result: an event is closed just
    after its step's last save, so a status can show before it."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while True:
        events = await events_of(admin, server_id, action)
        if all(e["result"] is not None for e in events):
            return events
        assert time.monotonic() < deadline, events
        await asyncio.sleep(0.02)


async def only_migration(admin: httpx.AsyncClient, version: str = "2.80") -> dict:
    (m,) = (await admin.get("/compute/v2.1/os-migrations", headers=v(version))).json()[
        "migrations"]
    return m


async def test_resize_is_recorded_as_novas_events(cloud: Cloud, demo: httpx.AsyncClient,
                                                  admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"resize": {"flavorRef": "2", "OS-DCF:diskConfig": "AUTO"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    names = {e["event"]: e["result"] for e in await settled_events(admin, active, "resize")}
    assert names == {"conductor_migrate_server": "Success", "compute_prep_resize": "Success",
                     "compute_resize_instance": "Success", "compute_finish_resize": "Success"}


async def test_resize_then_revert(cloud: Cloud, demo: httpx.AsyncClient,
                                  admin: httpx.AsyncClient, active: str) -> None:
    source = await host_of(admin, active)
    before = await claims_of(cloud, active)
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    dest = await host_of(admin, active)
    resp = await act(demo, active, {"revertResize": None})
    assert resp.status_code == 202, resp.text
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert server["flavor"]["id"] == "1"
    assert server["OS-EXT-STS:power_state"] == 1
    assert await host_of(admin, active) == source
    assert await claims_of(cloud, active) == before
    m = await only_migration(admin)
    assert m["status"] == "reverted"
    assert await claims_of(cloud, m["uuid"]) == []
    drivers = fake_drivers(cloud)
    assert active in drivers[source].instances and active not in drivers[dest].instances
    assert active not in drivers[source].resize_sources
    names = {e["event"] for e in await events_of(admin, active, "revertResize")}
    assert names == {"compute_revert_resize", "compute_finish_revert_resize"}


async def test_resize_of_a_stopped_server_stays_stopped(demo: httpx.AsyncClient,
                                                        active: str) -> None:
    await act(demo, active, {"os-stop": None})
    await wait_for_status(demo, active, {"SHUTOFF"})
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    server = await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    assert server["OS-EXT-STS:power_state"] == 4
    await act(demo, active, {"confirmResize": None})
    server = await wait_for_status(demo, active, {"SHUTOFF"})
    assert server["OS-EXT-STS:task_state"] is None


@pytest.mark.parametrize("body, status", [
    ({"resize": {"flavorRef": "1"}}, 400),  # the same flavor
    ({"resize": {"flavorRef": "nope"}}, 400),
    ({"resize": {}}, 400),
    ({"resize": {"flavorRef": "2", "extra": 1}}, 400),
    ({"resize": {"flavorRef": "2", "OS-DCF:diskConfig": "SOMETIMES"}}, 400),
    ({"resize": {"flavorRef": True}}, 400),
    ({"confirmResize": None}, 409),  # nothing to confirm
    ({"revertResize": None}, 409),
])
async def test_resize_refusals(demo: httpx.AsyncClient, active: str, body: dict,
                               status: int) -> None:
    resp = await act(demo, active, body)
    assert resp.status_code == status, resp.text
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None


async def test_resize_to_a_smaller_disk_is_400(admin: httpx.AsyncClient,
                                               demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    created = await create_server(demo, server_body(image, flavor="2"))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    resp = await act(demo, created["id"], {"resize": {"flavorRef": "1"}})
    assert resp.status_code == 400 and "smaller disk" in resp.text


async def test_resize_over_the_cores_quota_is_403(api: Any, admin: httpx.AsyncClient,
                                                  demo: httpx.AsyncClient, active: str) -> None:
    project = (await demo.get(f"{SERVERS}/{active}")).json()["server"]["tenant_id"]
    resp = await admin.put(f"/compute/v2.1/os-quota-sets/{project}",
                           json={"quota_set": {"cores": 1}})
    assert resp.status_code == 200, resp.text
    resp = await act(demo, active, {"resize": {"flavorRef": "3"}})  # 2 vCPUs
    assert resp.status_code == 403, resp.text
    assert "cores" in resp.text
    assert (await act(demo, active, {"resize": {"flavorRef": "2"}})).status_code == 202


async def test_resize_to_where_nothing_fits_keeps_the_server(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    resp = await admin.post("/compute/v2.1/flavors", json={"flavor": {
        "name": "huge", "ram": 50000, "vcpus": 1, "disk": 1, "id": "huge"}})
    assert resp.status_code == 200, resp.text
    before = await claims_of(cloud, active)
    assert (await act(demo, active, {"resize": {"flavorRef": "huge"}})).status_code == 202
    m = await wait_for_migration(admin, {"error"})
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None
    assert server["flavor"]["id"] == "1"
    assert await claims_of(cloud, active) == before
    assert await claims_of(cloud, m["uuid"]) == []
    (event,) = await events_of(admin, active, "resize")
    assert event["event"] == "conductor_migrate_server" and event["result"] == "Error"
    assert "RamFilter" in event["details"]


async def wait_until(condition: Any, timeout: float = 20.0) -> None:
    """Poll ``condition()`` until it holds; fail after ``timeout`` seconds."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.02)


async def wait_for_migration(admin: httpx.AsyncClient, statuses: set[str],
                             timeout: float = 20.0) -> dict:
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while True:
        m = await only_migration(admin)
        if m["status"] in statuses:
            return m
        assert time.monotonic() < deadline, m
        await asyncio.sleep(0.02)


async def test_a_driver_fault_on_finish_is_an_error_with_a_fault(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    from cirrus.virt.fake import FaultRule
    from cirrus.virt.exception import MigrationError

    for driver in fake_drivers(cloud).values():
        driver.faults["finish_migration"].append(FaultRule(
            error=lambda i: MigrationError(reason="disk lost in transit")))
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    server = await wait_for_status(demo, active, {"ERROR"})
    assert "disk lost in transit" in server["fault"]["message"]
    assert server["OS-EXT-STS:task_state"] is None
    assert (await only_migration(admin))["status"] == "error"
    results = {e["event"]: e["result"] for e in await events_of(admin, active, "resize")}
    assert results["compute_finish_resize"] == "Error"


@pytest.mark.parametrize("settings_overrides", [{"computes": 1,
                                                 "allow_resize_to_same_host": True}])
async def test_resize_on_the_same_host_when_allowed(cloud: Cloud, demo: httpx.AsyncClient,
                                                    admin: httpx.AsyncClient,
                                                    active: str) -> None:
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    m = await only_migration(admin)
    assert m["source_compute"] == m["dest_compute"] == "compute1"
    assert [(c["host"], c["memory_mb"]) for c in await claims_of(cloud, m["uuid"])] == [
        ("compute1", 512)]
    assert [(c["host"], c["memory_mb"]) for c in await claims_of(cloud, active)] == [
        ("compute1", 2048)]
    await act(demo, active, {"confirmResize": None})
    await wait_for_status(demo, active, {"ACTIVE"})
    assert active in fake_drivers(cloud)["compute1"].instances
    assert await claims_of(cloud, m["uuid"]) == []


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_a_single_host_cannot_take_a_resize_by_default(
        demo: httpx.AsyncClient, admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    m = await wait_for_migration(admin, {"error"})
    assert m["dest_compute"] is None
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["status"] == "ACTIVE"
    (event,) = await events_of(admin, active, "resize")
    assert event["result"] == "Error" and "RetryFilter" in event["details"]


@pytest.mark.parametrize("settings_overrides", [{"resize_confirm_window": 0.01}])
async def test_resizes_left_waiting_are_confirmed(cloud: Cloud, demo: httpx.AsyncClient,
                                                  admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    dest = await host_of(admin, active)
    manager = next(s.endpoint for s in cloud.services if s.host == dest
                   and s.binary == "cirrus-compute")
    await wait_for_migration(admin, {"finished"})
    # A window of 0: every resize finished before the call has waited longer
    # than it, with no sleep racing a window of wall-clock time.
    assert await manager.resizes.confirm_resizes(manager_ctx(), 0.0) == [active]
    await wait_for_status(demo, active, {"ACTIVE"})
    assert (await only_migration(admin))["status"] == "confirmed"


def manager_ctx() -> Any:
    from cirrus.context import admin_context

    return admin_context()


# -- cold migration ---------------------------------------------------------------------
async def test_migrate_is_for_admins(demo: httpx.AsyncClient, active: str) -> None:
    resp = await act(demo, active, {"migrate": None})
    assert resp.status_code == 403 and "os-migrate-server:migrate" in resp.text


async def test_migrate_to_a_named_host(cloud: Cloud, admin: httpx.AsyncClient,
                                       demo: httpx.AsyncClient, active: str) -> None:
    source = await host_of(admin, active)
    other = next(h for h in fake_drivers(cloud) if h != source)
    resp = await act(admin, active, {"migrate": {"host": other}}, "2.56")
    assert resp.status_code == 202, resp.text
    server = await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    assert server["flavor"]["id"] == "1"
    assert await host_of(admin, active) == other
    m = await only_migration(admin)
    assert m["migration_type"] == "migration" and m["old_instance_type_id"] == 1 \
        and m["new_instance_type_id"] == 1
    await act(demo, active, {"confirmResize": None})
    await wait_for_status(demo, active, {"ACTIVE"})
    assert [c["host"] for c in await claims_of(cloud, active)] == [other]


@pytest.mark.parametrize("body, version, status", [
    ({"migrate": {"host": "compute9"}}, "2.56", 400),  # no such host
    ({"migrate": {"host": "bad host!"}}, "2.56", 400),
    ({"migrate": {"hots": "compute1"}}, "2.56", 400),
])
async def test_migrate_refusals(admin: httpx.AsyncClient, active: str, body: dict,
                                version: str, status: int) -> None:
    resp = await act(admin, active, body, version)
    assert resp.status_code == status, resp.text


async def test_migrate_to_its_own_host_is_400(admin: httpx.AsyncClient, active: str) -> None:
    source = await host_of(admin, active)
    resp = await act(admin, active, {"migrate": {"host": source}}, "2.56")
    assert resp.status_code == 400 and "CannotMigrateToSameHost" in resp.text


async def test_migrate_body_is_not_read_before_2_56(admin: httpx.AsyncClient,
                                                    demo: httpx.AsyncClient, active: str) -> None:
    resp = await act(admin, active, {"migrate": {"host": "anything at all"}}, "2.55")
    assert resp.status_code == 202, resp.text
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})


# -- live migration ---------------------------------------------------------------------
async def ports_of(admin: httpx.AsyncClient, server_id: str) -> list[dict]:
    resp = await admin.get("/network/v2.0/ports", params={"device_id": server_id})
    return resp.json()["ports"]


@pytest.mark.parametrize("version, body", [
    ("2.1", {"host": None, "block_migration": False, "disk_over_commit": False}),
    ("2.25", {"host": None, "block_migration": "auto"}),
    ("2.30", {"host": None, "block_migration": True, "force": False}),
    ("2.68", {"host": None, "block_migration": "auto"}),
])
async def test_live_migration(cloud: Cloud, admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                              active: str, version: str, body: dict) -> None:
    source = await host_of(admin, active)
    resp = await act(admin, active, {"os-migrateLive": body}, version)
    assert resp.status_code == 202, resp.text
    m = await wait_for_migration(admin, {"completed", "error"})
    assert m["status"] == "completed" and m["migration_type"] == "live-migration"
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert server["OS-EXT-STS:task_state"] is None and server["OS-EXT-STS:power_state"] == 1
    dest = await host_of(admin, active)
    assert dest != source and dest == m["dest_compute"]
    drivers = fake_drivers(cloud)
    assert active in drivers[dest].instances and active not in drivers[source].instances
    assert [c["host"] for c in await claims_of(cloud, active)] == [dest]
    assert await claims_of(cloud, m["uuid"]) == []
    assert {p["binding:host_id"] for p in await ports_of(admin, active)} == {dest}
    names = {e["event"] for e in await events_of(admin, active, "live-migration")}
    assert names == {"conductor_live_migrate_instance", "compute_live_migration",
                     "compute_pre_live_migration",
                     "compute_post_live_migration_at_destination"}


@pytest.mark.parametrize("version, body", [
    ("2.1", {"host": None, "block_migration": False}),  # disk_over_commit required
    ("2.1", {"host": None, "block_migration": "auto", "disk_over_commit": False}),
    ("2.25", {"host": None, "block_migration": "auto", "disk_over_commit": False}),
    ("2.25", {"block_migration": "auto"}),  # host required (may be null)
    ("2.30", {"host": None, "block_migration": "auto", "force": True}),  # force needs a host
    ("2.68", {"host": "compute1", "block_migration": "auto", "force": True}),
    ("2.30", {"host": None, "block_migration": "maybe"}),
])
async def test_live_migration_bodies_per_version(admin: httpx.AsyncClient, active: str,
                                                 version: str, body: dict) -> None:
    resp = await act(admin, active, {"os-migrateLive": body}, version)
    assert resp.status_code == 400, resp.text


async def test_live_migration_forced_to_a_host(cloud: Cloud, admin: httpx.AsyncClient,
                                               demo: httpx.AsyncClient, active: str) -> None:
    source = await host_of(admin, active)
    other = next(h for h in fake_drivers(cloud) if h != source)
    resp = await act(admin, active, {"os-migrateLive": {
        "host": other, "block_migration": "auto", "force": True}}, "2.30")
    assert resp.status_code == 202, resp.text
    await wait_for_migration(admin, {"completed"})
    await wait_for_status(demo, active, {"ACTIVE"})
    assert await host_of(admin, active) == other


async def test_live_migration_of_a_stopped_server_is_409(admin: httpx.AsyncClient,
                                                         demo: httpx.AsyncClient,
                                                         active: str) -> None:
    await act(demo, active, {"os-stop": None})
    await wait_for_status(demo, active, {"SHUTOFF"})
    resp = await act(admin, active, {"os-migrateLive": {"host": None,
                                                        "block_migration": "auto"}}, "2.25")
    assert resp.status_code == 409 and "stopped" in resp.text


async def test_live_migration_failure_rolls_back(cloud: Cloud, admin: httpx.AsyncClient,
                                                 demo: httpx.AsyncClient, active: str) -> None:
    from cirrus.virt.exception import MigrationError
    from cirrus.virt.fake import FaultRule

    source = await host_of(admin, active)
    before = await claims_of(cloud, active)
    fake_drivers(cloud)[source].faults["live_migration"].append(
        FaultRule(error=lambda i: MigrationError(reason="link down")))
    await act(admin, active, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
              "2.25")
    m = await wait_for_migration(admin, {"error"})
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert server["OS-EXT-STS:task_state"] is None
    assert await host_of(admin, active) == source
    assert await claims_of(cloud, active) == before
    assert await claims_of(cloud, m["uuid"]) == []
    assert active in fake_drivers(cloud)[source].instances
    assert not fake_drivers(cloud)[m["dest_compute"]].incoming
    results = {e["event"]: e["result"]
               for e in await settled_events(admin, active, "live-migration")}
    assert results["compute_live_migration"] == "Error"


async def _held_live_migration(cloud: Cloud, admin: httpx.AsyncClient, active: str) -> dict:
    """A live migration the source's driver holds in ``running``."""
    import asyncio

    from cirrus.virt.fake import hold

    source = await host_of(admin, active)
    fake_drivers(cloud)[source].faults["live_migration"].append(hold(asyncio.Event()))
    await act(admin, active, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
              "2.25")
    return await wait_for_migration(admin, {"running"})


async def test_server_migrations_list_show_and_abort(cloud: Cloud, admin: httpx.AsyncClient,
                                                     demo: httpx.AsyncClient,
                                                     active: str) -> None:
    source = await host_of(admin, active)
    m = await _held_live_migration(cloud, admin, active)
    url = f"{SERVERS}/{active}/migrations"
    assert (await admin.get(url, headers=v("2.22"))).status_code == 404
    listed = (await admin.get(url, headers=v("2.23"))).json()["migrations"]
    assert [x["id"] for x in listed] == [m["id"]]
    assert listed[0]["server_uuid"] == active and listed[0]["memory_total_bytes"] is None
    assert "uuid" not in listed[0]
    shown = (await admin.get(f"{url}/{m['id']}", headers=v("2.80"))).json()["migration"]
    assert shown["uuid"] == m["uuid"] and shown["status"] == "running" and shown["user_id"]
    assert (await admin.get(f"{url}/999", headers=v("2.23"))).status_code == 404
    links = (await admin.get("/compute/v2.1/os-migrations", headers=v("2.23"))).json()
    assert links["migrations"][0]["links"][0]["href"].endswith(
        f"/servers/{active}/migrations/{m['id']}")
    assert (await demo.get(url, headers=v("2.23"))).status_code == 403
    assert (await admin.delete(f"{url}/{m['id']}", headers=v("2.23"))).status_code == 404
    resp = await admin.delete(f"{url}/{m['id']}", headers=v("2.24"))
    assert resp.status_code == 202, resp.text
    done = await wait_for_migration(admin, {"cancelled"})
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert server["OS-EXT-STS:task_state"] is None
    assert await host_of(admin, active) == source
    assert [c["host"] for c in await claims_of(cloud, active)] == [source]
    assert await claims_of(cloud, done["uuid"]) == []
    assert (await admin.get(url, headers=v("2.23"))).json()["migrations"] == []


async def test_force_complete(cloud: Cloud, admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                              active: str) -> None:
    m = await _held_live_migration(cloud, admin, active)
    url = f"{SERVERS}/{active}/migrations/{m['id']}/action"
    assert (await admin.post(url, json={"force_complete": None},
                             headers=v("2.21"))).status_code == 404
    assert (await admin.post(url, json={"force_complete": 1},
                             headers=v("2.22"))).status_code == 400
    resp = await admin.post(url, json={"force_complete": None}, headers=v("2.22"))
    assert resp.status_code == 202, resp.text
    await wait_for_migration(admin, {"completed"})
    server = await wait_for_status(demo, active, {"ACTIVE"})
    assert await host_of(admin, active) == m["dest_compute"]
    assert server["OS-EXT-STS:task_state"] is None
    actions = {a["action"] for a in (await admin.get(
        f"{SERVERS}/{active}/os-instance-actions")).json()["instanceActions"]}
    assert "live_migration_force_complete" in actions


# -- evacuation ---------------------------------------------------------------------------
async def force_down(admin: httpx.AsyncClient, host: str) -> None:
    services = (await admin.get("/compute/v2.1/os-services", headers=v("2.53"))).json()
    service = next(s for s in services["services"]
                   if s["host"] == host and s["binary"] == "nova-compute")
    resp = await admin.put(f"/compute/v2.1/os-services/{service['id']}",
                           json={"forced_down": True}, headers=v("2.53"))
    assert resp.status_code == 200, resp.text


async def test_evacuate_needs_its_host_down(admin: httpx.AsyncClient, active: str) -> None:
    resp = await act(admin, active, {"evacuate": {}}, "2.14")
    assert resp.status_code == 400 and "still in use" in resp.text


async def test_evacuate_is_for_admins(demo: httpx.AsyncClient, active: str) -> None:
    resp = await act(demo, active, {"evacuate": {}}, "2.14")
    assert resp.status_code == 403 and "os-evacuate" in resp.text


@pytest.mark.parametrize("version, body", [
    ("2.1", {}),  # onSharedStorage required
    ("2.1", {"onSharedStorage": True, "adminPass": "x"}),
    ("2.14", {"onSharedStorage": False}),
    ("2.29", {"force": True}),  # force needs a host
    ("2.68", {"host": "compute1", "force": True}),
    ("2.14", {"host": ""}),
    ("2.14", {"adminPass": 5}),
])
async def test_evacuate_bodies_per_version(admin: httpx.AsyncClient, active: str,
                                           version: str, body: dict) -> None:
    resp = await act(admin, active, {"evacuate": body}, version)
    assert resp.status_code == 400, resp.text


async def test_evacuate_to_an_unknown_host_is_404(admin: httpx.AsyncClient,
                                                  active: str) -> None:
    resp = await act(admin, active, {"evacuate": {"host": "compute9"}}, "2.14")
    assert resp.status_code == 404, resp.text


async def test_evacuate_then_the_old_host_cleans_up(cloud: Cloud, admin: httpx.AsyncClient,
                                                    demo: httpx.AsyncClient,
                                                    active: str) -> None:
    source = await host_of(admin, active)
    ports_before = {p["id"] for p in await ports_of(admin, active)}
    await force_down(admin, source)
    resp = await act(admin, active, {"evacuate": {"onSharedStorage": False}}, "2.1")
    assert resp.status_code == 200, resp.text
    assert resp.json()["adminPass"]
    m = await wait_for_migration(admin, {"done", "failed", "error"})
    assert m["status"] == "done" and m["migration_type"] == "evacuation"
    server = await wait_for_status(demo, active, {"ACTIVE"})
    dest = await host_of(admin, active)
    assert dest != source and server["OS-EXT-STS:power_state"] == 1
    drivers = fake_drivers(cloud)
    assert active in drivers[dest].instances and active in drivers[source].instances
    ports = await ports_of(admin, active)
    assert {p["id"] for p in ports} == ports_before
    assert {p["binding:host_id"] for p in ports} == {dest}
    assert [c["host"] for c in await claims_of(cloud, active)] == [dest]
    assert await claims_of(cloud, m["uuid"]) == []
    names = {e["event"] for e in await events_of(admin, active, "evacuate")}
    assert names == {"conductor_rebuild_server", "compute_rebuild_instance"}
    # The old host comes back: the guest evacuated away goes.
    old = next(s.endpoint for s in cloud.services
               if s.host == source and s.binary == "cirrus-compute")
    assert await old.evacuation.destroy_evacuated_instances(manager_ctx()) == [active]
    assert active not in drivers[source].instances
    assert (await only_migration(admin))["status"] == "completed"
    assert await old.evacuation.destroy_evacuated_instances(manager_ctx()) == []


async def test_evacuate_a_stopped_server_keeps_it_stopped(cloud: Cloud, admin: httpx.AsyncClient,
                                                          demo: httpx.AsyncClient,
                                                          active: str) -> None:
    await act(demo, active, {"os-stop": None})
    await wait_for_status(demo, active, {"SHUTOFF"})
    source = await host_of(admin, active)
    other = next(h for h in fake_drivers(cloud) if h != source)
    await force_down(admin, source)
    resp = await act(admin, active, {"evacuate": {"host": other}}, "2.29")
    assert resp.status_code == 200 and resp.content == b"", resp.text
    await wait_for_migration(admin, {"done"})
    server = await wait_for_status(demo, active, {"SHUTOFF"})
    assert server["OS-EXT-STS:task_state"] is None
    assert await host_of(admin, active) == other


async def test_evacuate_failing_to_spawn_is_an_error(cloud: Cloud, admin: httpx.AsyncClient,
                                                     demo: httpx.AsyncClient,
                                                     active: str) -> None:
    from cirrus.virt.fake import fail_on_host

    source = await host_of(admin, active)
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(fail_on_host(driver.host))
    await force_down(admin, source)
    await act(admin, active, {"evacuate": {}}, "2.14")
    m = await wait_for_migration(admin, {"failed"})
    server = await wait_for_status(demo, active, {"ERROR"})
    assert "injected fault" in server["fault"]["message"]
    assert server["OS-EXT-STS:task_state"] is None
    assert m["dest_compute"] != source


# -- os-migrations ---------------------------------------------------------------------------
async def test_os_migrations_fields_per_version(admin: httpx.AsyncClient,
                                                demo: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    url = "/compute/v2.1/os-migrations"
    old = (await admin.get(url)).json()["migrations"][0]
    assert set(old) == {"id", "source_compute", "dest_compute", "source_node", "dest_node",
                        "dest_host", "old_instance_type_id", "new_instance_type_id",
                        "instance_uuid", "status", "created_at", "updated_at"}
    assert (old["old_instance_type_id"], old["new_instance_type_id"]) == (1, 2)
    assert set((await admin.get(url, headers=v("2.23"))).json()["migrations"][0]) - set(old) \
        == {"migration_type"}
    assert set((await admin.get(url, headers=v("2.59"))).json()["migrations"][0]) - set(old) \
        == {"migration_type", "uuid"}
    new = (await admin.get(url, headers=v("2.80"))).json()["migrations"][0]
    assert set(new) - set(old) == {"migration_type", "uuid", "user_id", "project_id"}
    assert (await demo.get(url)).status_code == 403


async def test_os_migrations_filters_and_paging(admin: httpx.AsyncClient,
                                                demo: httpx.AsyncClient, active: str) -> None:
    url = "/compute/v2.1/os-migrations"
    for flavor, confirm in (("2", "confirmResize"), ("3", "revertResize")):
        await act(demo, active, {"resize": {"flavorRef": flavor}})
        await wait_for_status(demo, active, {"VERIFY_RESIZE"})
        await act(demo, active, {confirm: None})
        await wait_for_status(demo, active, {"ACTIVE"})
    everything = (await admin.get(url, headers=v("2.59"))).json()["migrations"]
    assert [m["status"] for m in everything] == ["reverted", "confirmed"]  # newest first

    async def got(version: str, **params: Any) -> list[str]:
        resp = await admin.get(url, params=params, headers=v(version))
        assert resp.status_code == 200, resp.text
        return [m["status"] for m in resp.json()["migrations"]]
    assert await got("2.1", status="confirmed") == ["confirmed"]
    assert await got("2.1", instance_uuid=active, migration_type="resize") == [
        "reverted", "confirmed"]
    assert await got("2.1", migration_type="live-migration") == []
    assert await got("2.1", host="compute9") == []
    assert await got("2.1", limit=1) == ["reverted", "confirmed"]  # no paging before 2.59
    page = await admin.get(url, params={"limit": 1}, headers=v("2.59"))
    assert [m["status"] for m in page.json()["migrations"]] == ["reverted"]
    assert "marker=" in page.json()["migrations_links"][0]["href"]
    assert await got("2.59", limit=1, marker=everything[0]["uuid"]) == ["confirmed"]
    assert await got("2.59", **{"changes-since": "2000-01-01T00:00:00Z"}) == [
        "reverted", "confirmed"]
    assert await got("2.66", **{"changes-before": "2000-01-01T00:00:00Z"}) == []
    assert await got("2.80", user_id="nobody") == []
    for version, params in (("2.59", {"marker": "nope"}), ("2.59", {"bogus": "1"}),
                            ("2.59", {"changes-since": "yesterday"}),
                            ("2.66", {"changes-since": "2020-01-02T00:00:00Z",
                                      "changes-before": "2020-01-01T00:00:00Z"}),
                            ("2.79", {"user_id": "x"}), ("2.59", {"limit": "-1"})):
        resp = await admin.get(url, params=params, headers=v(version))
        assert resp.status_code == 400, (version, params, resp.text)


async def test_deleting_a_resized_server_leaves_nothing(cloud: Cloud, admin: httpx.AsyncClient,
                                                        demo: httpx.AsyncClient,
                                                        active: str) -> None:
    source = await host_of(admin, active)
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    m = await only_migration(admin)
    assert (await demo.delete(f"{SERVERS}/{active}")).status_code == 204
    await wait_for_status(demo, active, {"DELETED"})
    assert (await only_migration(admin))["status"] == "confirmed"
    assert await claims_of(cloud, m["uuid"]) == [] and await claims_of(cloud, active) == []
    assert await db_count(cloud, allocations) == 0
    drivers = fake_drivers(cloud)
    # The source's clean-up is a cast: wait for it.
    await wait_until(lambda: active not in drivers[source].resize_sources)


async def test_resize_notifications(cloud: Cloud, demo: httpx.AsyncClient,
                                    admin: httpx.AsyncClient, active: str) -> None:
    await act(demo, active, {"resize": {"flavorRef": "2"}})
    await wait_for_status(demo, active, {"VERIFY_RESIZE"})
    await act(demo, active, {"confirmResize": None})

    def sent() -> list[str]:
        return [n["event_type"] for s in cloud.services if s.binary == "cirrus-compute"
                for n in s.endpoint.notifier.sent if n["payload"].get("instance_id") == active]
    # The end is sent after the confirm's last save: wait for it, not the status.
    await wait_until(lambda: "compute.instance.resize.confirm.end" in sent())
    for event in ("resize_prep", "resize", "finish_resize", "resize.confirm"):
        assert f"compute.instance.{event}.start" in sent()
        assert f"compute.instance.{event}.end" in sent()
