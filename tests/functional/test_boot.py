"""The boot pipeline through the HTTP API: POST /servers to ACTIVE, and every
way it can fail (seeds 000 and 004)."""
from __future__ import annotations

import asyncio
import datetime
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations, compute_nodes, instances
from cirrus.virt.fake import fail_on_host, hang
from tests.conftest import Api
from tests.functional.servers import (create_server, db_count, fake_drivers, ports_of,
                                      server_body, upload_image, wait_for_status)

SERVERS = "/compute/v2.1/servers"


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


async def actions_events(admin: httpx.AsyncClient, server_id: str) -> list[dict[str, Any]]:
    """Events of the server's first action, with hosts (microversion 2.62)."""
    resp = await admin.get(f"{SERVERS}/{server_id}/os-instance-actions")
    assert resp.status_code == 200, resp.text
    request_id = resp.json()["instanceActions"][-1]["request_id"]
    resp = await admin.get(f"{SERVERS}/{server_id}/os-instance-actions/{request_id}",
                           headers={"OpenStack-API-Version": "compute 2.84"})
    return resp.json()["instanceAction"]["events"]


async def test_boot_to_active(demo: httpx.AsyncClient, admin: httpx.AsyncClient, image: str) -> None:
    created = await create_server(demo, server_body(image, name="web"))
    assert created["adminPass"]
    assert created["links"][0]["href"].endswith(f"/compute/v2.1/servers/{created['id']}")
    server = await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"})
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-STS:power_state"] == 1
    assert server["OS-EXT-STS:task_state"] is None
    assert server["OS-SRV-USG:launched_at"]
    assert server["OS-EXT-AZ:availability_zone"] == "nova"
    assert server["addresses"], "the server has an address on the auto-allocated network"
    assert "OS-EXT-SRV-ATTR:host" not in server  # admin only
    as_admin = (await admin.get(f"{SERVERS}/{created['id']}")).json()["server"]
    assert as_admin["OS-EXT-SRV-ATTR:host"] in ("compute1", "compute2")
    ports = await ports_of(admin, created["id"])
    assert len(ports) == 1 and ports[0]["binding:host_id"] == as_admin["OS-EXT-SRV-ATTR:host"]


async def test_multi_create_names_and_reservation_id(demo: httpx.AsyncClient, image: str) -> None:
    body = server_body(image, name="batch", min_count=3, max_count=3, return_reservation_id=True)
    resp = await demo.post(SERVERS, json=body)
    assert resp.status_code == 202, resp.text
    rid = resp.json()["reservation_id"]
    listed = (await demo.get(f"{SERVERS}/detail", params={"reservation_id": rid})).json()["servers"]
    assert sorted(s["name"] for s in listed) == ["batch-1", "batch-2", "batch-3"]
    for s in listed:
        assert (await wait_for_status(demo, s["id"], {"ACTIVE", "ERROR"}))["status"] == "ACTIVE"


