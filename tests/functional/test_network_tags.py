"""Resource tags over HTTP (``standard-attr-tag``, ``tag-creation``): the tag
API on networks, subnets, ports, security groups, routers, subnet pools and
floating IPs, tags on create, the listing filters, and who may do what."""
from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.network.models import network_tags
from tests.functional.servers import db_count
from tests.functional.test_network import NET, make_net, make_port
from tests.functional.test_network_l3 import make_external, make_router
from tests.functional.test_network_subnetpools import make_pool


async def make_resources(client: httpx.AsyncClient) -> dict[str, str]:
    """One of each taggable resource, by collection."""
    net = await make_net(client, "tagged", "10.61.0.0/24")
    sub = (await client.get(f"{NET}/subnets", params={"network_id": net["id"]})).json()
    port = (await make_port(client, net["id"])).json()["port"]
    sg = (await client.post(f"{NET}/security-groups", json={"security_group": {
        "name": "tagged"}})).json()["security_group"]
    router = await make_router(client)
    pool = await make_pool(client, ["10.62.0.0/16"])
    return {"networks": net["id"], "subnets": sub["subnets"][0]["id"], "ports": port["id"],
            "security-groups": sg["id"], "routers": router["id"], "subnetpools": pool["id"]}


@pytest.mark.parametrize("collection", ["networks", "subnets", "ports", "security-groups",
                                        "routers", "subnetpools"])
async def test_tag_api_on_each_resource(demo: httpx.AsyncClient, collection: str) -> None:
    rid = (await make_resources(demo))[collection]
    base = f"{NET}/{collection}/{rid}/tags"
    assert (await demo.get(base)).json() == {"tags": []}
    added = await demo.put(f"{base}/red")
    assert added.status_code == 201 and added.content == b""
    assert (await demo.put(f"{base}/red")).status_code == 201  # idempotent
    assert (await demo.get(f"{base}/red")).status_code == 204
    missing = await demo.get(f"{base}/blue")
    assert missing.status_code == 404
    assert missing.json()["NeutronError"]["type"] == "TagNotFound"
    replaced = await demo.put(base, json={"tags": ["a", "b", "c"]})
    assert replaced.status_code == 200 and replaced.json() == {"tags": ["a", "b", "c"]}
    assert sorted((await demo.get(base)).json()["tags"]) == ["a", "b", "c"]
    created = await demo.post(base, json={"tags": ["c", "d"]})
    assert created.status_code == 201 and created.json() == {"tags": ["c", "d"]}
    assert (await demo.get(base)).json()["tags"] == ["a", "b", "c", "d"]
    assert (await demo.delete(f"{base}/a")).status_code == 204
    assert (await demo.delete(f"{base}/a")).status_code == 404
    singular = collection[:-1].replace("-", "_")
    shown = (await demo.get(f"{NET}/{collection}/{rid}")).json()[singular]
    assert shown["tags"] == ["b", "c", "d"]
    assert (await demo.delete(base)).status_code == 204
    assert (await demo.get(base)).json() == {"tags": []}


async def test_tags_on_create_and_in_views(demo: httpx.AsyncClient) -> None:
    net = (await demo.post(f"{NET}/networks", json={"network": {
        "name": "t", "tags": ["x", "y"]}})).json()["network"]
    assert net["tags"] == ["x", "y"]
    sub = (await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "cidr": "10.62.0.0/24", "ip_version": 4,
        "tags": ["s"]}})).json()["subnet"]
    assert sub["tags"] == ["s"]
    port = (await make_port(demo, net["id"], tags=["p1", "p2"])).json()["port"]
    assert port["tags"] == ["p1", "p2"]
    sg = (await demo.post(f"{NET}/security-groups", json={"security_group": {
        "name": "g", "tags": ["g"]}})).json()["security_group"]
    assert sg["tags"] == ["g"]
    listed = (await demo.get(f"{NET}/ports", params={"id": port["id"]})).json()["ports"]
    assert listed[0]["tags"] == ["p1", "p2"]
    # Tags are not an attribute of an update (Neutron: read-only there).
    update = await demo.put(f"{NET}/networks/{net['id']}", json={"network": {"tags": ["z"]}})
    assert update.status_code == 400 and "read-only" in update.text


@pytest.mark.parametrize("query, expected", [
    ({"tags": "red"}, {"r", "rb"}),
    ({"tags": "red,blue"}, {"rb"}),
    ({"tags-any": "red,blue"}, {"r", "b", "rb"}),
    ({"not-tags": "red"}, {"b", "none"}),
    ({"not-tags": "red,blue"}, {"r", "b", "none"}),
    ({"not-tags-any": "red,blue"}, {"none"}),
    ({"tags": "red", "not-tags": "blue"}, {"r"}),
    ({"tags": "green"}, set()),
    ({"tags": "x" * 300}, set()),             # no tag can be that long: nothing has it
    ({"not-tags": "x" * 300}, {"r", "b", "rb", "none"}),
    ({"tags-any": "red\x00"}, set()),       # NUL: not storable, no tag has it
])
async def test_tag_filters(demo: httpx.AsyncClient, query: dict[str, str],
                           expected: set[str]) -> None:
    names = {"r": ["red"], "b": ["blue"], "rb": ["red", "blue"], "none": []}
    for name, tags in names.items():
        resp = await demo.post(f"{NET}/networks", json={"network": {"name": name, "tags": tags}})
        assert resp.status_code == 201, resp.text
    resp = await demo.get(f"{NET}/networks", params=query)
    assert resp.status_code == 200
    assert {n["name"] for n in resp.json()["networks"]} == expected


