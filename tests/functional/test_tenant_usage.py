"""``os-simple-tenant-usage`` through HTTP: Nova's arithmetic and paging.

The servers are booted for real; their launch and end stamps are then set to
known times, so that the hours are exact."""
from __future__ import annotations

import datetime as dt
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import instances
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

USAGE = "/compute/v2.1/os-simple-tenant-usage"
DAY = "start=2026-01-01T00:00:00&end=2026-01-02T00:00:00"
T0 = dt.datetime(2026, 1, 1)


def v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def stamp(cloud: Cloud, uuid: str, launched: float, terminated: float | None) -> None:
    """Set the server's launch (and end) to T0 plus these hours."""
    values: dict[str, Any] = {"launched_at": T0 + dt.timedelta(hours=launched)}
    if terminated is not None:
        values["terminated_at"] = T0 + dt.timedelta(hours=terminated)
    assert cloud.db is not None
    await cloud.db.run(lambda conn: conn.execute(
        instances.update().where(instances.c.uuid == uuid).values(**values)))


@pytest.fixture
async def servers(cloud: Cloud, demo: httpx.AsyncClient) -> list[str]:
    """Two of demo's servers: one up all day, one from 06:00 to 08:00 (deleted)."""
    image = await upload_image(demo)
    ids = []
    for name in ("all-day", "two-hours"):
        server = await create_server(demo, server_body(image, name=name))
        await wait_for_status(demo, server["id"], {"ACTIVE"})
        ids.append(server["id"])
    assert (await demo.delete(f"/compute/v2.1/servers/{ids[1]}")).status_code == 204
    await wait_for_status(demo, ids[1], {"DELETED"})
    await stamp(cloud, ids[0], -5, None)
    await stamp(cloud, ids[1], 6, 8)
    return ids


async def project_of(client: httpx.AsyncClient) -> str:
    return (await client.get("/identity/v3/auth/projects")).json()["projects"][0]["id"]


async def test_usage_over_a_day(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                servers: list[str]) -> None:
    project = await project_of(demo)
    resp = await admin.get(f"{USAGE}?{DAY}&detailed=1")
    assert resp.status_code == 200, resp.text
    [usage] = resp.json()["tenant_usages"]
    assert usage["tenant_id"] == project
    assert (usage["start"], usage["stop"]) == ("2026-01-01T00:00:00.000000",
                                               "2026-01-02T00:00:00.000000")
    assert usage["total_hours"] == 26.0  # 24 + 2
    assert usage["total_vcpus_usage"] == 26.0  # m1.tiny: 1 vCPU, 512 MiB, 1 GiB
    assert usage["total_memory_mb_usage"] == 512 * 26.0
    assert usage["total_local_gb_usage"] == 26.0
    by_id = {s["instance_id"]: s for s in usage["server_usages"]}
    all_day, two_hours = by_id[servers[0]], by_id[servers[1]]
    assert set(all_day) == {"hours", "flavor", "instance_id", "name", "tenant_id", "memory_mb",
                            "local_gb", "vcpus", "started_at", "ended_at", "state", "uptime"}
    assert (all_day["hours"], all_day["state"], all_day["ended_at"]) == (24.0, "active", None)
    assert all_day["flavor"] == "m1.tiny" and all_day["started_at"] == "2025-12-31T19:00:00.000000"
    assert (two_hours["hours"], two_hours["state"]) == (2.0, "terminated")
    assert two_hours["ended_at"] == "2026-01-01T08:00:00.000000"
    assert two_hours["uptime"] == 7200

    brief = (await admin.get(f"{USAGE}?{DAY}")).json()["tenant_usages"][0]
    assert "server_usages" not in brief and brief["total_hours"] == 26.0
    # A window the servers ran only partly in: clipped to it.
    part = (await admin.get(f"{USAGE}?start=2026-01-01T07:00:00&end=2026-01-01T10:00:00"))
    assert part.json()["tenant_usages"][0]["total_hours"] == 4.0  # 3 + 1
    # Before anything ran: no usage.
    none = await admin.get(f"{USAGE}?start=2025-01-01T00:00:00&end=2025-01-02T00:00:00")
    assert none.json() == {"tenant_usages": []}


async def test_a_project_reads_its_own(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                       servers: list[str]) -> None:
    project = await project_of(demo)
    started = time.monotonic()
    mine = await demo.get(f"{USAGE}/{project}?{DAY}")
    assert mine.status_code == 200, mine.text
    usage = mine.json()["tenant_usage"]
    assert usage["total_hours"] == 26.0 and len(usage["server_usages"]) == 2
    theirs = (await admin.get(f"{USAGE}/{project}?{DAY}")).json()
    elapsed = time.monotonic() - started
    # A running server's uptime counts to the request's second: the admin's
    # read may come a second boundary later.
    for seen_by_admin, seen_by_demo in zip(theirs["tenant_usage"]["server_usages"],
                                           usage["server_usages"]):
        later = seen_by_admin.pop("uptime") - seen_by_demo.pop("uptime")
        assert 0 <= later <= elapsed + 1
    assert theirs == {"tenant_usage": usage}
    assert (await demo.get(f"{USAGE}/someone-else?{DAY}")).status_code == 403
    assert (await demo.get(f"{USAGE}?{DAY}")).status_code == 403
    empty = await admin.get(f"{USAGE}/{await project_of(admin)}?{DAY}")
    assert empty.json() == {"tenant_usage": {}}