@pytest.mark.parametrize("mutate, fragment", [
    (lambda b: b.pop("server"), "server"),
    (lambda b: b["server"].pop("name"), "name"),
    (lambda b: b["server"].update(name="   "), "name"),
    (lambda b: b["server"].update(name="x" * 256), "name"),
    (lambda b: b["server"].update(flavorRef="nope"), "Flavor nope could not be found"),
    (lambda b: b["server"].update(imageRef="not-a-uuid"), "imageRef"),
    (lambda b: b["server"].update(imageRef="6f0b3c1e-0000-4000-8000-000000000000"), "image"),
    (lambda b: b["server"].update(networks=[{"uuid": "bad"}]), "networks/0/uuid"),
    (lambda b: b["server"].update(networks=[{"uuid": "6f0b3c1e-0000-4000-8000-000000000000",
                                             "fixed_ip": "999.1.1.1"}]), "fixed_ip"),
    (lambda b: b["server"].update(user_data="!!!not base64!!!"), "Userdata"),
    (lambda b: b["server"].update(user_data="QUFB" * 20000), "User data too large"),
    (lambda b: b["server"].update(min_count=3, max_count=2), "min_count"),
    (lambda b: b["server"].update(min_count=0), "min_count"),
    (lambda b: b["server"].update(metadata={"k": 1}), "metadata"),
    (lambda b: b["server"].update(bogus=1), "bogus"),
    (lambda b: b["server"].update(key_name="missing"), "key_name"),
    (lambda b: b["server"].update(config_drive="maybe"), "config_drive"),
    (lambda b: b["server"].update(security_groups="default"), "security_groups"),
    (lambda b: b["server"].update(block_device_mapping_v2=[{"source_type": "volume",
                                                           "uuid": "6f0b3c1e-0000-4000-8000-000000000000"}]),
     "volume"),
    (lambda b: b["server"].update(availability_zone="atlantis"), "availability zone"),
])
async def test_bad_create_bodies_are_400(demo: httpx.AsyncClient, image: str, mutate: Any,
                                         fragment: str) -> None:
    body = server_body(image)
    mutate(body)
    resp = await demo.post(SERVERS, json=body)
    assert resp.status_code == 400, resp.text
    assert fragment.lower() in resp.json()["badRequest"]["message"].lower()
    assert (await demo.get(SERVERS)).json()["servers"] == []


async def test_malformed_json_is_400(demo: httpx.AsyncClient) -> None:
    resp = await demo.post(SERVERS, content=b"{nope", headers={"content-type": "application/json"})
    assert resp.status_code == 400
    assert "badRequest" in resp.json()


async def test_networks_required_from_2_37(demo: httpx.AsyncClient, image: str) -> None:
    body = server_body(image)
    del body["server"]["networks"]
    resp = await demo.post(SERVERS, json=body, headers={"OpenStack-API-Version": "compute 2.37"})
    assert resp.status_code == 400 and "networks" in resp.text


async def test_flavor_too_small_for_image(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, name="big", min_ram=4096)
    resp = await demo.post(SERVERS, json=server_body(image, flavor="1"))
    assert resp.status_code == 400
    assert "memory is too small" in resp.json()["badRequest"]["message"]


async def test_forced_host_needs_admin(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                       image: str) -> None:
    resp = await demo.post(SERVERS, json=server_body(image, availability_zone="nova:compute2"))
    assert resp.status_code == 403
    public = await upload_image(admin, name="pub", visibility="public")
    created = await create_server(admin, server_body(public, availability_zone="nova:compute2"))
    await wait_for_status(admin, created["id"], {"ACTIVE"})
    server = (await admin.get(f"{SERVERS}/{created['id']}")).json()["server"]
    assert server["OS-EXT-SRV-ATTR:host"] == "compute2"


async def test_quota_exceeded_is_403_naming_the_quota(api: Api, demo: httpx.AsyncClient,
                                                      image: str) -> None:
    # The default instances quota is 10; m1.small cores 1, ram 2048 → ram (51200) allows 25.
    resp = await demo.post(SERVERS, json=server_body(image, min_count=11, max_count=11))
    assert resp.status_code == 403, resp.text
    assert "Quota exceeded for instances" in resp.json()["forbidden"]["message"]
    # max_count above the quota creates as many as fit (Nova's behaviour).
    resp = await demo.post(SERVERS, json=server_body(image, min_count=1, max_count=15))
    assert resp.status_code == 202
    assert len((await demo.get(SERVERS)).json()["servers"]) == 10


