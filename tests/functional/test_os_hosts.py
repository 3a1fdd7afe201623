"""os-hosts over HTTP (2.1–2.42): the contracts of Tempest's hosts tests and
Nova's answers — the enabled services by zone, a compute host's resources,
enable/disable, and 501 for what no driver does."""
from __future__ import annotations

import httpx
import pytest

from tests.functional.servers import active_server

HOSTS = "/compute/v2.1/os-hosts"


def at(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def _hosts(admin: httpx.AsyncClient, **params: str) -> list[dict[str, str]]:
    resp = await admin.get(HOSTS, params=params)
    assert resp.status_code == 200, resp.text
    return list(resp.json()["hosts"])


async def test_list_shows_each_service_with_its_topic_and_zone(admin: httpx.AsyncClient) -> None:
    hosts = await _hosts(admin)
    assert all(set(h) == {"host_name", "service", "zone"} for h in hosts)
    computes = [h for h in hosts if h["service"] == "compute"]
    assert len(computes) >= 2 and all(h["zone"] == "nova" for h in computes)
    others = [h for h in hosts if h["service"] != "compute"]
    assert others and all(h["zone"] == "internal" for h in others)


@pytest.mark.parametrize("zone, expect", [("nova", {"compute"}), ("", None), ("xxx", set())])
async def test_zone_filter(admin: httpx.AsyncClient, zone: str, expect: set[str] | None) -> None:
    everything = await _hosts(admin)
    found = await _hosts(admin, zone=zone)
    if expect is None:  # a blank zone filters nothing (Nova)
        assert found == everything
    else:
        assert {h["service"] for h in found} == expect
        assert all(h in everything for h in found)


async def test_a_disabled_host_leaves_the_list_until_enabled(admin: httpx.AsyncClient) -> None:
    name = next(h["host_name"] for h in await _hosts(admin) if h["service"] == "compute")
    resp = await admin.put(f"{HOSTS}/{name}", json={"status": "Disable"})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"host": name, "status": "disabled"}
    assert name not in {h["host_name"] for h in await _hosts(admin) if h["service"] == "compute"}
    services = (await admin.get("/compute/v2.1/os-services", params={"host": name})).json()
    assert [s["status"] for s in services["services"]] == ["disabled"]
    resp = await admin.put(f"{HOSTS}/{name}", json={"status": "ENABLE"})
    assert resp.json() == {"host": name, "status": "enabled"}
    assert name in {h["host_name"] for h in await _hosts(admin)}


async def test_show_sums_the_instances_on_the_host(admin: httpx.AsyncClient,
                                                  demo: httpx.AsyncClient) -> None:
    server_id = await active_server(demo)
    server = (await admin.get(f"/compute/v2.1/servers/{server_id}")).json()["server"]
    host, project = server["OS-EXT-SRV-ATTR:host"], server["tenant_id"]
    flavor = (await admin.get("/compute/v2.1/flavors/1")).json()["flavor"]
    resp = await admin.get(f"{HOSTS}/{host}")
    assert resp.status_code == 200, resp.text
    rows = {r["resource"]["project"]: r["resource"] for r in resp.json()["host"]}
    assert list(rows)[:3] == ["(total)", "(used_now)", "(used_max)"]
    assert all(set(r) == {"host", "project", "cpu", "memory_mb", "disk_gb"} and r["host"] == host
               for r in rows.values())
    used = {"cpu": flavor["vcpus"], "memory_mb": flavor["ram"],
            "disk_gb": flavor["disk"] + flavor["OS-FLV-EXT-DATA:ephemeral"]}
    assert {k: rows["(used_max)"][k] for k in used} == used
    assert {k: rows[project][k] for k in used} == used
    assert rows["(total)"]["cpu"] >= rows["(used_now)"]["cpu"] >= flavor["vcpus"]


async def test_show_of_a_compute_host_without_instances(admin: httpx.AsyncClient) -> None:
    name = next(h["host_name"] for h in await _hosts(admin) if h["service"] == "compute")
    rows = (await admin.get(f"{HOSTS}/{name}")).json()["host"]
    assert [r["resource"]["project"] for r in rows][:3] == ["(total)", "(used_now)", "(used_max)"]


@pytest.mark.parametrize("body", [
    {"status": "invalid", "maintenance_mode": "enable"},
    {"status": "enable", "maintenance_mode": "invalid"},
    {"status": None, "maintenance_mode": None},
    {}, {"status": "enable", "other": 1}, ["status"], {"status": 1}])
async def test_update_refuses_a_bad_body(admin: httpx.AsyncClient, body: object) -> None:
    name = next(h["host_name"] for h in await _hosts(admin) if h["service"] == "compute")
    resp = await admin.put(f"{HOSTS}/{name}", json=body)
    assert resp.status_code == 400, resp.text
    assert "badRequest" in resp.json()


async def test_maintenance_mode_is_not_implemented_and_changes_nothing(
        admin: httpx.AsyncClient) -> None:
    name = next(h["host_name"] for h in await _hosts(admin) if h["service"] == "compute")
    resp = await admin.put(f"{HOSTS}/{name}", json={"status": "disable",
                                                    "maintenance_mode": "enable"})
    assert resp.status_code == 501, resp.text
    assert resp.json()["notImplemented"]["code"] == 501
    assert name in {h["host_name"] for h in await _hosts(admin)}


@pytest.mark.parametrize("action", ["reboot", "shutdown", "startup"])
async def test_power_actions(admin: httpx.AsyncClient, action: str) -> None:
    name = next(h["host_name"] for h in await _hosts(admin) if h["service"] == "compute")
    assert (await admin.get(f"{HOSTS}/{name}/{action}")).status_code == 501
    missing = await admin.get(f"{HOSTS}/nonexistent_hostname/{action}")
    assert missing.status_code == 404


@pytest.mark.parametrize("method, path, body", [
    ("GET", "/nonexistent_hostname", None),
    ("PUT", "/nonexistent_hostname", {"status": "enable", "maintenance_mode": "enable"})])
async def test_unknown_host_is_404(admin: httpx.AsyncClient, method: str, path: str,
                                   body: object) -> None:
    resp = await admin.request(method, HOSTS + path, json=body)
    assert resp.status_code == 404, resp.text
    assert resp.json()["itemNotFound"]["message"] == \
        "Compute host nonexistent_hostname could not be found."


async def test_a_service_host_that_runs_no_compute_is_404(admin: httpx.AsyncClient) -> None:
    other = next(h["host_name"] for h in await _hosts(admin) if h["service"] != "compute")
    computes = {h["host_name"] for h in await _hosts(admin) if h["service"] == "compute"}
    assert other not in computes
    assert (await admin.put(f"{HOSTS}/{other}", json={"status": "enable"})).status_code == 404


@pytest.mark.parametrize("method, path", [
    ("GET", ""), ("GET", "/compute1"), ("PUT", "/compute1"), ("GET", "/compute1/reboot"),
    ("GET", "/compute1/shutdown"), ("GET", "/compute1/startup")])
async def test_admin_only_and_gone_from_2_43(admin: httpx.AsyncClient, demo: httpx.AsyncClient,
                                           method: str, path: str) -> None:
    body = {"status": "enable"} if method == "PUT" else None
    assert (await demo.request(method, HOSTS + path, json=body)).status_code == 403
    gone = await admin.request(method, HOSTS + path, json=body, headers=at("2.43"))
    assert gone.status_code == 404, gone.text
    assert (await admin.get(HOSTS, headers=at("2.42"))).status_code == 200
