"""Keystone regions, services, endpoints and policy blobs over HTTP."""
from __future__ import annotations

import httpx

from tests.conftest import Api

V3 = "/identity/v3"


async def test_regions_made_by_id_or_not_with_parents(admin: httpx.AsyncClient,
                                                      demo: httpx.AsyncClient) -> None:
    listed = (await admin.get(f"{V3}/regions")).json()["regions"]
    assert [r["id"] for r in listed] == ["RegionOne"]  # the cloud's own
    parent = (await admin.put(f"{V3}/regions/north", json={"region": {
        "description": "n"}})).json()["region"]
    assert parent["id"] == "north"
    made = await admin.post(f"{V3}/regions", json={"region": {
        "description": "child", "parent_region_id": "north"}})
    assert made.status_code == 201, made.text
    child = made.json()["region"]
    children = (await admin.get(f"{V3}/regions", params={"parent_region_id": "north"})).json()
    assert [r["id"] for r in children["regions"]] == [child["id"]]
    assert (await admin.post(f"{V3}/regions", json={"region": {"id": "north"}})).status_code == 409
    assert (await admin.post(f"{V3}/regions", json={"region": {
        "parent_region_id": "nowhere"}})).status_code == 404
    changed = await admin.patch(f"{V3}/regions/{child['id']}", json={"region": {
        "description": "moved", "parent_region_id": None}})
    assert changed.json()["region"]["parent_region_id"] is None
    assert (await admin.delete("/identity/v3/regions/RegionOne")).status_code == 403
    assert (await admin.delete(f"{V3}/regions/north")).status_code == 204
    assert (await admin.get(f"{V3}/regions/north")).status_code == 404
    assert (await demo.get(f"{V3}/regions")).status_code == 403


async def test_services_and_endpoints_join_the_catalog(api: Api, admin: httpx.AsyncClient) -> None:
    builtin = (await admin.get(f"{V3}/services", params={"type": "compute"})).json()["services"]
    assert [s["name"] for s in builtin] == ["nova"]
    assert (await admin.delete(f"{V3}/services/{builtin[0]['id']}")).status_code == 403
    svc = (await admin.post(f"{V3}/services", json={"service": {
        "type": "metering", "name": "meter", "description": "m"}})).json()["service"]
    assert svc["enabled"] is True
    made = await admin.post(f"{V3}/endpoints", json={"endpoint": {
        "service_id": svc["id"], "interface": "public", "url": "http://meter.example:8777",
        "region": "West"}})
    assert made.status_code == 201, made.text
    ep = made.json()["endpoint"]
    assert (ep["region"], ep["region_id"]) == ("West", "West")
    assert (await admin.get(f"{V3}/regions/West")).status_code == 200  # made, as Keystone
    async with api.client(await api.token("demo")) as demo:
        token = (await demo.get(f"{V3}/auth/tokens", headers={
            "X-Subject-Token": await api.token("demo")})).json()["token"]
    meter = [s for s in token["catalog"] if s["type"] == "metering"]
    assert meter[0]["endpoints"][0]["url"] == "http://meter.example:8777"
    only = (await admin.get(f"{V3}/endpoints", params={"service_id": svc["id"]})).json()
    assert [e["id"] for e in only["endpoints"]] == [ep["id"]]
    off = await admin.patch(f"{V3}/endpoints/{ep['id']}", json={"endpoint": {"enabled": False}})
    assert off.json()["endpoint"]["enabled"] is False
    assert (await admin.delete(f"{V3}/services/{svc['id']}")).status_code == 204
    assert (await admin.get(f"{V3}/endpoints/{ep['id']}")).status_code == 404


async def test_bad_endpoint_bodies_are_400(admin: httpx.AsyncClient) -> None:
    svc = (await admin.post(f"{V3}/services", json={"service": {"type": "x"}})).json()["service"]
    good = {"service_id": svc["id"], "interface": "public", "url": "http://x"}
    for bad in ({**good, "interface": "sideways"}, {**good, "enabled": "False"},
                {**good, "url": "ftp://x"}, {"interface": "public", "url": "http://x"}):
        resp = await admin.post(f"{V3}/endpoints", json={"endpoint": bad})
        assert resp.status_code == 400, (bad, resp.text)
    missing = await admin.post(f"{V3}/endpoints", json={"endpoint": {
        **good, "service_id": "nope"}})
    assert missing.status_code == 404


async def test_policy_blobs(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    made = await admin.post(f"{V3}/policies", json={"policy": {
        "type": "application/json", "blob": '{"rule": "@"}'}})
    assert made.status_code == 201, made.text
    policy = made.json()["policy"]
    changed = await admin.patch(f"{V3}/policies/{policy['id']}", json={"policy": {
        "type": "text/plain"}})
    assert changed.json()["policy"]["type"] == "text/plain"
    listed = (await admin.get(f"{V3}/policies", params={"type": "text/plain"})).json()
    assert [p["id"] for p in listed["policies"]] == [policy["id"]]
    assert (await demo.get(f"{V3}/policies")).status_code == 403
    assert (await admin.delete(f"{V3}/policies/{policy['id']}")).status_code == 204
    assert (await admin.delete(f"{V3}/policies/{policy['id']}")).status_code == 404
