"""Server tags (2.26): the tag routes, their rules and limits, tags in the
server view and at boot (2.52), the four listing filters, and tags going with
a deleted server (issue #19)."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.compute.models import tags as tags_table
from tests.functional.servers import (active_server, create_server, db_count, server_body,
                                      upload_image, wait_for_status)

SERVERS = "/compute/v2.1/servers"
V226 = {"OpenStack-API-Version": "compute 2.26"}


@pytest.fixture
async def image(demo: httpx.AsyncClient) -> str:
    return await upload_image(demo)


@pytest.fixture
async def active(demo: httpx.AsyncClient) -> str:
    return await active_server(demo, name="tagged")


async def _tags(client: httpx.AsyncClient, server: str) -> list[str]:
    resp = await client.get(f"{SERVERS}/{server}/tags", headers=V226)
    assert resp.status_code == 200, resp.text
    return resp.json()["tags"]


async def test_replace_add_check_remove_and_clear(demo: httpx.AsyncClient, active: str) -> None:
    url = f"{SERVERS}/{active}/tags"
    assert await _tags(demo, active) == []
    resp = await demo.put(url, json={"tags": ["b", "a", "b"]}, headers=V226)
    assert resp.status_code == 200 and resp.json() == {"tags": ["a", "b"]}
    resp = await demo.put(f"{url}/c", headers=V226)
    assert resp.status_code == 201, resp.text
    assert resp.headers["Location"].endswith(f"/compute/v2.1/servers/{active}/tags/c")
    assert resp.content == b""
    assert (await demo.put(f"{url}/c", headers=V226)).status_code == 204  # already there
    assert (await demo.get(f"{url}/c", headers=V226)).status_code == 204
    missing = await demo.get(f"{url}/zzz", headers=V226)
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == f"Server {active} has no tag 'zzz'"
    assert await _tags(demo, active) == ["a", "b", "c"]
    assert (await demo.delete(f"{url}/a", headers=V226)).status_code == 204
    assert (await demo.delete(f"{url}/a", headers=V226)).status_code == 404
    assert await _tags(demo, active) == ["b", "c"]
    assert (await demo.delete(url, headers=V226)).status_code == 204
    assert await _tags(demo, active) == []


@pytest.mark.parametrize("method,path", [("GET", "tags"), ("PUT", "tags"), ("DELETE", "tags"),
                                         ("GET", "tags/a"), ("PUT", "tags/a"),
                                         ("DELETE", "tags/a")])
async def test_before_2_26_there_are_no_tags(demo: httpx.AsyncClient, active: str, method: str,
                                             path: str) -> None:
    body = {"tags": ["a"]} if (method, path) == ("PUT", "tags") else None
    resp = await demo.request(method, f"{SERVERS}/{active}/{path}", json=body,
                              headers={"OpenStack-API-Version": "compute 2.25"})
    assert resp.status_code == 404, resp.text
    assert resp.json()["itemNotFound"]["message"] == "The resource could not be found."


@pytest.mark.parametrize("body,field", [
    ({}, "tags"), ({"tags": "a"}, "tags"), ({"tags": ["a"], "x": 1}, "tags"),
    ({"tags": [""]}, "tags/0"), ({"tags": ["a" * 61]}, "tags/0"), ({"tags": ["a,b"]}, "tags/0"),
    ({"tags": ["a/b"]}, "tags/0"), ({"tags": [1]}, "tags/0"), ({"tags": ["ok", None]}, "tags/1"),
    ({"tags": [f"t{i}" for i in range(51)]}, "tags"),
])
async def test_replacing_checks_every_tag(demo: httpx.AsyncClient, active: str,
                                          body: dict[str, Any], field: str) -> None:
    resp = await demo.put(f"{SERVERS}/{active}/tags", json=body, headers=V226)
    assert resp.status_code == 400, resp.text
    assert f"field/attribute {field}:" in resp.json()["badRequest"]["message"]
    assert await _tags(demo, active) == []


async def test_a_tag_in_the_path_is_checked_and_takes_no_body(demo: httpx.AsyncClient,
                                                              active: str) -> None:
    resp = await demo.put(f"{SERVERS}/{active}/tags/a,b", headers=V226)
    assert resp.status_code == 400
    assert "Tag 'a,b' is invalid" in resp.json()["badRequest"]["message"]
    resp = await demo.put(f"{SERVERS}/{active}/tags/{'x' * 61}", headers=V226)
    assert resp.status_code == 400
    resp = await demo.put(f"{SERVERS}/{active}/tags/a", json={"tag": "a"}, headers=V226)
    assert resp.status_code == 400
    resp = await demo.put(f"{SERVERS}/{active}/tags/a", content=b"null",
                          headers={**V226, "Content-Type": "application/json"})
    assert resp.status_code == 201, resp.text
    assert await _tags(demo, active) == ["a"]


async def test_a_tag_of_any_text_has_a_location(demo: httpx.AsyncClient, active: str) -> None:
    tag = "prod €uro ü"
    resp = await demo.put(f"{SERVERS}/{active}/tags/{tag}", headers=V226)
    assert resp.status_code == 201, resp.text
    assert resp.headers["Location"].endswith("/tags/prod%20%E2%82%ACuro%20%C3%BC")
    assert (await demo.get(f"{SERVERS}/{active}/tags/{tag}", headers=V226)).status_code == 204
    assert await _tags(demo, active) == [tag]


async def test_fifty_tags_at_most(demo: httpx.AsyncClient, active: str) -> None:
    fifty = [f"t{i:02}" for i in range(50)]
    resp = await demo.put(f"{SERVERS}/{active}/tags", json={"tags": fifty}, headers=V226)
    assert resp.status_code == 200 and resp.json()["tags"] == fifty
    for tag in ("new", "t00"):  # Nova refuses at the limit even a tag it has
        resp = await demo.put(f"{SERVERS}/{active}/tags/{tag}", headers=V226)
        assert resp.status_code == 400
        assert "per-server limit 50" in resp.json()["badRequest"]["message"]
    assert await _tags(demo, active) == fifty


async def test_a_building_server_cannot_be_tagged(cloud: Cloud, demo: httpx.AsyncClient,
                                                  image: str) -> None:
    from cirrus.compute import instance as inst

    server = await create_server(demo, server_body(image))
    await wait_for_status(demo, server["id"], {"ACTIVE"})
    assert cloud.db is not None
    await cloud.db.run(inst.save, server["id"], {"vm_state": "building"})
    for method, path in (("PUT", "tags/a"), ("DELETE", "tags/a"), ("DELETE", "tags")):
        resp = await demo.request(method, f"{SERVERS}/{server['id']}/{path}", headers=V226)
        assert resp.status_code == 409, resp.text
        assert "vm_state building" in resp.json()["conflictingRequest"]["message"]
    resp = await demo.put(f"{SERVERS}/{server['id']}/tags", json={"tags": ["a"]}, headers=V226)
    assert resp.status_code == 409
    assert await _tags(demo, server["id"]) == []  # reading is fine


async def test_the_server_view_shows_tags_from_2_26(demo: httpx.AsyncClient, active: str) -> None:
    await demo.put(f"{SERVERS}/{active}/tags", json={"tags": ["x", "y"]}, headers=V226)
    for version, expected in (("2.25", None), ("2.26", ["x", "y"])):
        headers = {"OpenStack-API-Version": f"compute {version}"}
        shown = (await demo.get(f"{SERVERS}/{active}", headers=headers)).json()["server"]
        listed = (await demo.get(f"{SERVERS}/detail", headers=headers)).json()["servers"][0]
        assert shown.get("tags") == expected and listed.get("tags") == expected


async def test_tags_given_at_boot(demo: httpx.AsyncClient, image: str) -> None:
    body = server_body(image, name="booted", tags=["web", "prod", "web"])
    server = await create_server(demo, body, version="2.52")
    assert await _tags(demo, server["id"]) == ["prod", "web"]
    resp = await demo.post(SERVERS, json=server_body(image, tags=["web"]),
                           headers={"OpenStack-API-Version": "compute 2.51"})
    assert resp.status_code == 400, resp.text
    resp = await demo.post(SERVERS, json=server_body(image, tags=["a/b"]),
                           headers={"OpenStack-API-Version": "compute 2.52"})
    assert resp.status_code == 400, resp.text


async def test_several_servers_booted_with_tags_each_have_them(
        demo: httpx.AsyncClient, image: str) -> None:
    body = server_body(image, name="many", tags=["fleet"], min_count=3)
    await create_server(demo, body, version="2.52")
    resp = await demo.get(f"{SERVERS}/detail", params={"tags": "fleet"}, headers=V226)
    assert sorted(s["name"] for s in resp.json()["servers"]) == ["many-1", "many-2", "many-3"]
    assert all(s["tags"] == ["fleet"] for s in resp.json()["servers"])


async def _names(client: httpx.AsyncClient, params: dict[str, str],
                 version: str = "2.26", path: str = "servers") -> list[str]:
    resp = await client.get(f"/compute/v2.1/{path}", params=params,
                            headers={"OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == 200, resp.text
    return sorted(s["name"] for s in resp.json()["servers"])


# Servers and their tags; each filter's answer.
FLEET = {"a": ["red"], "b": ["red", "blue"], "c": ["blue"], "d": []}
FILTERS = [
    ({"tags": "red"}, ["a", "b"]),
    ({"tags": "red,blue"}, ["b"]),
    ({"tags": "red,red"}, ["a", "b"]),
    ({"tags-any": "red,blue"}, ["a", "b", "c"]),
    ({"tags-any": "green"}, []),
    ({"not-tags": "red,blue"}, ["a", "c", "d"]),
    ({"not-tags": "red"}, ["c", "d"]),
    ({"not-tags-any": "red,blue"}, ["d"]),
    ({"not-tags-any": "blue"}, ["a", "d"]),
    ({"tags": "red", "not-tags-any": "blue"}, ["a"]),
    ({"tags-any": "red,blue", "not-tags": "red,blue"}, ["a", "c"]),
    ({"tags": ""}, ["a", "b", "c", "d"]),
]


@pytest.fixture
async def fleet(demo: httpx.AsyncClient, image: str) -> dict[str, str]:
    ids = {}
    for name, server_tags in FLEET.items():
        server = await create_server(demo, server_body(image, name=name, tags=server_tags),
                                     version="2.52")
        ids[name] = server["id"]
    return ids


async def test_listing_filters(demo: httpx.AsyncClient, fleet: dict[str, str]) -> None:
    for params, expected in FILTERS:
        for path in ("servers", "servers/detail"):
            assert await _names(demo, params, path=path) == expected, (params, path)


async def test_filters_before_2_26_are_for_admins_only(demo: httpx.AsyncClient,
                                                       admin: httpx.AsyncClient,
                                                       fleet: dict[str, str]) -> None:
    assert await _names(demo, {"tags": "red"}, version="2.25") == ["a", "b", "c", "d"]
    assert await _names(admin, {"tags": "red", "all_tenants": "1"}, version="2.1") == ["a", "b"]


async def test_a_filtered_listing_pages(demo: httpx.AsyncClient, fleet: dict[str, str]) -> None:
    first = await demo.get(f"{SERVERS}", params={"tags-any": "red,blue", "limit": 2},
                           headers=V226)
    page = first.json()
    assert len(page["servers"]) == 2 and "servers_links" in page
    rest = await demo.get(f"{SERVERS}", params={"tags-any": "red,blue", "limit": 2,
                                                 "marker": page["servers"][-1]["id"]},
                          headers=V226)
    names = [s["name"] for s in page["servers"] + rest.json()["servers"]]
    assert sorted(names) == ["a", "b", "c"]


async def test_a_deleted_servers_tags_go_with_it(cloud: Cloud, demo: httpx.AsyncClient,
                                                 fleet: dict[str, str]) -> None:
    before = await db_count(cloud, tags_table)
    await wait_for_status(demo, fleet["b"], {"ACTIVE"})
    assert (await demo.delete(f"{SERVERS}/{fleet['b']}")).status_code == 204
    await wait_for_status(demo, fleet["b"], {"DELETED"})
    assert await db_count(cloud, tags_table, tags_table.c.resource_id == fleet["b"]) == 0
    assert await db_count(cloud, tags_table) == before - 2
    assert await _names(demo, {"tags": "red"}) == ["a"]


async def test_an_admin_reads_any_servers_tags(demo: httpx.AsyncClient,
                                              admin: httpx.AsyncClient, active: str) -> None:
    # (Another project's member: tests/security/test_compute_scope.py.)
    await demo.put(f"{SERVERS}/{active}/tags", json={"tags": ["mine"]}, headers=V226)
    # The admin sees every project's; a listing of its own project has none.
    assert await _tags(admin, active) == ["mine"]
    assert await _names(admin, {"tags": "mine"}) == []
