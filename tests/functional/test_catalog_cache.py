"""The create's flavor and image kept per API process (``compute/catalog_cache.py``):
a change made through another process — another ``Cloud`` serving the API on
the same database — is refused by this one at once, and a kept record is
used without a statement."""
from __future__ import annotations

import uuid
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import httpx
import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from tests.conftest import Api
from tests.functional.servers import server_body, upload_image
from tests.functional.test_flavor_access import FLAVORS, access, private_flavor, project_of

SERVERS = "/compute/v2.1/servers"
IMAGES = "/image/v2/images"


@asynccontextmanager
async def other_process(cloud: Cloud) -> AsyncIterator[Api]:
    """A second API on the cloud's database: its own identity, compute API and
    catalog cache, as another ``cirrus api`` process has."""
    other = Cloud(cloud.settings, roles=(), prepare_db=False, defaults=False)
    await other.start()
    try:
        yield Api(other)
    finally:
        await other.stop()


def lookup_statements(cloud: Cloud) -> list[str]:
    """The statements reading flavors or images on ``cloud``'s engine, from now on."""
    assert cloud.db is not None
    seen: list[str] = []

    def note(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "FROM flavors" in statement or "FROM images" in statement:
            seen.append(statement)
    sa.event.listen(cloud.db.engine, "before_cursor_execute", note)
    return seen


def unbuildable(image: str, flavor: str = "1") -> dict[str, Any]:
    """A create that passes the flavor and image checks and stops at its
    network (a 400 naming it): the lookups run, nothing is built."""
    return server_body(image, flavor=flavor, networks=[{"uuid": str(uuid.uuid4())}])


async def refusal(client: httpx.AsyncClient, body: dict[str, Any]) -> str:
    resp = await client.post(SERVERS, json=body)
    assert resp.status_code == 400, resp.text
    return str(resp.json()["badRequest"]["message"])


async def test_a_kept_flavor_and_image_are_used_without_a_statement(
        api: Api, demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    async with other_process(api.cloud) as other, await other.as_user("demo") as there:
        assert "Network" in await refusal(there, unbuildable(image))  # read and kept
        reads = lookup_statements(other.cloud)
        assert "Network" in await refusal(there, unbuildable(image))
        assert reads == []


async def test_a_flavor_deleted_elsewhere_is_refused_at_once(
        api: Api, admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    resp = await admin.post(FLAVORS, json={"flavor": {"name": "gone", "ram": 64, "vcpus": 1,
                                                      "disk": 1, "id": "gone"}})
    assert resp.status_code == 200, resp.text
    async with other_process(api.cloud) as other, await other.as_user("demo") as there:
        assert "Network" in await refusal(there, unbuildable(image, "gone"))
        assert (await admin.delete(f"{FLAVORS}/gone")).status_code == 202
        assert "Flavor gone could not be found" in await refusal(there, unbuildable(image, "gone"))


async def test_a_flavor_withdrawn_elsewhere_is_refused_at_once(
        api: Api, admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    flavor = await private_flavor(admin)
    await access(admin, flavor, "addTenantAccess", await project_of(demo))
    async with other_process(api.cloud) as other, await other.as_user("demo") as there:
        assert "Network" in await refusal(there, unbuildable(image, flavor))
        await access(admin, flavor, "removeTenantAccess", await project_of(demo))
        assert f"Flavor {flavor} could not be found" in await refusal(
            there, unbuildable(image, flavor))
        await access(admin, flavor, "addTenantAccess", await project_of(demo))
        assert "Network" in await refusal(there, unbuildable(image, flavor))


@pytest.mark.parametrize("change, undo, refused", [
    ("deactivate", "reactivate", "is not active"),
])
async def test_an_image_deactivated_elsewhere_is_refused_at_once(
        api: Api, demo: httpx.AsyncClient, change: str, undo: str, refused: str) -> None:
    image = await upload_image(demo)
    async with other_process(api.cloud) as other, await other.as_user("demo") as there:
        assert "Network" in await refusal(there, unbuildable(image))
        assert (await demo.post(f"{IMAGES}/{image}/actions/{change}")).status_code == 204
        assert refused in await refusal(there, unbuildable(image))
        assert (await demo.post(f"{IMAGES}/{image}/actions/{undo}")).status_code == 204
        assert "Network" in await refusal(there, unbuildable(image))


async def test_an_image_deleted_or_made_private_elsewhere_is_refused_at_once(
        api: Api, admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    image = await upload_image(admin, name="shared-by-admin")
    resp = await admin.patch(f"{IMAGES}/{image}", json=[
        {"op": "replace", "path": "/visibility", "value": "public"}],
        headers={"Content-Type": "application/openstack-images-v2.1-json-patch"})
    assert resp.status_code == 200, resp.text
    async with other_process(api.cloud) as other, await other.as_user("demo") as there:
        assert "Network" in await refusal(there, unbuildable(image))
        resp = await admin.patch(f"{IMAGES}/{image}", json=[
            {"op": "replace", "path": "/visibility", "value": "private"}],
            headers={"Content-Type": "application/openstack-images-v2.1-json-patch"})
        assert resp.status_code == 200, resp.text
        assert "Can not find requested image" in await refusal(there, unbuildable(image))
        mine = await upload_image(demo, name="mine")
        assert "Network" in await refusal(there, unbuildable(mine))
        assert (await demo.delete(f"{IMAGES}/{mine}")).status_code == 204
        assert "Can not find requested image" in await refusal(there, unbuildable(mine))
