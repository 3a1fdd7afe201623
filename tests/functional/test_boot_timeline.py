"""The boot timeline (issue 23): an instance-action event per seed step of a
boot under its create action, each with millisecond timing in ``details``
(2.84), a failed step recorded as Error with its traceback, and every step
reported to ``cirrus.observe``."""
from __future__ import annotations

import dataclasses
import json
from typing import Any, AsyncIterator

import httpx
import pytest

from cirrus import observe
from cirrus.bootstrap import Cloud
from cirrus.compute import timeline
from cirrus.observe import BootStep
from cirrus.virt.fake import fail_on_host
from tests.functional.servers import (create_server, fake_drivers, server_body, upload_image,
                                      wait_for_status)

SERVERS = "/compute/v2.1/servers"
BUILD = "compute__do_build_and_run_instance"
STEPS = [timeline.SCHEDULE_EVENT, timeline.CLAIM_EVENT, timeline.NETWORK_EVENT,
         timeline.BLOCK_DEVICE_EVENT, timeline.SPAWN_EVENT, timeline.VIF_PLUGGED_EVENT]


@dataclasses.dataclass
class Recorder:
    """A sink that keeps what ``observe`` reports."""

    steps: list[tuple[BootStep, float, bool]] = dataclasses.field(default_factory=list)

    def boot_step(self, step: BootStep, seconds: float, failed: bool) -> None:
        self.steps.append((step, seconds, failed))


@pytest.fixture
def recorder() -> Any:
    sink = Recorder()
    observe.add_sink(sink)
    yield sink
    observe.remove_sink(sink)


@pytest.fixture
async def vif_events(cloud: Cloud) -> AsyncIterator[None]:
    """The fake hypervisor waits for network-vif-plugged, as libvirt does."""
    for driver in fake_drivers(cloud).values():
        driver.capabilities = dataclasses.replace(driver.capabilities,
                                                  supports_vif_plugging_events=True)
    yield


async def create_events(client: httpx.AsyncClient, server_id: str,
                        version: str = "2.84") -> list[dict[str, Any]]:
    """The events of the server's create action, at ``version``."""
    headers = {"OpenStack-API-Version": f"compute {version}"}
    actions = (await client.get(f"{SERVERS}/{server_id}/os-instance-actions")).json()
    create = next(a for a in actions["instanceActions"] if a["action"] == "create")
    resp = await client.get(f"{SERVERS}/{server_id}/os-instance-actions/{create['request_id']}",
                            headers=headers)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["instanceAction"]["events"])


