"""``/os-aggregates`` through HTTP: Nova's wire format, rules and errors, and
the zones aggregates give their hosts (zone listings, services, servers)."""
from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.functional.servers import create_server, server_body, upload_image, wait_for_status

AGG = "/compute/v2.1/os-aggregates"
V241 = {"OpenStack-API-Version": "compute 2.41"}
NOVA_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$")


async def make(admin: httpx.AsyncClient, name: str, zone: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if zone is not None:
        body["availability_zone"] = zone
    resp = await admin.post(AGG, json={"aggregate": body})
    assert resp.status_code == 200, resp.text
    return resp.json()["aggregate"]


async def act(admin: httpx.AsyncClient, agg_id: int, body: dict[str, Any],
              status: int = 200) -> dict[str, Any]:
    resp = await admin.post(f"{AGG}/{agg_id}/action", json=body, headers=V241)
    assert resp.status_code == status, resp.text
    return resp.json()


async def zone_of_service(admin: httpx.AsyncClient, host: str) -> str:
    services = (await admin.get("/compute/v2.1/os-services")).json()["services"]
    return next(s["zone"] for s in services if s["host"] == host and s["binary"] == "nova-compute")


async def test_create_show_list_update_delete_as_nova_shows_them(admin: httpx.AsyncClient) -> None:
    created = await make(admin, "rack1", zone="london")
    assert set(created) == {"availability_zone", "created_at", "deleted", "deleted_at", "id",
                            "name", "updated_at"}  # no hosts, metadata or uuid before 2.41
    assert created["availability_zone"] == "london" and created["deleted"] is False
    assert NOVA_TIME.match(created["created_at"]) and created["updated_at"] is None
    agg_id = created["id"]

    shown = (await admin.get(f"{AGG}/{agg_id}", headers=V241)).json()["aggregate"]
    assert shown["hosts"] == [] and shown["metadata"] == {"availability_zone": "london"}
    assert re.fullmatch(r"[0-9a-f-]{36}", shown["uuid"])
    listed = (await admin.get(AGG)).json()["aggregates"]
    assert [a["name"] for a in listed] == ["rack1"] and "uuid" not in listed[0]

    resp = await admin.put(f"{AGG}/{agg_id}", json={"aggregate": {"name": "rack-one",
                                                                  "availability_zone": "paris"}})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["aggregate"]
    assert (updated["name"], updated["availability_zone"]) == ("rack-one", "paris")
    assert NOVA_TIME.match(updated["updated_at"])

    resp = await admin.delete(f"{AGG}/{agg_id}")
    assert resp.status_code == 200 and resp.content == b""
    assert (await admin.get(f"{AGG}/{agg_id}")).status_code == 404


@pytest.mark.parametrize("body", [
    {"aggregate": {"name": ""}},
    {"aggregate": {"name": "x" * 256}},
    {"aggregate": {"name": " padded"}},
    {"aggregate": {"name": "ok", "availability_zone": "a:b"}},
    {"aggregate": {"name": "ok", "availability_zone": ""}},
    {"aggregate": {"name": "ok", "extra": 1}},
    {"aggregate": {}},
    {"aggregate": "rack"},
    {"name": "ok"},
])
async def test_create_bodies_outside_the_schema_are_400(admin: httpx.AsyncClient,
                                                        body: dict[str, Any]) -> None:
    resp = await admin.post(AGG, json=body)
    assert resp.status_code == 400, resp.text


async def test_errors_as_nova(admin: httpx.AsyncClient) -> None:
    agg = await make(admin, "rack")
    assert (await admin.post(AGG, json={"aggregate": {"name": "rack"}})).status_code == 409
    other = await make(admin, "other")
    resp = await admin.put(f"{AGG}/{other['id']}", json={"aggregate": {"name": "rack"}})
    assert resp.status_code == 409
    assert (await admin.put(f"{AGG}/{agg['id']}", json={"aggregate": {}})).status_code == 400
    assert (await admin.get(f"{AGG}/999")).status_code == 404
    assert (await admin.get(f"{AGG}/not-a-number")).status_code == 400
    assert (await admin.get(f"{AGG}/{'9' * 40}")).status_code == 404
    assert (await admin.delete(f"{AGG}/999")).status_code == 404
    await act(admin, 999, {"add_host": {"host": "compute1"}}, 404)
    await act(admin, agg["id"], {"add_host": {"host": "nowhere"}}, 404)
    await act(admin, agg["id"], {"add_host": {"host": "bad host!"}}, 400)
    await act(admin, agg["id"], {"add_host": {"host": "compute1", "x": 1}}, 400)
    await act(admin, agg["id"], {"remove_host": {"host": "compute1"}}, 404)
    await act(admin, agg["id"], {"reboot": {}}, 400)
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"bad/key": "v"}}}, 400)
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"k": 5}}}, 400)

    await act(admin, agg["id"], {"add_host": {"host": "compute1"}})
    await act(admin, agg["id"], {"add_host": {"host": "compute1"}}, 409)  # there already
    resp = await admin.delete(f"{AGG}/{agg['id']}")
    assert resp.status_code == 400 and "not empty" in resp.text  # Nova: 400, not 409
    done = await act(admin, agg["id"], {"remove_host": {"host": "compute1"}})
    assert done["aggregate"]["hosts"] == []
    assert (await admin.delete(f"{AGG}/{agg['id']}")).status_code == 200