@pytest.mark.parametrize("settings_overrides", [{"quota_instances": 5}])
async def test_concurrent_creates_of_one_project_keep_the_quota(
        cloud: Cloud, demo: httpx.AsyncClient, image: str) -> None:
    """20 creates of one project at once against an instances quota of 5: exactly
    5 are accepted, each other one gets the 403 naming the quota, used in full."""
    resps = await asyncio.gather(*[demo.post(SERVERS, json=server_body(image, name=f"q{i}"))
                                   for i in range(20)])
    assert sorted(r.status_code for r in resps) == [202] * 5 + [403] * 15, \
        [r.text for r in resps if r.status_code not in (202, 403)]
    for resp in resps:
        if resp.status_code == 403:
            assert resp.json() == {"forbidden": {"code": 403, "message": (
                "Quota exceeded for instances: Requested 1, but already used 5 of 5 instances")}}
    assert await db_count(cloud, instances, instances.c.deleted.is_(False)) == 5
    # A multi-create asking for at least one more is refused as a whole.
    resp = await demo.post(SERVERS, json=server_body(image, min_count=1, max_count=3))
    assert resp.status_code == 403, resp.text
    assert await db_count(cloud, instances, instances.c.deleted.is_(False)) == 5


async def test_project_quota_override_limits_creates(admin: httpx.AsyncClient,
                                                      demo: httpx.AsyncClient, image: str) -> None:
    """A project's own limits (os-quota-sets) bound its creates; removing them
    brings back the defaults (10 instances, 20 cores)."""
    project = (await admin.get("/identity/v3/projects", params={"name": "demo"})).json()
    quota_url = f"/compute/v2.1/os-quota-sets/{project['projects'][0]['id']}"
    resp = await admin.put(quota_url, json={"quota_set": {"instances": 2, "cores": 100}})
    assert resp.status_code == 200, resp.text
    resp = await demo.post(SERVERS, json=server_body(image, min_count=3, max_count=3))
    assert resp.status_code == 403, resp.text
    assert resp.json()["forbidden"]["message"] == \
        "Quota exceeded for instances: Requested 3, but already used 0 of 2 instances"
    resp = await demo.post(SERVERS, json=server_body(image, min_count=1, max_count=5))
    assert resp.status_code == 202, resp.text
    assert len((await demo.get(SERVERS)).json()["servers"]) == 2
    assert (await admin.delete(quota_url)).status_code == 202
    resp = await demo.post(SERVERS, json=server_body(image, min_count=9, max_count=9))
    assert resp.json()["forbidden"]["message"] == \
        "Quota exceeded for instances: Requested 9, but already used 2 of 10 instances"
    assert (await demo.post(SERVERS, json=server_body(image))).status_code == 202


async def test_boot_from_an_image_shared_with_the_project(admin: httpx.AsyncClient,
                                                          demo: httpx.AsyncClient) -> None:
    """A shared image of another project boots once the caller's project is a member."""
    image = await upload_image(admin, name="shared", visibility="shared")
    resp = await demo.post(SERVERS, json=server_body(image))
    assert resp.status_code == 400, resp.text
    assert resp.json()["badRequest"]["message"] == "Can not find requested image"
    projects = (await admin.get("/identity/v3/projects", params={"name": "demo"})).json()
    member = await admin.post(f"/image/v2/images/{image}/members",
                              json={"member": projects["projects"][0]["id"]})
    assert member.status_code == 200, member.text
    created = await create_server(demo, server_body(image))
    assert (await wait_for_status(demo, created["id"], {"ACTIVE", "ERROR"}))["status"] == "ACTIVE"


@pytest.mark.parametrize("zone, message", [
    ("nova", None), ("atlantis", "The requested availability zone is not available"),
    ("nova:compute2", None), ("nova:nowhere", "Compute host nowhere could not be found."),
    (":compute1", None),
])
async def test_zone_and_forced_host_checks(admin: httpx.AsyncClient, zone: str,
                                           message: str | None) -> None:
    image = await upload_image(admin, name="pub", visibility="public")
    resp = await admin.post(SERVERS, json=server_body(image, availability_zone=zone))
    if message is None:
        assert resp.status_code == 202, resp.text
    else:
        assert resp.status_code == 400, resp.text
        assert resp.json()["badRequest"]["message"] == message


