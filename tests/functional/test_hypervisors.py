"""os-hypervisors over HTTP: uptime, search and servers (2.1–2.52), with_servers
(2.53), uptime in show (2.88) — the contracts of Tempest's hypervisor tests."""
from __future__ import annotations

import re
import time

import httpx
import pytest

from cirrus.virt.driver import uptime_line
from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

HYP = "/compute/v2.1/os-hypervisors"
UPTIME = re.compile(r"^ \d\d:\d\d:\d\d up .*load average: [\d.]+, [\d.]+, [\d.]+$")


def at(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def _hypervisors(admin: httpx.AsyncClient, version: str = "2.1") -> list[dict]:
    resp = await admin.get(HYP, headers=at(version))
    assert resp.status_code == 200, resp.text
    return sorted(resp.json()["hypervisors"], key=lambda h: h["hypervisor_hostname"])


async def test_uptime_until_2_87_then_in_show(admin: httpx.AsyncClient) -> None:
    first = (await _hypervisors(admin))[0]
    resp = await admin.get(f"{HYP}/{first['id']}/uptime")
    assert resp.status_code == 200, resp.text
    body = resp.json()["hypervisor"]
    assert set(body) == {"id", "hypervisor_hostname", "state", "status", "uptime"}
    assert UPTIME.match(body["uptime"]), body["uptime"]
    assert (await admin.get(f"{HYP}/{first['id']}/uptime", headers=at("2.87"))).status_code == 200
    new = (await _hypervisors(admin, "2.88"))[0]
    assert (await admin.get(f"{HYP}/{new['id']}/uptime", headers=at("2.88"))).status_code == 404
    shown = (await admin.get(f"{HYP}/{new['id']}", headers=at("2.88"))).json()["hypervisor"]
    assert UPTIME.match(shown["uptime"])


async def test_uptime_of_a_down_host_is_400_and_none_in_show(admin: httpx.AsyncClient) -> None:
    services = (await admin.get("/compute/v2.1/os-services", headers=at("2.53"),
                                params={"binary": "nova-compute"})).json()["services"]
    target = next(s for s in services if s["host"] == "compute1")
    forced = await admin.put(f"/compute/v2.1/os-services/{target['id']}", headers=at("2.53"),
                             json={"forced_down": True})
    assert forced.status_code == 200, forced.text
    hyp = next(h for h in await _hypervisors(admin) if h["hypervisor_hostname"] == "compute1")
    down = await admin.get(f"{HYP}/{hyp['id']}/uptime")
    assert down.status_code == 400 and "compute1" in down.json()["badRequest"]["message"]
    new = next(h for h in await _hypervisors(admin, "2.88") if h["hypervisor_hostname"] == "compute1")
    shown = (await admin.get(f"{HYP}/{new['id']}", headers=at("2.88"))).json()["hypervisor"]
    assert shown["uptime"] is None


async def test_uptime_needs_admin_and_a_hypervisor(admin: httpx.AsyncClient,
                                                   demo: httpx.AsyncClient) -> None:
    first = (await _hypervisors(admin))[0]
    assert (await demo.get(f"{HYP}/{first['id']}/uptime")).status_code == 403
    assert (await admin.get(f"{HYP}/999999/uptime")).status_code == 404


@pytest.mark.parametrize("pattern, hosts", [("compute", ["compute1", "compute2"]),
                                            ("compute2", ["compute2"]), ("ute1", ["compute1"])])
async def test_search(admin: httpx.AsyncClient, pattern: str, hosts: list[str]) -> None:
    resp = await admin.get(f"{HYP}/{pattern}/search")
    assert resp.status_code == 200, resp.text
    found = resp.json()["hypervisors"]
    assert sorted(h["hypervisor_hostname"] for h in found) == hosts
    assert all(set(h) == {"id", "hypervisor_hostname", "state", "status"} for h in found)


async def test_search_and_servers_are_gone_at_2_53_and_404_without_a_match(
        admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    for verb in ("search", "servers"):
        assert (await admin.get(f"{HYP}/nope/{verb}")).status_code == 404
        assert (await admin.get(f"{HYP}/compute/{verb}", headers=at("2.53"))).status_code == 404
        assert (await demo.get(f"{HYP}/compute/{verb}")).status_code == 403


async def _boot(demo: httpx.AsyncClient) -> dict:
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image))
    return await wait_for_status(demo, server["id"], {"ACTIVE"})


async def test_servers_on_hypervisors(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    server = await _boot(demo)
    node = (await admin.get(f"/compute/v2.1/servers/{server['id']}")).json()["server"][
        "OS-EXT-SRV-ATTR:hypervisor_hostname"]
    resp = await admin.get(f"{HYP}/compute/servers")
    assert resp.status_code == 200, resp.text
    by_name = {h["hypervisor_hostname"]: h for h in resp.json()["hypervisors"]}
    assert [s["uuid"] for s in by_name[node]["servers"]] == [server["id"]]
    assert re.fullmatch(r"instance-[0-9a-f]{8}", by_name[node]["servers"][0]["name"])
    other = next(name for name in by_name if name != node)
    assert "servers" not in by_name[other]  # Nova leaves the key out when there are none


async def test_with_servers_from_2_53(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    server = await _boot(demo)
    for path in (HYP, f"{HYP}/detail"):
        listed = (await admin.get(path, params={"with_servers": "true"},
                                  headers=at("2.53"))).json()["hypervisors"]
        assert sum(len(h.get("servers", [])) for h in listed) == 1
        assert any("servers" not in h for h in listed)
        always = (await admin.get(path, params={"with_servers": "1"},
                                  headers=at("2.75"))).json()["hypervisors"]
        assert all("servers" in h for h in always)
        without = (await admin.get(path, headers=at("2.75"))).json()["hypervisors"]
        assert all("servers" not in h for h in without)
    hyp = next(h for h in listed if h.get("servers"))
    shown = await admin.get(f"{HYP}/{hyp['id']}", params={"with_servers": "yes"},
                            headers=at("2.53"))
    assert shown.json()["hypervisor"]["servers"][0]["uuid"] == server["id"]
    bad = await admin.get(HYP, params={"with_servers": "maybe"}, headers=at("2.53"))
    assert bad.status_code == 400


async def test_hostname_pattern_from_2_53(admin: httpx.AsyncClient) -> None:
    found = await admin.get(HYP, params={"hypervisor_hostname_pattern": "compute2"},
                            headers=at("2.53"))
    assert [h["hypervisor_hostname"] for h in found.json()["hypervisors"]] == ["compute2"]
    none = await admin.get(HYP, params={"hypervisor_hostname_pattern": "nope"}, headers=at("2.53"))
    assert none.status_code == 404


NOON = time.struct_time((2026, 1, 1, 12, 0, 5, 3, 1, 0))


@pytest.mark.parametrize("seconds, expected", [
    (59, " 12:00:05 up  0:00,  0 users,  load average: 0.50, 0.25, 0.00"),
    (3 * 3600 + 7 * 60, " 12:00:05 up  3:07,  0 users,  load average: 0.50, 0.25, 0.00"),
    (86400 + 61, " 12:00:05 up 1 day,  0:01,  0 users,  load average: 0.50, 0.25, 0.00"),
    (3 * 86400 + 14 * 3600, " 12:00:05 up 3 days, 14:00,  0 users,  load average: 0.50, 0.25, 0.00"),
])
def test_uptime_line(seconds: float, expected: str) -> None:
    assert uptime_line(seconds, (0.5, 0.25, 0.0), NOON) == expected