def by_name(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each event by its name, with its details read (one event per name)."""
    out = {e["event"]: {**e, "details": json.loads(e["details"])} for e in events}
    assert len(out) == len(events), [e["event"] for e in events]
    return out


async def test_a_boot_lists_every_step_with_ordered_timings(
        cloud: Cloud, demo: httpx.AsyncClient, admin: httpx.AsyncClient, vif_events: None,
        recorder: Recorder) -> None:
    server = await create_server(demo, server_body(await upload_image(demo)))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    events = by_name(await create_events(admin, server["id"]))
    assert sorted(events) == sorted([*STEPS, BUILD])
    for name, event in events.items():
        t = event["details"]
        assert event["result"] == "Success", (name, event["traceback"])
        assert t["start_ms"] <= t["finish_ms"], name
        assert t["duration_ms"] == pytest.approx(t["finish_ms"] - t["start_ms"], abs=0.002)
    t = {name: event["details"] for name, event in events.items()}
    build, spawn = t[BUILD], t[timeline.SPAWN_EVENT]
    # schedule → (build: claim → network ∥ block devices → spawn ⊃ vif wait)
    assert t[timeline.SCHEDULE_EVENT]["finish_ms"] <= build["start_ms"]
    assert build["start_ms"] <= t[timeline.CLAIM_EVENT]["start_ms"]
    for parallel in (timeline.NETWORK_EVENT, timeline.BLOCK_DEVICE_EVENT):
        assert t[timeline.CLAIM_EVENT]["finish_ms"] <= t[parallel]["start_ms"]
        assert t[parallel]["finish_ms"] <= spawn["start_ms"]
    vif = t[timeline.VIF_PLUGGED_EVENT]
    assert spawn["start_ms"] <= vif["start_ms"] <= vif["finish_ms"] <= spawn["finish_ms"]
    assert spawn["finish_ms"] <= build["finish_ms"]
    # The schedule event keeps the scheduler's decision beside its timing.
    assert {"filters", "hosts"} <= set(t[timeline.SCHEDULE_EVENT])
    # Where the steps ran: the compute host, the conductor for the schedule.
    host = events[BUILD]["host"]
    assert all(events[name]["host"] == host for name in STEPS[1:])
    reported = {step for step, _, failed in recorder.steps if not failed}
    assert reported == set(BootStep)


async def test_details_appear_from_2_84(demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    server = await create_server(demo, server_body(await upload_image(demo)))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert all("details" not in e for e in await create_events(demo, server["id"], "2.83"))
    events = by_name(await create_events(demo, server["id"]))
    assert {"start_ms", "finish_ms", "duration_ms"} <= set(events[timeline.SPAWN_EVENT]["details"])
    # Without the vif-plugged capability the driver waits for nothing.
    assert timeline.VIF_PLUGGED_EVENT not in events


async def test_a_failed_spawn_is_an_error_step(cloud: Cloud, demo: httpx.AsyncClient,
                                               admin: httpx.AsyncClient,
                                               recorder: Recorder) -> None:
    for host, driver in fake_drivers(cloud).items():
        driver.faults["spawn"].append(fail_on_host(host))
    server = await create_server(demo, server_body(await upload_image(demo)))
    await wait_for_status(demo, server["id"], {"ERROR"})
    events = await create_events(admin, server["id"])
    spawns = [e for e in events if e["event"] == timeline.SPAWN_EVENT]
    builds = [e for e in events if e["event"] == BUILD]
    assert spawns and len(spawns) == len(builds)  # one per host tried
    for spawn in spawns:
        assert spawn["result"] == "Error" and "Traceback" in spawn["traceback"]
        assert "duration_ms" in json.loads(spawn["details"])
    claims = [e for e in events if e["event"] == timeline.CLAIM_EVENT]
    assert claims and all(e["result"] == "Success" for e in claims)
    assert (BootStep.SPAWN, True) in {(s, f) for s, _, f in recorder.steps}
    assert (BootStep.TOTAL, True) in {(s, f) for s, _, f in recorder.steps}


async def _full_network(admin: httpx.AsyncClient, project_id: str) -> str:
    """A network of the project whose one address is taken already."""
    net = (await admin.post("/network/v2.0/networks", json={"network": {
        "name": "full", "project_id": project_id}})).json()["network"]
    resp = await admin.post("/network/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.99.0.0/29",
        "project_id": project_id,
        "allocation_pools": [{"start": "10.99.0.2", "end": "10.99.0.2"}]}})
    assert resp.status_code == 201, resp.text
    resp = await admin.post("/network/v2.0/ports", json={"port": {
        "network_id": net["id"], "project_id": project_id}})
    assert resp.status_code == 201, resp.text
    return str(net["id"])


async def test_a_failed_network_allocation_is_an_error_step(
        demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    project_id = (await demo.get("/identity/v3/auth/tokens", headers={
        "X-Subject-Token": demo.headers["X-Auth-Token"]})).json()["token"]["project"]["id"]
    net = await _full_network(admin, project_id)
    body = server_body(await upload_image(demo), networks=[{"uuid": net}])
    server = await create_server(demo, body)
    await wait_for_status(demo, server["id"], {"ERROR"})
    events = by_name(await create_events(admin, server["id"]))
    network = events[timeline.NETWORK_EVENT]
    assert network["result"] == "Error" and "Traceback" in network["traceback"]
    assert events[BUILD]["result"] == "Error"
    assert events[timeline.CLAIM_EVENT]["result"] == "Success"
    assert timeline.SPAWN_EVENT not in events  # the build never got there
