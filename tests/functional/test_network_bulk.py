"""Bulk creation of networks, subnets and ports (Neutron's native bulk):
the answer's shape, and all or nothing."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from cirrus.bootstrap import Cloud
from cirrus.network.models import network_tags, networks, ports, subnets
from tests.functional.servers import db_count
from tests.functional.test_network import NET, make_net


async def test_bulk_networks_subnets_and_ports(demo: httpx.AsyncClient) -> None:
    resp = await demo.post(f"{NET}/networks", json={"networks": [
        {"name": "b1"}, {"name": "b2", "tags": ["bulk"]}]})
    assert resp.status_code == 201, resp.text
    nets = resp.json()["networks"]
    assert [n["name"] for n in nets] == ["b1", "b2"] and nets[1]["tags"] == ["bulk"]
    resp = await demo.post(f"{NET}/subnets", json={"subnets": [
        {"network_id": nets[0]["id"], "cidr": "10.71.0.0/24", "ip_version": 4},
        {"network_id": nets[1]["id"], "cidr": "10.72.0.0/24", "ip_version": 4}]})
    assert resp.status_code == 201, resp.text
    assert [s["cidr"] for s in resp.json()["subnets"]] == ["10.71.0.0/24", "10.72.0.0/24"]
    resp = await demo.post(f"{NET}/ports", json={"ports": [
        {"network_id": nets[0]["id"], "name": f"p{i}", "tags": [f"t{i}"]} for i in range(3)]})
    assert resp.status_code == 201, resp.text
    created = resp.json()["ports"]
    assert [p["name"] for p in created] == ["p0", "p1", "p2"]
    assert [p["fixed_ips"][0]["ip_address"] for p in created] == [
        "10.71.0.2", "10.71.0.3", "10.71.0.4"]
    assert [p["tags"] for p in created] == [["t0"], ["t1"], ["t2"]]
    listed = (await demo.get(f"{NET}/ports", params={"network_id": nets[0]["id"]})).json()
    assert {p["id"] for p in listed["ports"]} == {p["id"] for p in created}


async def _counts(cloud: Cloud) -> tuple[int, ...]:
    return tuple([await db_count(cloud, t) for t in (networks, subnets, ports, network_tags)])


@pytest.mark.parametrize("collection, items", [
    # The last one is refused by its schema: nothing is made.
    ("networks", [{"name": "ok", "tags": ["a"]}, {"name": "bad", "mtu": 1}]),
    # The second overlaps the first: refused in the unit of work, the first rolled back.
    ("subnets", [{"network_id": "NET", "cidr": "10.73.1.0/24", "ip_version": 4},
                 {"network_id": "NET", "cidr": "10.73.1.128/25", "ip_version": 4}]),
    # The same address twice: the second is refused, the first rolled back.
    ("ports", [{"network_id": "NET", "fixed_ips": [{"ip_address": "10.73.0.9"}]},
               {"network_id": "NET", "fixed_ips": [{"ip_address": "10.73.0.9"}]}]),
    # The second names a network the caller cannot see.
    ("ports", [{"network_id": "NET"},
               {"network_id": "00000000-0000-0000-0000-000000000000"}]),
])
async def test_bulk_is_all_or_nothing(cloud: Cloud, demo: httpx.AsyncClient, collection: str,
                                      items: list[dict[str, Any]]) -> None:
    net = await make_net(demo, "all-or-nothing", "10.73.0.0/24")
    items = [{k: (net["id"] if v == "NET" else v) for k, v in item.items()} for item in items]
    before = await _counts(cloud)
    resp = await demo.post(f"{NET}/{collection}", json={collection: items})
    assert resp.status_code in (400, 404, 409), resp.text
    assert await _counts(cloud) == before


async def test_bulk_within_the_quota_or_not_at_all(cloud: Cloud, admin: httpx.AsyncClient,
                                                   demo: httpx.AsyncClient) -> None:
    project = (await demo.get(f"{NET}/security-groups")).json()["security_groups"][0][
        "project_id"]
    await admin.put(f"{NET}/quotas/{project}", json={"quota": {"network": 2}})
    resp = await demo.post(f"{NET}/networks", json={"networks": [{"name": f"q{i}"}
                                                                 for i in range(3)]})
    assert resp.status_code == 409 and resp.json()["NeutronError"]["type"] == "OverQuota"
    assert await db_count(cloud, networks) == 0
    resp = await demo.post(f"{NET}/networks", json={"networks": [{"name": "q0"}, {"name": "q1"}]})
    assert resp.status_code == 201


@pytest.mark.parametrize("body, reason", [
    ({"networks": []}, "non-empty list"),
    ({"networks": {"name": "x"}}, "non-empty list"),
    ({"networks": [{"name": "x"}], "network": {"name": "y"}}, "Unrecognized"),
    ({"networks": [{"name": "x"}], "other": 1}, "Unrecognized"),
    ({"networks": ["x"]}, "must be an object"),
    ({"networks": [{"name": "x"}] * 501}, "At most 500"),
])
async def test_bad_bulk_bodies(demo: httpx.AsyncClient, body: Any, reason: str) -> None:
    resp = await demo.post(f"{NET}/networks", json=body)
    assert resp.status_code == 400, resp.text
    assert reason in resp.json()["NeutronError"]["message"]
