"""Private flavors and ``os-flavor-access`` through HTTP, as Nova answers."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.servers import server_body, upload_image

FLAVORS = "/compute/v2.1/flavors"


async def private_flavor(admin: httpx.AsyncClient, flavorid: str = "priv") -> str:
    resp = await admin.post(FLAVORS, json={"flavor": {
        "name": flavorid, "ram": 64, "vcpus": 1, "disk": 1, "id": flavorid,
        "os-flavor-access:is_public": False}})
    assert resp.status_code == 200, resp.text
    return flavorid


async def project_of(client: httpx.AsyncClient) -> str:
    return (await client.get("/identity/v3/auth/projects")).json()["projects"][0]["id"]


async def access(admin: httpx.AsyncClient, flavorid: str, verb: str, tenant: str,
                 status: int = 200, version: str = "2.1") -> dict[str, Any]:
    resp = await admin.post(f"{FLAVORS}/{flavorid}/action", json={verb: {"tenant": tenant}},
                            headers={"OpenStack-API-Version": f"compute {version}"})
    assert resp.status_code == status, resp.text
    return resp.json()


async def ids(client: httpx.AsyncClient, query: str = "") -> set[str]:
    resp = await client.get(f"{FLAVORS}{query}")
    assert resp.status_code == 200, resp.text
    return {f["id"] for f in resp.json()["flavors"]}


async def test_a_private_flavor_is_seen_and_used_only_where_opened(
        admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    flavor = await private_flavor(admin)
    project = await project_of(demo)
    image = await upload_image(demo)
    assert flavor not in await ids(demo)
    assert (await demo.get(f"{FLAVORS}/{flavor}")).status_code == 404
    assert (await demo.get(f"{FLAVORS}/{flavor}/os-extra_specs")).status_code == 404
    resp = await demo.post("/compute/v2.1/servers", json=server_body(image, flavor=flavor))
    assert resp.status_code == 400, resp.text  # Nova: an invalid flavorRef

    listed = await access(admin, flavor, "addTenantAccess", project)
    assert listed == {"flavor_access": [{"flavor_id": flavor, "tenant_id": project}]}
    await access(admin, flavor, "addTenantAccess", project, 409)  # there already
    assert flavor in await ids(demo)
    assert flavor in await ids(demo, "/detail")
    shown = (await demo.get(f"{FLAVORS}/{flavor}")).json()["flavor"]
    assert shown["os-flavor-access:is_public"] is False
    resp = await demo.post("/compute/v2.1/servers", json=server_body(image, flavor=flavor))
    assert resp.status_code == 202, resp.text

    resp = await admin.get(f"{FLAVORS}/{flavor}/os-flavor-access")
    assert resp.json() == {"flavor_access": [{"flavor_id": flavor, "tenant_id": project}]}
    removed = await access(admin, flavor, "removeTenantAccess", project)
    assert removed == {"flavor_access": []}
    await access(admin, flavor, "removeTenantAccess", project, 404)
    assert flavor not in await ids(demo)


async def test_admins_filter_with_is_public(admin: httpx.AsyncClient,
                                            demo: httpx.AsyncClient) -> None:
    closed = await private_flavor(admin, "closed")
    opened = await private_flavor(admin, "opened")
    await access(admin, opened, "addTenantAccess", await project_of(admin))
    default = await ids(admin)
    assert "1" in default and opened in default and closed not in default
    assert await ids(admin, "?is_public=none") >= {"1", opened, closed}
    assert await ids(admin, "?is_public=false") == {opened, closed}
    assert closed not in await ids(admin, "?is_public=true")
    assert (await admin.get(f"{FLAVORS}?is_public=maybe")).status_code == 400
    # Other callers see the public ones, whatever they ask.
    assert await ids(demo, "?is_public=false") == await ids(demo)
    assert closed not in await ids(demo, "?is_public=none")


async def test_access_list_rules(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    flavor = await private_flavor(admin)
    assert (await admin.get(f"{FLAVORS}/{flavor}/os-flavor-access")).json() == {
        "flavor_access": []}
    # Nova: no access list for a public flavor (404), nor adding to one from 2.7 (409).
    assert (await admin.get(f"{FLAVORS}/1/os-flavor-access")).status_code == 404
    await access(admin, "1", "addTenantAccess", "p1", 409, version="2.7")
    await access(admin, "1", "addTenantAccess", "p1", 200, version="2.6")
    assert (await admin.get(f"{FLAVORS}/nope/os-flavor-access")).status_code == 404
    await access(admin, "nope", "addTenantAccess", "p1", 404)
    for resp in (await demo.get(f"{FLAVORS}/{flavor}/os-flavor-access"),
                 await demo.post(f"{FLAVORS}/{flavor}/action",
                                 json={"addTenantAccess": {"tenant": "p1"}})):
        assert resp.status_code == 403, resp.text


@pytest.mark.parametrize("body", [
    {"addTenantAccess": {}},
    {"addTenantAccess": {"tenant": ""}},
    {"addTenantAccess": {"tenant": "x" * 256}},
    {"addTenantAccess": {"tenant": 5}},
    {"addTenantAccess": {"tenant": "p", "other": 1}},
    {"addTenantAccess": "p"},
    {"removeTenantAccess": {"tenant": None}},
    {"addTenantAccess": {"tenant": "p"}, "removeTenantAccess": {"tenant": "p"}},
    {"shareFlavor": {"tenant": "p"}},
    [],
])
async def test_action_bodies_outside_the_schema_are_400(admin: httpx.AsyncClient,
                                                        body: Any) -> None:
    flavor = await private_flavor(admin)
    resp = await admin.post(f"{FLAVORS}/{flavor}/action", json=body)
    assert resp.status_code == 400, resp.text


async def test_deleting_a_flavor_drops_its_access(admin: httpx.AsyncClient) -> None:
    flavor = await private_flavor(admin)
    await access(admin, flavor, "addTenantAccess", "p1")
    assert (await admin.delete(f"{FLAVORS}/{flavor}")).status_code == 202
    await private_flavor(admin)  # the same id again starts closed
    assert (await admin.get(f"{FLAVORS}/{flavor}/os-flavor-access")).json() == {
        "flavor_access": []}