async def test_tag_filters_on_every_collection(demo: httpx.AsyncClient) -> None:
    ids = await make_resources(demo)
    for collection, rid in ids.items():
        await demo.put(f"{NET}/{collection}/{rid}/tags/mark")
        listed = (await demo.get(f"{NET}/{collection}", params={"tags": "mark"})).json()
        key = collection.replace("-", "_")
        assert [r["id"] for r in listed[key]] == [rid], collection


@pytest.mark.parametrize("body, reason", [
    ({"tags": "a"}, "is not a list"),
    ({"tags": ["a", "a"]}, "Duplicate"),
    ({"tags": [""]}, "empty"),
    ({"tags": ["x" * 256]}, "exceeds maximum length"),
    ({"tags": [1]}, "not a valid string"),
    ({"tags": [f"t{i}" for i in range(51)]}, "limit of 50"),
    ({"tag": ["a"]}, "Invalid tags body"),
    ({"tags": ["a"], "extra": 1}, "Unrecognized"),
    ([], "Invalid tags body"),
])
async def test_bad_tag_bodies_are_400(demo: httpx.AsyncClient, body: Any, reason: str) -> None:
    net = await make_net(demo, "bad-tags", None)
    for method in ("PUT", "POST"):
        resp = await demo.request(method, f"{NET}/networks/{net['id']}/tags", json=body)
        assert resp.status_code == 400, resp.text
        assert reason in resp.json()["NeutronError"]["message"]
    assert (await demo.get(f"{NET}/networks/{net['id']}/tags")).json() == {"tags": []}


async def test_tag_count_limit_counts_the_tags_already_there(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "full", None)
    base = f"{NET}/networks/{net['id']}/tags"
    assert (await demo.put(base, json={"tags": [f"t{i}" for i in range(50)]})).status_code == 200
    assert (await demo.put(f"{base}/t0")).status_code == 201  # has it: nothing added
    assert (await demo.put(f"{base}/one-more")).status_code == 400
    assert (await demo.post(base, json={"tags": ["another"]})).status_code == 400
    assert len((await demo.get(base)).json()["tags"]) == 50


async def test_a_tag_in_the_url_is_checked(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "url-tags", None)
    base = f"{NET}/networks/{net['id']}/tags"
    assert (await demo.put(f"{base}/{'x' * 256}")).status_code == 400
    assert (await demo.put(f"{base}/with%20space")).status_code == 201
    assert (await demo.get(base)).json() == {"tags": ["with space"]}


async def test_deleting_a_resource_forgets_its_tags(cloud: Cloud, demo: httpx.AsyncClient) -> None:
    ids = await make_resources(demo)
    for collection, rid in ids.items():
        await demo.put(f"{NET}/{collection}/{rid}/tags/gone")
    assert (await demo.delete(f"{NET}/security-groups/{ids['security-groups']}")).status_code == 204
    assert (await demo.delete(f"{NET}/ports/{ids['ports']}")).status_code == 204
    assert (await demo.delete(f"{NET}/networks/{ids['networks']}")).status_code == 204
    assert (await demo.delete(f"{NET}/routers/{ids['routers']}")).status_code == 204
    assert (await demo.delete(f"{NET}/subnetpools/{ids['subnetpools']}")).status_code == 204
    for collection, rid in ids.items():
        assert (await demo.get(f"{NET}/{collection}/{rid}/tags")).status_code == 404
    # The subnet and the port went with the network, their tags too.
    assert await db_count(cloud, network_tags) == 0


async def test_concurrent_adds_of_one_tag(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "racing", None)
    base = f"{NET}/networks/{net['id']}/tags"
    answers = await asyncio.gather(*[demo.put(f"{base}/same") for _ in range(8)],
                                   *[demo.post(base, json={"tags": ["same", "other"]})
                                     for _ in range(4)])
    assert sorted({a.status_code for a in answers}) == [201]
    assert (await demo.get(base)).json() == {"tags": ["other", "same"]}


async def test_tags_on_floating_ips(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    ext = await make_external(admin)
    fip = (await demo.post(f"{NET}/floatingips", json={"floatingip": {
        "floating_network_id": ext["id"]}})).json()["floatingip"]
    base = f"{NET}/floatingips/{fip['id']}/tags"
    assert (await demo.put(base, json={"tags": ["a", "b"]})).status_code == 200
    assert (await demo.get(f"{NET}/floatingips/{fip['id']}")).json()["floatingip"]["tags"] == [
        "a", "b"]
    listed = (await demo.get(f"{NET}/floatingips", params={"tags-any": "b,z"})).json()
    assert [f["id"] for f in listed["floatingips"]] == [fip["id"]]
    assert (await demo.get(f"{NET}/floatingips", params={"not-tags": "a"})).json()[
        "floatingips"] == []
    assert (await demo.delete(f"{NET}/floatingips/{fip['id']}")).status_code == 204
    assert (await demo.get(base)).status_code == 404
