"""Build admission through the API: while instances wait to build, further
creates are held (not refused), and every server still ends ACTIVE."""
from __future__ import annotations

import asyncio

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.admission import count_backlog
from cirrus.compute.models import instances
from cirrus.virt.fake import hold
from tests.functional.servers import fake_drivers, server_body, upload_image, wait_for_status

SERVERS = "/compute/v2.1/servers"


@pytest.mark.parametrize("settings_overrides", [{
    "computes": 1, "max_concurrent_builds": 1, "build_backlog_limit": 2,
    "quota_instances": 20, "quota_cores": 20}])
async def test_creates_wait_while_the_backlog_is_full(cloud: Cloud,
                                                       demo: httpx.AsyncClient) -> None:
    """One host building one server at a time, its spawns held: of 8 creates
    sent at once, the API answers only the backlog's worth (1 building, 2
    waiting); the others wait their turn, and answer 202 as servers get built
    once the spawns go on."""
    image = await upload_image(demo)
    release = asyncio.Event()
    (driver,) = fake_drivers(cloud).values()
    driver.faults["spawn"].append(hold(release))
    admission = cloud.app.state.compute_api.admission
    answered: list[str] = []

    async def create(i: int) -> None:
        resp = await demo.post(SERVERS, json=server_body(image, name=f"a{i}"))
        assert resp.status_code == 202, resp.text
        answered.append(resp.json()["server"]["id"])
    creates = [asyncio.ensure_future(create(i)) for i in range(8)]
    # Settled: one server spawning (held), the backlog full behind it, every
    # other create waiting. Nothing can move from there until the release.
    for _ in range(3000):
        states = await cloud.db.read(_task_states)  # type: ignore[union-attr]
        if (states.count("spawning") == 1 and states.count("scheduling") >= 2
                and len(answered) + admission.waiting == 8):
            break
        await asyncio.sleep(0.01)
    assert states.count("spawning") == 1 and states.count("scheduling") >= 2, states
    assert len(answered) + admission.waiting == 8, (len(answered), admission.waiting)
    assert len(answered) == 3, len(answered)
    release.set()
    await asyncio.gather(*creates)
    actives = [await wait_for_status(demo, server_id, {"ACTIVE"}) for server_id in answered]
    assert all(s["status"] == "ACTIVE" for s in actives)
    assert await cloud.db.read(count_backlog) == 0  # type: ignore[union-attr]


def _task_states(conn: sa.Connection) -> list[str | None]:
    return list(conn.execute(sa.select(instances.c.task_state)).scalars())


@pytest.mark.parametrize("settings_overrides", [{
    "computes": 1, "max_concurrent_builds": 1, "build_backlog_limit": 1,
    "build_backlog_wait": 600, "quota_instances": 20, "quota_cores": 20}])
async def test_creates_waiting_their_turn_get_503_at_once_when_cirrus_shuts_down(
        cloud: Cloud, demo: httpx.AsyncClient) -> None:
    """SIGTERM's drain closes the admission: creates held in its queue are
    answered 503 then, not after ``build_backlog_wait``."""
    image = await upload_image(demo)
    release = asyncio.Event()
    (driver,) = fake_drivers(cloud).values()
    driver.faults["spawn"].append(hold(release))
    admission = cloud.app.state.compute_api.admission
    creates = [asyncio.ensure_future(demo.post(SERVERS, json=server_body(image, name=f"w{i}")))
               for i in range(5)]
    for _ in range(3000):
        if admission.waiting >= 2:
            break
        await asyncio.sleep(0.01)
    assert admission.waiting >= 2
    admission.close()
    answers = await asyncio.wait_for(asyncio.gather(*creates), timeout=30)
    refused = [r for r in answers if r.status_code == 503]
    assert len(refused) >= 2, [r.status_code for r in answers]
    assert all("shutting down" in r.json()["serviceUnavailable"]["message"] for r in refused)
    assert {r.status_code for r in answers} <= {202, 503}
    release.set()
