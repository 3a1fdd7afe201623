"""``PUT /servers/{id}`` and ``/servers/{id}/ips`` as Nova answers them, per
microversion (its api-samples for 2.1, 2.19, 2.47, 2.71, 2.75, 2.90;
issue #19)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.servers import (active_server, create_server, server_body, upload_image,
                                      wait_for_status)

SERVERS = "/compute/v2.1/servers"

# The keys of Nova's update response at 2.1 (server-update-resp.json), and
# those each later microversion adds before 2.75 shows the whole server.
BASIC = {"OS-DCF:diskConfig", "accessIPv4", "accessIPv6", "addresses", "created", "flavor",
         "hostId", "id", "image", "links", "metadata", "name", "progress", "status",
         "tenant_id", "updated", "user_id"}
ADDED = [((2, 9), "locked"), ((2, 19), "description"), ((2, 26), "tags"),
         ((2, 63), "trusted_image_certificates"), ((2, 71), "server_groups"),
         ((2, 73), "locked_reason")]


def _v(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


def _expected_keys(version: tuple[int, int]) -> set[str]:
    return BASIC | {key for since, key in ADDED if version >= since}


@pytest.fixture
async def active(demo: httpx.AsyncClient) -> str:
    return await active_server(demo, name="before")


async def _put(client: httpx.AsyncClient, server: str, body: Any, version: str) -> httpx.Response:
    return await client.put(f"{SERVERS}/{server}", json=body, headers=_v(version))


@pytest.mark.parametrize("version", ["2.1", "2.9", "2.19", "2.26", "2.47", "2.63", "2.71",
                                     "2.73", "2.74"])
async def test_below_2_75_the_answer_is_the_basic_view(demo: httpx.AsyncClient, active: str,
                                                       version: str) -> None:
    resp = await _put(demo, active, {"server": {"name": "after"}}, version)
    assert resp.status_code == 200, resp.text
    server = resp.json()["server"]
    parsed = tuple(int(p) for p in version.split("."))
    assert set(server) == _expected_keys((parsed[0], parsed[1]))
    assert server["name"] == "after" and server["id"] == active
    for found in server["addresses"].values():
        assert all(set(a) == {"version", "addr"} for a in found)
    flavor = server["flavor"]
    assert ("original_name" in flavor) == (parsed >= (2, 47)) and ("id" in flavor) != ("original_name" in flavor)


@pytest.mark.parametrize("version", ["2.75", "2.89", "2.90"])
async def test_from_2_75_the_answer_is_the_whole_server(demo: httpx.AsyncClient, active: str,
                                                        version: str) -> None:
    resp = await _put(demo, active, {"server": {"name": "after"}}, version)
    assert resp.status_code == 200, resp.text
    shown = (await demo.get(f"{SERVERS}/{active}", headers=_v(version))).json()["server"]
    updated = resp.json()["server"]
    assert set(updated) == set(shown) and "server_groups" in updated
    assert {k: v for k, v in updated.items() if k != "updated"} == \
        {k: v for k, v in shown.items() if k != "updated"}
    assert any("OS-EXT-IPS:type" in a for found in updated["addresses"].values() for a in found)


async def test_name_access_ips_description_and_hostname(demo: httpx.AsyncClient,
                                                        active: str) -> None:
    body = {"server": {"name": "renamed", "accessIPv4": "192.0.2.7", "accessIPv6": "2001:db8::7",
                       "description": "the web server", "OS-DCF:diskConfig": "AUTO"}}
    server = (await _put(demo, active, body, "2.19")).json()["server"]
    assert (server["name"], server["accessIPv4"], server["accessIPv6"], server["description"]) \
        == ("renamed", "192.0.2.7", "2001:db8::7", "the web server")
    shown = (await demo.get(f"{SERVERS}/{active}", headers=_v("2.19"))).json()["server"]
    assert (shown["name"], shown["description"]) == ("renamed", "the web server")
    cleared = await _put(demo, active, {"server": {"description": None}}, "2.19")
    assert cleared.json()["server"]["description"] is None
    server = (await _put(demo, active, {"server": {"hostname": "web-01"}}, "2.90")).json()["server"]
    assert server["OS-EXT-SRV-ATTR:hostname"] == "web-01"
    assert server["name"] == "renamed"  # what the body does not name stays


@pytest.mark.parametrize("version,body,field", [
    ("2.1", {}, "server"), ("2.1", {"server": "x"}, "server"),
    ("2.1", {"server": {}, "extra": 1}, "body"),
    ("2.1", {"server": {"name": ""}}, "name"), ("2.1", {"server": {"name": " padded"}}, "name"),
    ("2.1", {"server": {"name": "x" * 256}}, "name"), ("2.1", {"server": {"name": 7}}, "name"),
    ("2.1", {"server": {"accessIPv4": "192.0.2"}}, "accessIPv4"),
    ("2.1", {"server": {"accessIPv4": "2001:db8::1"}}, "accessIPv4"),
    ("2.1", {"server": {"accessIPv6": "192.0.2.1"}}, "accessIPv6"),
    ("2.1", {"server": {"OS-DCF:diskConfig": "SOMETIMES"}}, "OS-DCF:diskConfig"),
    ("2.1", {"server": {"description": "d"}}, "server"),
    ("2.19", {"server": {"description": "x" * 256}}, "description"),
    ("2.89", {"server": {"hostname": "h"}}, "server"),
    ("2.90", {"server": {"hostname": "-bad-"}}, "hostname"),
    ("2.90", {"server": {"hostname": "h"}}, "hostname"),
    ("2.90", {"server": {"adminPass": "x"}}, "server"),
])
async def test_bodies_nova_refuses(demo: httpx.AsyncClient, active: str, version: str,
                                   body: Any, field: str) -> None:
    resp = await _put(demo, active, body, version)
    assert resp.status_code == 400, resp.text
    assert f"field/attribute {field}:" in resp.json()["badRequest"]["message"]
    shown = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert shown["name"] == "before"


async def test_unknown_and_other_peoples_servers(demo: httpx.AsyncClient, admin: httpx.AsyncClient,
                                                 active: str) -> None:
    missing = f"{SERVERS}/00000000-0000-4000-8000-000000000000"
    resp = await demo.put(missing, json={"server": {"name": "x"}})
    assert resp.status_code == 404
    # The admin may rename anyone's (Nova's PROJECT_MEMBER_OR_ADMIN).
    resp = await admin.put(f"{SERVERS}/{active}", json={"server": {"name": "by-admin"}})
    assert resp.status_code == 200 and resp.json()["server"]["name"] == "by-admin"


async def test_ips_are_the_views_addresses(demo: httpx.AsyncClient, active: str) -> None:
    server = (await demo.get(f"{SERVERS}/{active}")).json()["server"]
    assert server["addresses"], server
    resp = await demo.get(f"{SERVERS}/{active}/ips")
    assert resp.status_code == 200
    expected = {label: [{"version": a["version"], "addr": a["addr"]} for a in found]
                for label, found in server["addresses"].items()}
    assert resp.json() == {"addresses": expected}
    for label, found in expected.items():
        one = await demo.get(f"{SERVERS}/{active}/ips/{label}")
        assert one.status_code == 200 and one.json() == {label: found}


async def test_ips_of_an_unknown_network_or_server(demo: httpx.AsyncClient, active: str) -> None:
    resp = await demo.get(f"{SERVERS}/{active}/ips/no-such-net")
    assert resp.status_code == 404
    assert resp.json() == {"itemNotFound": {
        "code": 404, "message": "Instance is not a member of specified network"}}
    resp = await demo.get(f"{SERVERS}/00000000-0000-4000-8000-000000000000/ips")
    assert resp.status_code == 404


async def test_a_server_without_addresses_has_none(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    server = await create_server(demo, server_body(image, networks="none"), version="2.37")
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert (await demo.get(f"{SERVERS}/{server['id']}/ips")).json() == {"addresses": {}}


async def test_progress_shows_only_while_something_progresses(demo: httpx.AsyncClient) -> None:
    server = await active_server(demo)
    assert "progress" in (await demo.get(f"/compute/v2.1/servers/{server}")).json()["server"]
    await demo.post(f"/compute/v2.1/servers/{server}/action", json={"os-stop": None})
    stopped = await wait_for_status(demo, server, {"SHUTOFF"})
    assert "progress" not in stopped
    renamed = await demo.put(f"/compute/v2.1/servers/{server}",
                             json={"server": {"name": "still-off"}})
    assert "progress" not in renamed.json()["server"]