async def test_set_metadata_sets_and_removes_keys(admin: httpx.AsyncClient) -> None:
    agg = await make(admin, "meta")
    out = await act(admin, agg["id"], {"set_metadata": {"metadata": {"ssd": "true", "k": "v"}}})
    assert out["aggregate"]["metadata"] == {"ssd": "true", "k": "v"}
    out = await act(admin, agg["id"], {"set_metadata": {"metadata": {"k": None, "gone": None}}})
    assert out["aggregate"]["metadata"] == {"ssd": "true"}
    assert out["aggregate"]["availability_zone"] is None
    out = await act(admin, agg["id"], {"set_metadata": {"metadata": {"availability_zone": "z9"}}})
    assert out["aggregate"]["availability_zone"] == "z9"
    # An empty zone name is refused (400), as is a zone unset by update.
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"availability_zone": None}}}, 400)
    resp = await admin.put(f"{AGG}/{agg['id']}", json={"aggregate": {"availability_zone": None}})
    assert resp.status_code == 400


async def test_a_host_is_in_one_zone(admin: httpx.AsyncClient) -> None:
    east = await make(admin, "east", zone="east")
    west = await make(admin, "west", zone="west")
    plain = await make(admin, "plain")
    await act(admin, east["id"], {"add_host": {"host": "compute1"}})
    error = await act(admin, west["id"], {"add_host": {"host": "compute1"}}, 409)
    assert "['east']" in error["conflictingRequest"]["message"]
    await act(admin, plain["id"], {"add_host": {"host": "compute1"}})  # no zone: no conflict
    # Giving a zone to an aggregate whose host has another: 400 (set_metadata, update).
    await act(admin, plain["id"], {"set_metadata": {"metadata": {"availability_zone": "x"}}}, 400)
    resp = await admin.put(f"{AGG}/{plain['id']}", json={"aggregate": {"availability_zone": "x"}})
    assert resp.status_code == 400
    # The same zone is no conflict.
    await act(admin, plain["id"], {"set_metadata": {"metadata": {"availability_zone": "east"}}})


