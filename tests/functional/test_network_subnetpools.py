"""Subnet pools over HTTP (``subnet_allocation``, ``default-subnetpools``):
the pool's own rules (prefixes, bounds, one default per IP version, prefixes
that only grow), subnets allocated from it by ``prefixlen`` or ``cidr``, and
who sees and changes what."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.test_network import NET, make_net
from tests.security.conftest import Tenants

POOLS = f"{NET}/subnetpools"


async def make_pool(client: httpx.AsyncClient, prefixes: list[str], **extra: Any) -> dict[str, Any]:
    resp = await client.post(POOLS, json={"subnetpool": {"name": "pool", "prefixes": prefixes,
                                                         **extra}})
    assert resp.status_code == 201, resp.text
    return resp.json()["subnetpool"]


async def pool_subnet(client: httpx.AsyncClient, net_id: str, pool_id: str,
                      **extra: Any) -> httpx.Response:
    return await client.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net_id, "ip_version": 4, "subnetpool_id": pool_id, **extra}})


async def test_crud_and_defaults(demo: httpx.AsyncClient) -> None:
    pool = await make_pool(demo, ["1.0.0.0/16", "2.0.0.0/16"])
    assert pool["prefixes"] == ["1.0.0.0/16", "2.0.0.0/16"]
    assert (pool["ip_version"], pool["min_prefixlen"], pool["max_prefixlen"],
            pool["default_prefixlen"]) == (4, 8, 32, 8)
    assert pool["shared"] is False and pool["is_default"] is False
    assert pool["address_scope_id"] is None and pool["tags"] == []
    shown = (await demo.get(f"{POOLS}/{pool['id']}")).json()["subnetpool"]
    assert shown == pool
    renamed = await demo.put(f"{POOLS}/{pool['id']}", json={"subnetpool": {"name": "renamed"}})
    assert renamed.status_code == 200 and renamed.json()["subnetpool"]["name"] == "renamed"
    assert renamed.json()["subnetpool"]["revision_number"] == 1
    listed = (await demo.get(POOLS, params={"name": "renamed"})).json()["subnetpools"]
    assert [p["id"] for p in listed] == [pool["id"]]
    assert (await demo.delete(f"{POOLS}/{pool['id']}")).status_code == 204
    assert (await demo.get(f"{POOLS}/{pool['id']}")).status_code == 404


async def test_prefixes_are_merged_and_only_grow(demo: httpx.AsyncClient) -> None:
    pool = await make_pool(demo, ["10.0.0.0/24", "10.0.1.0/24", "10.0.0.5/25"])
    assert pool["prefixes"] == ["10.0.0.0/23"]
    grown = await demo.put(f"{POOLS}/{pool['id']}", json={"subnetpool": {
        "prefixes": ["10.0.0.0/22"]}})
    assert grown.status_code == 200 and grown.json()["subnetpool"]["prefixes"] == ["10.0.0.0/22"]
    shrunk = await demo.put(f"{POOLS}/{pool['id']}", json={"subnetpool": {
        "prefixes": ["10.0.0.0/24"]}})
    assert shrunk.status_code == 400 and "subset" in shrunk.text


@pytest.mark.parametrize("body, reason", [
    ({"prefixes": ["10.0.0.0/8", "fd00::/48"]}, "mix"),
    ({"prefixes": []}, "Empty"),
    ({"prefixes": ["10.0.0.0/8"], "min_prefixlen": 24, "max_prefixlen": 16}, "min_prefixlen"),
    ({"prefixes": ["10.0.0.0/8"], "max_prefixlen": 33}, "max_prefixlen"),
    ({"prefixes": ["10.0.0.0/8"], "min_prefixlen": 16, "default_prefixlen": 12},
     "default_prefixlen"),
    ({"prefixes": ["not-a-cidr"]}, "prefixes"),
    ({"prefixes": ["10.0.0.0/8"], "address_scope_id": None}, "address_scope_id"),
    ({"prefixes": "10.0.0.0/8"}, "prefixes"),
    ({"name": "no-prefixes"}, "prefixes"),
])
async def test_bad_pools_are_400(demo: httpx.AsyncClient, body: dict[str, Any],
                                 reason: str) -> None:
    resp = await demo.post(POOLS, json={"subnetpool": {"name": "p", **body}})
    assert resp.status_code == 400 and reason in resp.text, resp.text


async def test_subnets_from_a_pool(demo: httpx.AsyncClient) -> None:
    pool = await make_pool(demo, ["10.70.0.0/22"], default_prefixlen=24, min_prefixlen=23)
    net = await make_net(demo, "pooled", None)
    first = await pool_subnet(demo, net["id"], pool["id"])
    assert first.status_code == 201, first.text
    assert first.json()["subnet"]["cidr"] == "10.70.0.0/24"
    assert first.json()["subnet"]["subnetpool_id"] == pool["id"]
    assert first.json()["subnet"]["gateway_ip"] == "10.70.0.1"
    other_net = await make_net(demo, "pooled-2", None)
    second = await pool_subnet(demo, other_net["id"], pool["id"], prefixlen=23)
    assert second.json()["subnet"]["cidr"] == "10.70.2.0/23"  # the first free /23
    asked = await pool_subnet(demo, net["id"], pool["id"], cidr="10.70.1.0/24")
    assert asked.status_code == 201 and asked.json()["subnet"]["cidr"] == "10.70.1.0/24"
    full = await pool_subnet(demo, other_net["id"], pool["id"])
    assert full.status_code == 400 and "Insufficient prefix space" in full.text
    taken = await pool_subnet(demo, other_net["id"], pool["id"], cidr="10.70.0.0/24")
    assert taken.status_code == 400
    too_short = await pool_subnet(demo, other_net["id"], pool["id"], prefixlen=22)
    assert too_short.status_code == 400 and "prefix length 22" in too_short.text
    outside = await pool_subnet(demo, other_net["id"], pool["id"], cidr="192.168.0.0/24")
    assert outside.status_code == 400
    by_pool = (await demo.get(f"{NET}/subnets", params={"subnetpool_id": pool["id"]})).json()
    assert len(by_pool["subnets"]) == 3
    busy = await demo.delete(f"{POOLS}/{pool['id']}")
    assert busy.status_code == 409
    for sub in by_pool["subnets"]:
        assert (await demo.delete(f"{NET}/subnets/{sub['id']}")).status_code == 204
    again = await pool_subnet(demo, net["id"], pool["id"])
    assert again.json()["subnet"]["cidr"] == "10.70.0.0/24"  # freed prefixes are reused


async def test_a_subnet_needs_a_cidr_or_a_pool(demo: httpx.AsyncClient) -> None:
    net = await make_net(demo, "bare", None)
    resp = await demo.post(f"{NET}/subnets", json={"subnet": {"network_id": net["id"],
                                                              "ip_version": 4}})
    assert resp.status_code == 400 and "cidr" in resp.text
    pool = await make_pool(demo, ["fd00:70::/48"])
    mixed = await pool_subnet(demo, net["id"], pool["id"])
    assert mixed.status_code == 400 and "IPv6" in mixed.text


async def test_the_default_pool(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    refused = await demo.post(POOLS, json={"subnetpool": {
        "name": "d", "prefixes": ["10.80.0.0/16"], "is_default": True}})
    assert refused.status_code == 403
    pool = await make_pool(admin, ["10.80.0.0/16"], is_default=True, shared=True,
                           default_prefixlen=26)
    second = await admin.post(POOLS, json={"subnetpool": {
        "name": "d2", "prefixes": ["10.81.0.0/16"], "is_default": True}})
    assert second.status_code == 400 and "default" in second.text
    net = await make_net(demo, "by-default", None)
    resp = await demo.post(f"{NET}/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "use_default_subnetpool": True}})
    assert resp.status_code == 201, resp.text
    assert resp.json()["subnet"]["cidr"] == "10.80.0.0/26"
    assert resp.json()["subnet"]["subnetpool_id"] == pool["id"]


async def test_who_sees_and_changes_pools(tenants: Tenants) -> None:
    own = await make_pool(tenants.member, ["10.90.0.0/16"])
    shared = await make_pool(tenants.admin, ["10.91.0.0/16"], shared=True)
    other = tenants.other
    assert (await other.get(f"{POOLS}/{own['id']}")).status_code == 404
    assert (await other.put(f"{POOLS}/{own['id']}", json={"subnetpool": {
        "name": "x"}})).status_code == 404
    seen = {p["id"] for p in (await other.get(POOLS)).json()["subnetpools"]}
    assert shared["id"] in seen and own["id"] not in seen
    assert (await other.put(f"{POOLS}/{shared['id']}", json={"subnetpool": {
        "name": "x"}})).status_code == 403
    assert (await other.delete(f"{POOLS}/{shared['id']}")).status_code == 403
    net = await make_net(other, "other-net", None)
    foreign = await pool_subnet(other, net["id"], own["id"])
    assert foreign.status_code == 404
    from_shared = await pool_subnet(other, net["id"], shared["id"], prefixlen=24)
    assert from_shared.status_code == 201, from_shared.text
    assert (await tenants.member.post(POOLS, json={"subnetpool": {
        "name": "s", "prefixes": ["10.92.0.0/16"], "shared": True}})).status_code == 403