async def test_paging_from_2_40(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                servers: list[str]) -> None:
    project = await project_of(demo)
    first = await admin.get(f"{USAGE}?{DAY}&detailed=1&limit=1", headers=v("2.40"))
    body = first.json()
    [usage] = body["tenant_usages"]
    assert len(usage["server_usages"]) == 1 and usage["total_hours"] in (24.0, 2.0)
    [link] = body["tenant_usages_links"]
    assert link["rel"] == "next"
    url = urlsplit(link["href"])
    assert url.path == "/compute/v2.1/os-simple-tenant-usage"
    query = parse_qs(url.query)
    assert query["marker"] == [usage["server_usages"][0]["instance_id"]]
    assert query["limit"] == ["1"] and query["detailed"] == ["1"]
    second = (await admin.get(f"{USAGE}?{url.query}", headers=v("2.40"))).json()
    seen = {usage["server_usages"][0]["instance_id"],
            second["tenant_usages"][0]["server_usages"][0]["instance_id"]}
    assert seen == set(servers)
    # A last page shorter than the limit has no link; before 2.40 there is none at all.
    last = (await admin.get(f"{USAGE}?{DAY}&limit=5", headers=v("2.40"))).json()
    assert "tenant_usages_links" not in last
    for limit in ("0" * 20 + "1", "9" * 5000):  # leading zeros; far above the most
        page = (await admin.get(f"{USAGE}?{DAY}&limit={limit}&detailed=1", headers=v("2.40")))
        assert page.status_code == 200, page.text
        count = len(page.json()["tenant_usages"][0]["server_usages"])
        assert count == (1 if limit.endswith("1") else 2)
    empty = (await admin.get(f"{USAGE}?{DAY}&limit=0", headers=v("2.40"))).json()
    assert empty == {"tenant_usages": []}
    old = (await admin.get(f"{USAGE}?{DAY}&limit=1")).json()
    assert "tenant_usages_links" not in old and old["tenant_usages"][0]["total_hours"] == 26.0
    shown = (await demo.get(f"{USAGE}/{project}?{DAY}&limit=1", headers=v("2.40"))).json()
    assert shown["tenant_usage_links"][0]["href"].split("?")[0].endswith(
        f"/os-simple-tenant-usage/{project}")


@pytest.mark.parametrize("query, version", [
    ("start=2026-01-02T00:00:00&end=2026-01-01T00:00:00", "2.1"),  # start after end
    ("start=yesterday", "2.1"),
    ("start=2026-01-01", "2.1"),
    (f"{DAY}&marker=00000000-0000-0000-0000-000000000000", "2.40"),
    (f"{DAY}&limit=-1", "2.40"),
    (f"{DAY}&limit=many", "2.40"),
    (f"{DAY}&colour=blue", "2.75"),
])
async def test_bad_queries_are_400(admin: httpx.AsyncClient, query: str, version: str) -> None:
    resp = await admin.get(f"{USAGE}?{query}", headers=v(version))
    assert resp.status_code == 400, resp.text


async def test_accepted_forms(admin: httpx.AsyncClient) -> None:
    for query, version in ((f"{DAY}&colour=blue", "2.74"),
                           ("start=2026-01-01T00:00:00.5&end=2026-01-01 10:00:00.000001", "2.1"),
                           ("", "2.1")):  # no window: from now to now, empty
        resp = await admin.get(f"{USAGE}?{query}", headers=v(version))
        assert resp.status_code == 200, resp.text


async def test_a_deleted_server_keeps_its_usage(admin: httpx.AsyncClient,
                                               demo: httpx.AsyncClient) -> None:
    """The delete marks the row (terminated_at, deleted_at), never removes it."""
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image, name="brief"))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    await demo.delete(f"/compute/v2.1/servers/{server['id']}")
    await wait_for_status(demo, server["id"], {"DELETED"})
    now = dt.datetime.utcnow()
    window = (f"start={(now - dt.timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%S')}"
              f"&end={(now + dt.timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%S')}")
    usage = (await admin.get(f"{USAGE}?{window}&detailed=1")).json()["tenant_usages"][0]
    [gone] = usage["server_usages"]
    assert gone["instance_id"] == server["id"] and gone["state"] == "terminated"
    assert gone["ended_at"] is not None and 0 <= gone["hours"] < 1