async def test_no_valid_host_fault_names_the_filter(cloud: Cloud, demo: httpx.AsyncClient,
                                                    admin: httpx.AsyncClient, image: str) -> None:
    resp = await admin.post("/compute/v2.1/flavors", json={"flavor": {
        "name": "huge", "ram": 512, "vcpus": 1, "disk": 5000, "id": "huge"}})
    assert resp.status_code == 200, resp.text
    created = await create_server(admin, server_body(await upload_image(admin, visibility="public"),
                                                     flavor="huge"))
    server = await wait_for_status(admin, created["id"], {"ERROR", "ACTIVE"})
    assert server["status"] == "ERROR"
    assert "No valid host" in server["fault"]["message"]
    assert "DiskFilter removed 2 of 2 hosts" in server["fault"]["message"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []


async def test_reschedule_after_spawn_failure(cloud: Cloud, demo: httpx.AsyncClient,
                                              admin: httpx.AsyncClient, image: str) -> None:
    fake_drivers(cloud)["compute1"].faults["spawn"].append(fail_on_host("compute1"))
    created = await create_server(demo, server_body(image, availability_zone=None))
    # Whatever the scheduler picks first, compute1 always fails: it must end on compute2.
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    server = (await admin.get(f"{SERVERS}/{created['id']}")).json()["server"]
    assert server["OS-EXT-SRV-ATTR:host"] == "compute2"
    events = await actions_events(admin, created["id"])
    builds = [(e["host"], e["result"]) for e in events
              if e["event"] == "compute__do_build_and_run_instance"]
    assert builds[-1] == ("compute2", "Success")
    schedules = [e for e in events if e["event"] == "conductor_schedule_and_build_instances"]
    if len(builds) == 2:  # the scheduler picked compute1 first: both attempts are recorded
        assert builds[0] == ("compute1", "Error") and len(schedules) == 2
    assert "RamFilter" in schedules[0]["details"] or "filters" in schedules[0]["details"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 1
    assert len(await ports_of(admin, created["id"])) == 1


async def test_exhausted_retries_end_in_error(cloud: Cloud, demo: httpx.AsyncClient,
                                              admin: httpx.AsyncClient, image: str) -> None:
    for host, driver in fake_drivers(cloud).items():
        driver.faults["spawn"].append(fail_on_host(host))
    created = await create_server(demo, server_body(image))
    server = await wait_for_status(demo, created["id"], {"ERROR", "ACTIVE"})
    assert server["status"] == "ERROR"
    assert server["fault"]["message"]
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []


async def test_abort_goes_to_error_without_reschedule(cloud: Cloud, demo: httpx.AsyncClient,
                                                      admin: httpx.AsyncClient, image: str) -> None:
    from cirrus.compute.exception import ImageUnacceptable
    from cirrus.virt.fake import FaultRule

    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(FaultRule(
            error=lambda i: ImageUnacceptable(image_id=i["image_ref"], reason="corrupt")))
    created = await create_server(demo, server_body(image))
    server = await wait_for_status(demo, created["id"], {"ERROR", "ACTIVE"})
    assert server["status"] == "ERROR"
    assert "corrupt" in server["fault"]["message"]
    events = await actions_events(admin, created["id"])
    assert len([e for e in events if e["event"] == "compute__do_build_and_run_instance"]) == 1
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []


async def test_delete_during_build_leaks_nothing(cloud: Cloud, demo: httpx.AsyncClient,
                                                 admin: httpx.AsyncClient, image: str) -> None:
    for driver in fake_drivers(cloud).values():
        driver.faults["spawn"].append(hang())
    created = await create_server(demo, server_body(image))
    await wait_for_status(admin, created["id"], {"BUILD"})
    for _ in range(200):  # until the build reaches spawn (task_state spawning)
        server = (await admin.get(f"{SERVERS}/{created['id']}")).json()["server"]
        if server["OS-EXT-STS:task_state"] == "spawning":
            break
        await asyncio.sleep(0.01)
    assert (await demo.delete(f"{SERVERS}/{created['id']}")).status_code == 204
    await wait_for_status(demo, created["id"], {"DELETED"})
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []


async def test_delete_active_server(cloud: Cloud, demo: httpx.AsyncClient,
                                    admin: httpx.AsyncClient, image: str) -> None:
    created = await create_server(demo, server_body(image))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    assert (await demo.delete(f"{SERVERS}/{created['id']}")).status_code == 204
    await wait_for_status(demo, created["id"], {"DELETED"})
    assert await db_count(cloud, allocations, allocations.c.consumer_uuid == created["id"]) == 0
    assert await ports_of(admin, created["id"]) == []
    assert created["id"] not in {i for d in fake_drivers(cloud).values() for i in d.instances}


@pytest.mark.parametrize("settings_overrides", [{
    "ram_allocation_ratio": 1.0, "fake_host_memory_mb": 10240, "quota_instances": 100,
    "quota_cores": 1000, "quota_ram": 1_000_000}])
async def test_concurrent_creates_never_overcommit(cloud: Cloud, demo: httpx.AsyncClient,
                                                   image: str) -> None:
    """50 creates at once onto two hosts with room for exactly 40 m1.tiny."""
    created = await asyncio.gather(*[create_server(demo, server_body(image, name=f"c{i}"))
                                     for i in range(50)])
    final = await asyncio.gather(*[wait_for_status(demo, s["id"], {"ACTIVE", "ERROR"}, timeout=60)
                                   for s in created])
    statuses = [s["status"] for s in final]
    assert statuses.count("ACTIVE") == 40, [s.get("fault") for s in final if s["status"] == "ERROR"][:3]
    assert statuses.count("ERROR") == 10
    assert all("No valid host" in s["fault"]["message"] for s in final if s["status"] == "ERROR")

    def used(conn: Any) -> list[tuple[int, int]]:
        import sqlalchemy as sa
        return [tuple(r) for r in conn.execute(sa.select(compute_nodes.c.memory_mb_used,
                                                         compute_nodes.c.memory_mb))]
    for mem_used, mem_total in await cloud.db.read(used):
        assert mem_used <= mem_total


async def test_anti_affinity_and_affinity_groups(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                                 image: str) -> None:
    async def boot_group(policy: str) -> set[str]:
        resp = await demo.post("/compute/v2.1/os-server-groups",
                               json={"server_group": {"name": policy, "policies": [policy]}})
        assert resp.status_code == 200, resp.text
        group = resp.json()["server_group"]["id"]
        body = server_body(image, name=policy, min_count=2, max_count=2)
        body["os:scheduler_hints"] = {"group": group}
        assert (await demo.post(SERVERS, json=body)).status_code == 202
        servers = (await demo.get(f"{SERVERS}/detail", params={"name": f"^{policy}-"})).json()["servers"]
        hosts = set()
        for s in servers:
            await wait_for_status(demo, s["id"], {"ACTIVE"})
            hosts.add((await admin.get(f"{SERVERS}/{s['id']}")).json()["server"]["OS-EXT-SRV-ATTR:host"])
        return hosts

    assert len(await boot_group("anti-affinity")) == 2
    assert len(await boot_group("affinity")) == 1


async def test_reschedule_records_both_attempts(cloud: Cloud, demo: httpx.AsyncClient,
                                                admin: httpx.AsyncClient, image: str) -> None:
    """Stack onto compute1 (negative RAM weight) so the first attempt is always there."""
    cloud.settings.ram_weight_multiplier = -1.0
    fake_drivers(cloud)["compute1"].faults["spawn"].append(fail_on_host("compute1"))
    created = await create_server(demo, server_body(image))
    await wait_for_status(demo, created["id"], {"ACTIVE"})
    events = await actions_events(admin, created["id"])
    builds = [(e["host"], e["result"]) for e in events
              if e["event"] == "compute__do_build_and_run_instance"]
    assert builds == [("compute1", "Error"), ("compute2", "Success")]
    assert "injected fault" in [e for e in events if e["result"] == "Error"][0]["traceback"]


async def test_disabled_service_is_skipped(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                           cloud: Cloud, image: str) -> None:
    services = (await admin.get("/compute/v2.1/os-services", params={"binary": "nova-compute"},
                                headers={"OpenStack-API-Version": "compute 2.53"})).json()["services"]
    compute2 = next(s for s in services if s["host"] == "compute2")
    resp = await admin.put(f"/compute/v2.1/os-services/{compute2['id']}", json={"status": "disabled"},
                           headers={"OpenStack-API-Version": "compute 2.53"})
    assert resp.status_code == 200 and resp.json()["service"]["status"] == "disabled"
    cloud.settings.scheduler_cache_seconds = 0  # see the change at once
    body = server_body(image, name="only1", min_count=3, max_count=3)
    assert (await demo.post(SERVERS, json=body)).status_code == 202
    servers = (await demo.get(f"{SERVERS}/detail", params={"name": "^only1-"})).json()["servers"]
    assert len(servers) == 3
    hosts = set()
    for s in servers:
        await wait_for_status(demo, s["id"], {"ACTIVE"})
        hosts.add((await admin.get(f"{SERVERS}/{s['id']}")).json()["server"]["OS-EXT-SRV-ATTR:host"])
    assert hosts == {"compute1"}


async def test_server_list_filters_and_pagination(demo: httpx.AsyncClient, image: str) -> None:
    body = server_body(image, name="page", min_count=5, max_count=5)
    assert (await demo.post(SERVERS, json=body)).status_code == 202
    first = (await demo.get(SERVERS, params={"limit": 2, "sort_key": "display_name",
                                             "sort_dir": "asc"})).json()
    assert [s["name"] for s in first["servers"]] == ["page-1", "page-2"]
    nxt = first["servers_links"][0]["href"].split("/compute", 1)[1]
    second = (await demo.get("/compute" + nxt)).json()
    assert [s["name"] for s in second["servers"]] == ["page-3", "page-4"]
    assert len((await demo.get(SERVERS, params={"name": "page-[13]"})).json()["servers"]) == 2
    assert (await demo.get(SERVERS, params={"sort_key": "bogus"})).status_code == 400
    assert (await demo.get(SERVERS, params={"marker": "nope"})).status_code == 400
    assert (await demo.get(SERVERS, params={"limit": "-1"})).status_code == 400


async def test_changes_since_lists_what_changed_deleted_included(demo: httpx.AsyncClient,
                                                                 image: str) -> None:
    """The poll a client runs for its servers: ``changes-since`` lists the
    servers changed at or after the time, with a status filter, and deleted
    ones too (Nova's behaviour, so a poller sees its server go)."""
    old = await create_server(demo, server_body(image, name="old"))
    await wait_for_status(demo, old["id"], {"ACTIVE"})
    await asyncio.sleep(0.05)
    since = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    new = await create_server(demo, server_body(image, name="new"))
    await wait_for_status(demo, new["id"], {"ACTIVE"})

    async def listed(**params: str) -> set[str]:
        resp = await demo.get(SERVERS, params={"changes-since": since, **params})
        assert resp.status_code == 200, resp.text
        return {s["id"] for s in resp.json()["servers"]}
    assert await listed() == {new["id"]}
    assert await listed(status="ACTIVE") == {new["id"]}
    assert await listed(status="ERROR") == set()
    assert (await demo.delete(f"{SERVERS}/{old['id']}")).status_code == 204
    await wait_for_status(demo, old["id"], {"DELETED"})
    assert await listed() == {old["id"], new["id"]}
    assert await listed(status="ACTIVE") == {new["id"]}
