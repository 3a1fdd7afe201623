"""Aggregates as the scheduler sees them: the aggregate filters through HTTP,
and the host cache taking in aggregate changes without a full reload."""
from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.scheduler.host_manager import HostManager
from cirrus.scheduler.manager import FilterScheduler
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status
from tests.functional.test_aggregates import act, make
from tests.functional.test_host_cache import request

FILTERS = ("ComputeFilter,AvailabilityZoneFilter,RamFilter,CoreFilter,DiskFilter,"
           "AggregateInstanceExtraSpecsFilter,AggregateMultiTenancyIsolation")
SETTINGS = {"scheduler_cache_seconds": 0.0, "enabled_filters": FILTERS}


async def host_of(admin: httpx.AsyncClient, server_id: str) -> str:
    resp = await admin.get(f"/compute/v2.1/servers/{server_id}")
    return resp.json()["server"]["OS-EXT-SRV-ATTR:host"]


async def boot(demo: httpx.AsyncClient, image: str, flavor: str, name: str,
               status: str = "ACTIVE") -> dict[str, Any]:
    server = await create_server(demo, server_body(image, name=name, flavor=flavor))
    return await wait_for_status(demo, server["id"], {status, "ERROR" if status == "ACTIVE"
                                                      else "ACTIVE"})


async def ssd_flavor(admin: httpx.AsyncClient) -> str:
    resp = await admin.post("/compute/v2.1/flavors", json={"flavor": {
        "name": "ssd", "ram": 64, "vcpus": 1, "disk": 1, "id": "ssd"}})
    assert resp.status_code == 200, resp.text
    resp = await admin.post("/compute/v2.1/flavors/ssd/os-extra_specs", json={"extra_specs": {
        "aggregate_instance_extra_specs:ssd": "true", "hw:cpu_policy": "shared"}})
    assert resp.status_code == 200, resp.text
    return "ssd"


@pytest.mark.parametrize("settings_overrides", [SETTINGS])
async def test_extra_specs_pick_the_aggregate(admin: httpx.AsyncClient,
                                              demo: httpx.AsyncClient) -> None:
    flavor = await ssd_flavor(admin)
    image = await upload_image(demo)
    # No host offers ssd yet: no valid host, and the fault names the filter.
    failed = await boot(demo, image, flavor, "nowhere", status="ERROR")
    assert failed["status"] == "ERROR"
    assert "AggregateInstanceExtraSpecsFilter" in failed["fault"]["message"]

    agg = await make(admin, "fast")
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"ssd": "true"}}})
    await act(admin, agg["id"], {"add_host": {"host": "compute2"}})
    for i in range(3):
        server = await boot(demo, image, flavor, f"fast{i}")
        assert server["status"] == "ACTIVE"
        assert await host_of(admin, server["id"]) == "compute2"
    # Flavors without such specs go anywhere (the filter does not apply).
    hosts = set()
    for i in range(4):
        server = await boot(demo, image, "1", f"any{i}")
        hosts.add(await host_of(admin, server["id"]))
    assert hosts == {"compute1", "compute2"}

    # Metadata changed to false: the next boot finds no host again.
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"ssd": "false"}}})
    failed = await boot(demo, image, flavor, "again", status="ERROR")
    assert failed["status"] == "ERROR"


@pytest.mark.parametrize("settings_overrides", [SETTINGS])
async def test_tenant_isolation(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    demo_project = (await demo.get("/identity/v3/auth/projects")).json()["projects"][0]["id"]
    image = await upload_image(demo)
    kept = await make(admin, "kept")
    await act(admin, kept["id"], {"set_metadata": {"metadata": {
        "filter_tenant_id": uuid.uuid4().hex}}})
    await act(admin, kept["id"], {"add_host": {"host": "compute1"}})
    for i in range(3):
        server = await boot(demo, image, "1", f"iso{i}")
        assert await host_of(admin, server["id"]) == "compute2"
    # Opened to demo's project as well (another filter_tenant_id* key): either host.
    await act(admin, kept["id"], {"set_metadata": {"metadata": {
        "filter_tenant_id2": demo_project}}})
    hosts = set()
    for i in range(4):
        server = await boot(demo, image, "1", f"open{i}")
        hosts.add(await host_of(admin, server["id"]))
    assert "compute1" in hosts


async def test_the_host_cache_takes_in_aggregate_changes(cloud: Cloud,
                                                         admin: httpx.AsyncClient) -> None:
    db = cloud.db
    assert db is not None
    hm = HostManager(cloud.settings, db)
    FilterScheduler(cloud.settings, db, hm)
    await hm.reload()
    loaded_at = hm._loaded_at
    compute2 = hm.by_host["compute2"][0]
    assert compute2.aggregate_metadata == {} and compute2.availability_zone == "nova"

    agg = await make(admin, "z", zone="az1")
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"ssd": "true,fast"}}})
    await act(admin, agg["id"], {"add_host": {"host": "compute2"}})
    await hm.refresh()
    assert hm._loaded_at == loaded_at  # an incremental look, not a full load
    assert compute2.availability_zone == "az1"
    assert compute2.aggregate_metadata["ssd"] == frozenset({"true", "fast"})
    assert hm.by_host["compute1"][0].aggregate_metadata == {}

    await act(admin, agg["id"], {"remove_host": {"host": "compute2"}})
    await hm.refresh()
    assert compute2.aggregate_metadata == {} and compute2.availability_zone == "nova"
    # A full load reads the same.
    await hm.reload()
    assert hm.by_host["compute2"][0].aggregate_metadata == {}


async def test_schedules_decided_with_the_index_see_aggregates_too(cloud: Cloud,
                                                                   admin: httpx.AsyncClient
                                                                   ) -> None:
    """With the host index deciding (every host a candidate), the filter still
    has the last word."""
    db = cloud.db
    assert db is not None
    hm = HostManager(cloud.settings, db)
    scheduler = FilterScheduler(cloud.settings, db, hm, tuple(FILTERS.split(",")),
                                index_min_hosts=1)
    agg = await make(admin, "fast")
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"ssd": "true"}}})
    await act(admin, agg["id"], {"add_host": {"host": "compute1"}})
    spec = request(str(uuid.uuid4()))
    spec["flavor"] = {**spec["flavor"], "extra_specs": {"ssd": "true"}}
    for _ in range(3):
        spec["instance_uuids"] = [str(uuid.uuid4())]
        result = await scheduler.select_destinations(spec)
        assert [d["host"] for d in result["destinations"]] == ["compute1"]
        assert result["destinations"][0]["availability_zone"] == "nova"