async def test_zones_follow_aggregates(admin: httpx.AsyncClient) -> None:
    assert await zone_of_service(admin, "compute2") == "nova"
    agg = await make(admin, "z", zone="az1")
    await act(admin, agg["id"], {"add_host": {"host": "compute2"}})
    assert await zone_of_service(admin, "compute2") == "az1"
    assert await zone_of_service(admin, "compute1") == "nova"
    zones = (await admin.get("/compute/v2.1/os-availability-zone")).json()
    assert {z["zoneName"] for z in zones["availabilityZoneInfo"]} >= {"az1", "nova"}
    detail = (await admin.get("/compute/v2.1/os-availability-zone/detail")).json()
    az1 = next(z for z in detail["availabilityZoneInfo"] if z["zoneName"] == "az1")
    assert list(az1["hosts"]) == ["compute2"]
    # Renaming the zone moves the host along; leaving the aggregate, back to the default.
    await admin.put(f"{AGG}/{agg['id']}", json={"aggregate": {"availability_zone": "az2"}})
    assert await zone_of_service(admin, "compute2") == "az2"
    await act(admin, agg["id"], {"remove_host": {"host": "compute2"}})
    assert await zone_of_service(admin, "compute2") == "nova"


@pytest.mark.parametrize("settings_overrides", [{"scheduler_cache_seconds": 0.0}])
async def test_servers_land_in_their_zone_and_show_it(admin: httpx.AsyncClient,
                                                      demo: httpx.AsyncClient) -> None:
    agg = await make(admin, "z", zone="az1")
    await act(admin, agg["id"], {"add_host": {"host": "compute2"}})
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image, name="in-az1", availability_zone="az1"))
    shown = await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert shown["OS-EXT-AZ:availability_zone"] == "az1"
    as_admin = (await admin.get(f"/compute/v2.1/servers/{server['id']}")).json()["server"]
    assert as_admin["OS-EXT-SRV-ATTR:host"] == "compute2"

    # No zone asked: any host, and the server shows its host's zone.
    for i in range(4):
        other = await create_server(demo, server_body(image, name=f"any{i}"))
        shown = await wait_for_status(demo, other["id"], {"ACTIVE"})
        host = (await admin.get(f"/compute/v2.1/servers/{other['id']}")).json()["server"][
            "OS-EXT-SRV-ATTR:host"]
        assert shown["OS-EXT-AZ:availability_zone"] == ("az1" if host == "compute2" else "nova")

    resp = await demo.post("/compute/v2.1/servers",
                           json=server_body(image, name="nowhere", availability_zone="nozone"))
    assert resp.status_code == 400, resp.text

    # compute2 has instances now: its zone may not change under them (409 / 400).
    plain = await make(admin, "plain", zone="az9")
    await act(admin, plain["id"], {"add_host": {"host": "compute2"}}, 409)
    await act(admin, agg["id"], {"remove_host": {"host": "compute2"}}, 409)
    await act(admin, agg["id"], {"set_metadata": {"metadata": {"availability_zone": "b"}}}, 400)


async def test_deleting_a_compute_service_takes_its_host_out(admin: httpx.AsyncClient) -> None:
    agg = await make(admin, "z", zone="az1")
    await act(admin, agg["id"], {"add_host": {"host": "compute2"}})
    services = (await admin.get("/compute/v2.1/os-services")).json()["services"]
    service = next(s for s in services if s["host"] == "compute2" and s["binary"] == "nova-compute")
    assert (await admin.delete(f"/compute/v2.1/os-services/{service['id']}")).status_code == 204
    shown = (await admin.get(f"{AGG}/{agg['id']}")).json()["aggregate"]
    assert shown["hosts"] == []


async def test_only_admins(demo: httpx.AsyncClient, admin: httpx.AsyncClient) -> None:
    agg = await make(admin, "mine")
    for method, url, body in (("GET", AGG, None), ("POST", AGG, {"aggregate": {"name": "x"}}),
                              ("GET", f"{AGG}/{agg['id']}", None),
                              ("DELETE", f"{AGG}/{agg['id']}", None),
                              ("POST", f"{AGG}/{agg['id']}/action",
                               {"add_host": {"host": "compute1"}})):
        resp = await demo.request(method, url, json=body)
        assert resp.status_code == 403, (method, url, resp.text)
