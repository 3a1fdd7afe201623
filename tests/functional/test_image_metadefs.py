"""Glance's metadata definitions (/v2/metadefs) over HTTP."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.tenants import Tenants

NS = "/image/v2/metadefs/namespaces"
PROPERTY = {"name": "hw_rng", "title": "RNG", "type": "string", "enum": ["a", "b"]}


async def _namespace(client: httpx.AsyncClient, name: str = "ns", **extra: Any) -> dict[str, Any]:
    resp = await client.post(NS, json={"namespace": name, **extra})
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


async def test_seeded_resource_types(demo: httpx.AsyncClient) -> None:
    types = (await demo.get("/image/v2/metadefs/resource_types")).json()["resource_types"]
    assert {"OS::Glance::Image", "OS::Cinder::Volume", "OS::Nova::Flavor"} <= {
        t["name"] for t in types}


async def test_namespace_lifecycle(admin: httpx.AsyncClient) -> None:
    created = await _namespace(admin, "life", display_name="Life", description="d",
                               visibility="public", protected=True,
                               resource_type_associations=[{"name": "OS::Glance::Image",
                                                            "prefix": "hw_"}])
    assert created["self"] == "/v2/metadefs/namespaces/life"
    assert created["resource_type_associations"][0]["prefix"] == "hw_"
    shown = (await admin.get(f"{NS}/life")).json()
    assert shown["visibility"] == "public" and shown["protected"] is True
    assert (await admin.delete(f"{NS}/life")).status_code == 403
    updated = await admin.put(f"{NS}/life", json={"namespace": "life", "protected": False,
                                                  "visibility": "private"})
    assert updated.status_code == 200 and updated.json()["protected"] is False
    assert (await admin.delete(f"{NS}/life")).status_code == 204
    assert (await admin.get(f"{NS}/life")).status_code == 404


async def test_a_namespace_body_may_carry_its_items(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "full", properties={"p1": {"title": "P1", "type": "integer"}},
                     objects=[{"name": "o1", "properties": {"p2": {"title": "P2",
                                                                   "type": "string"}}}],
                     tags=[{"name": "t1"}, {"name": "t2"}])
    shown = (await admin.get(f"{NS}/full")).json()
    assert shown["properties"] == {"p1": {"title": "P1", "type": "integer"}}
    assert [o["name"] for o in shown["objects"]] == ["o1"]
    assert [t["name"] for t in shown["tags"]] == ["t1", "t2"]


async def test_rename_keeps_the_items(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "old", tags=[{"name": "t"}])
    await _namespace(admin, "taken")
    assert (await admin.put(f"{NS}/old", json={"namespace": "taken"})).status_code == 409
    assert (await admin.put(f"{NS}/old", json={"namespace": "new"})).status_code == 200
    assert (await admin.get(f"{NS}/old")).status_code == 404
    assert [t["name"] for t in (await admin.get(f"{NS}/new/tags")).json()["tags"]] == ["t"]


async def test_duplicate_namespace_is_409(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "dup")
    assert (await admin.post(NS, json={"namespace": "dup"})).status_code == 409


@pytest.mark.parametrize("body, code", [
    ({}, 400), ({"namespace": 5}, 400), ({"namespace": "x" * 81}, 400),
    ({"namespace": "v", "visibility": "shared"}, 400), ({"namespace": "u", "unknown": 1}, 400),
    ({"namespace": "p", "protected": "yes"}, 400), ({"namespace": "r", "self": "/x"}, 403),
    ({"namespace": "q", "properties": {"k": {"type": "string"}}}, 400),
    ({"namespace": "q", "properties": {"k": {"title": "K", "type": "string",
                                             "pattern": "("}}}, 400),
    ({"namespace": "q", "tags": [{}]}, 400), ([], 400),
])
async def test_bad_namespace_bodies(admin: httpx.AsyncClient, body: Any, code: int) -> None:
    resp = await admin.post(NS, json=body)
    assert resp.status_code == code, resp.text


async def test_private_namespaces_are_their_projects(tenants: Tenants) -> None:
    await _namespace(tenants.admin, "secret")
    await _namespace(tenants.admin, "open", visibility="public")
    for persona in ("member", "reader", "other"):
        client = tenants.clients[persona]
        listed = {n["namespace"] for n in (await client.get(NS)).json()["namespaces"]}
        assert listed == {"open"}, persona
        assert (await client.get(f"{NS}/secret")).status_code == 404
        assert (await client.get(f"{NS}/secret/tags")).status_code == 404
        assert (await client.get(f"{NS}/open")).status_code == 200


@pytest.mark.parametrize("method, path, body", [
    ("POST", "", {"namespace": "mine"}),
    ("PUT", "/open", {"namespace": "open"}),
    ("DELETE", "/open", None),
    ("POST", "/open/tags", {"tags": [{"name": "t"}]}),
    ("POST", "/open/objects", {"name": "o"}),
    ("POST", "/open/properties", PROPERTY),
    ("POST", "/open/resource_types", {"name": "OS::Nova::Flavor"}),
])
async def test_only_admins_write(tenants: Tenants, method: str, path: str, body: Any) -> None:
    await _namespace(tenants.admin, "open", visibility="public")
    resp = await tenants.member.request(method, f"{NS}{path}", json=body)
    assert resp.status_code == 403, resp.text


async def test_listing_filters_and_pages(admin: httpx.AsyncClient) -> None:
    for name in ("a", "b", "c"):
        await _namespace(admin, name, visibility="public" if name != "b" else "private",
                         resource_type_associations=[{"name": "OS::Nova::Flavor"}]
                         if name == "c" else [])
    names = lambda body: [n["namespace"] for n in body["namespaces"]]  # noqa: E731
    page = (await admin.get(NS, params={"sort_key": "namespace", "sort_dir": "asc",
                                        "limit": 2})).json()
    assert names(page) == ["a", "b"] and "marker=b" in page["next"]
    rest = (await admin.get(NS, params={"sort_key": "namespace", "sort_dir": "asc",
                                        "marker": "b"})).json()
    assert names(rest) == ["c"] and "next" not in rest
    assert names((await admin.get(NS, params={"visibility": "private"})).json()) == ["b"]
    flavor = (await admin.get(NS, params={"resource_types": "OS::Nova::Flavor"})).json()
    assert names(flavor) == ["c"]
    assert flavor["namespaces"][0]["resource_type_associations"][0]["name"] == "OS::Nova::Flavor"


@pytest.mark.parametrize("params", [{"limit": "x"}, {"limit": "-1"}, {"sort_key": "owner"},
                                    {"sort_dir": "up"}, {"visibility": "all"}])
async def test_bad_listing_parameters_are_400(demo: httpx.AsyncClient,
                                              params: dict[str, str]) -> None:
    assert (await demo.get(NS, params=params)).status_code == 400


async def test_objects(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "objs")
    created = await admin.post(f"{NS}/objs/objects", json={
        "name": "o", "description": "d", "required": ["p"],
        "properties": {"p": {"title": "P", "type": "string"}}})
    assert created.status_code == 201, created.text
    assert created.json()["self"] == "/v2/metadefs/namespaces/objs/objects/o"
    assert (await admin.post(f"{NS}/objs/objects", json={"name": "o"})).status_code == 409
    renamed = await admin.put(f"{NS}/objs/objects/o", json={"name": "o2"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "o2"
    assert "description" not in renamed.json()  # PUT replaces the whole object
    assert (await admin.get(f"{NS}/objs/objects/o")).status_code == 404
    listed = (await admin.get(f"{NS}/objs/objects")).json()
    assert [o["name"] for o in listed["objects"]] == ["o2"]
    assert (await admin.delete(f"{NS}/objs/objects/o2")).status_code == 204
    assert (await admin.delete(f"{NS}/objs/objects/o2")).status_code == 404


async def test_properties(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "props")
    created = await admin.post(f"{NS}/props/properties", json=PROPERTY)
    assert created.status_code == 201 and created.json() == PROPERTY
    listed = (await admin.get(f"{NS}/props/properties")).json()["properties"]
    assert listed == {"hw_rng": {k: v for k, v in PROPERTY.items() if k != "name"}}
    updated = await admin.put(f"{NS}/props/properties/hw_rng", json={**PROPERTY, "title": "T2"})
    assert updated.json()["title"] == "T2"
    assert (await admin.post(f"{NS}/props/properties", json={"name": "x"})).status_code == 400
    assert (await admin.delete(f"{NS}/props/properties")).status_code == 204
    assert (await admin.get(f"{NS}/props/properties")).json()["properties"] == {}


async def test_tags(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "tg")
    resp = await admin.post(f"{NS}/tg/tags", json={"tags": [{"name": "a"}, {"name": "b"}]})
    assert resp.status_code == 201 and resp.json() == {"tags": [{"name": "a"}, {"name": "b"}]}
    # Without X-Openstack-Append a tag list replaces the namespace's tags.
    await admin.post(f"{NS}/tg/tags", json={"tags": [{"name": "c"}]})
    await admin.post(f"{NS}/tg/tags", json={"tags": [{"name": "d"}]},
                     headers={"X-Openstack-Append": "True"})
    names = lambda: admin.get(f"{NS}/tg/tags")  # noqa: E731
    assert [t["name"] for t in (await names()).json()["tags"]] == ["c", "d"]
    assert (await admin.post(f"{NS}/tg/tags/e")).status_code == 201
    assert (await admin.post(f"{NS}/tg/tags/e")).status_code == 409
    renamed = await admin.put(f"{NS}/tg/tags/e", json={"name": "f"})
    assert renamed.json()["name"] == "f"
    assert (await admin.get(f"{NS}/tg/tags/f")).json()["name"] == "f"
    assert (await admin.post(f"{NS}/tg/tags", json={"tags": [{"name": "x"}, {"name": "x"}]}
                             )).status_code == 409
    assert (await admin.delete(f"{NS}/tg/tags/f")).status_code == 204
    assert (await admin.delete(f"{NS}/tg/tags")).status_code == 204
    assert (await names()).json()["tags"] == []


async def test_resource_type_associations(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "rt")
    resp = await admin.post(f"{NS}/rt/resource_types",
                            json={"name": "OS::Custom::Thing", "prefix": "c_"})
    assert resp.status_code == 201 and resp.json()["prefix"] == "c_"
    # An association may name a resource type nobody made yet: it is added.
    types = (await admin.get("/image/v2/metadefs/resource_types")).json()["resource_types"]
    assert "OS::Custom::Thing" in {t["name"] for t in types}
    listed = (await admin.get(f"{NS}/rt/resource_types")).json()
    assert [a["name"] for a in listed["resource_type_associations"]] == ["OS::Custom::Thing"]
    assert (await admin.delete(f"{NS}/rt/resource_types/OS::Custom::Thing")).status_code == 204
    assert (await admin.get(f"{NS}/rt/resource_types")).json() == {
        "resource_type_associations": []}


async def test_a_protected_namespaces_items_stay(admin: httpx.AsyncClient) -> None:
    await _namespace(admin, "prot", protected=True, tags=[{"name": "t"}])
    assert (await admin.delete(f"{NS}/prot/tags/t")).status_code == 403
    assert (await admin.delete(f"{NS}/prot/tags")).status_code == 403
    assert len((await admin.get(f"{NS}/prot/tags")).json()["tags"]) == 1


@pytest.mark.parametrize("name, title", [
    ("namespace", "namespace"), ("namespaces", "namespaces"),
    ("resource_type", "resource_type_association"),
    ("resource_types", "resource_type_associations"), ("object", "object"),
    ("objects", "objects"), ("property", "property"), ("properties", "properties"),
    ("tag", "tag"), ("tags", "tags")])
async def test_schemas(demo: httpx.AsyncClient, name: str, title: str) -> None:
    body = (await demo.get(f"/image/v2/schemas/metadefs/{name}")).json()
    assert body["name"] == title and body["properties"]
