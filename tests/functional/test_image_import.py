"""Image v2: deactivate/reactivate, staging and glance-direct import, tasks,
and the /v2/info documents, over HTTP."""
from __future__ import annotations

import hashlib
import uuid
from typing import Any

import httpx
import pytest

from tests.functional.servers import upload_image
from tests.tenants import Tenants

IMAGES = "/image/v2/images"
OCTETS = {"Content-Type": "application/octet-stream"}
GLANCE_DIRECT = {"method": {"name": "glance-direct"}}


async def _queued(client: httpx.AsyncClient, **extra: Any) -> str:
    body = {"name": "i", "disk_format": "raw", "container_format": "bare", **extra}
    resp = await client.post(IMAGES, json=body)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def _status(client: httpx.AsyncClient, image_id: str) -> str:
    return str((await client.get(f"{IMAGES}/{image_id}")).json()["status"])


# -- deactivate / reactivate ------------------------------------------------------------
async def test_deactivated_data_is_for_admins_only_until_reactivated(
        admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, name="d", data=b"abc" * 100)
    assert (await demo.post(f"{IMAGES}/{image}/actions/deactivate")).status_code == 204
    assert await _status(demo, image) == "deactivated"
    refused = await demo.get(f"{IMAGES}/{image}/file")
    assert refused.status_code == 403 and "deactivated" in refused.text
    assert (await admin.get(f"{IMAGES}/{image}/file")).content == b"abc" * 100
    # Idempotent, as Glance's.
    assert (await demo.post(f"{IMAGES}/{image}/actions/deactivate")).status_code == 204
    assert (await demo.post(f"{IMAGES}/{image}/actions/reactivate")).status_code == 204
    assert (await demo.post(f"{IMAGES}/{image}/actions/reactivate")).status_code == 204
    assert await _status(demo, image) == "active"
    assert (await demo.get(f"{IMAGES}/{image}/file")).content == b"abc" * 100


@pytest.mark.parametrize("action", ["deactivate", "reactivate"])
async def test_actions_on_a_queued_image_are_400(demo: httpx.AsyncClient, action: str) -> None:
    image = await _queued(demo)
    resp = await demo.post(f"{IMAGES}/{image}/actions/{action}")
    assert resp.status_code == 400 and "queued" in resp.text
    assert await _status(demo, image) == "queued"


@pytest.mark.parametrize("persona, code", [("reader", 403), ("other", 404), ("admin", 204)])
async def test_who_may_deactivate(tenants: Tenants, persona: str, code: int) -> None:
    image = await upload_image(tenants.member, name="w")
    resp = await tenants.clients[persona].post(f"{IMAGES}/{image}/actions/deactivate")
    assert resp.status_code == code, resp.text


async def test_another_projects_public_image_cannot_be_deactivated(tenants: Tenants) -> None:
    image = await upload_image(tenants.admin, name="pub", visibility="public")
    resp = await tenants.member.post(f"{IMAGES}/{image}/actions/deactivate")
    assert resp.status_code == 403
    assert await _status(tenants.member, image) == "active"


async def test_no_volume_from_a_deactivated_image(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, name="vol")
    await demo.post(f"{IMAGES}/{image}/actions/deactivate")
    project = (await demo.get("/identity/v3/auth/tokens", headers={
        "X-Subject-Token": demo.headers["X-Auth-Token"]})).json()["token"]["project"]["id"]
    resp = await demo.post(f"/volume/v3/{project}/volumes",
                           json={"volume": {"size": 1, "imageRef": image}})
    assert resp.status_code == 400, resp.text


# -- staging and import ------------------------------------------------------------------
async def test_glance_direct_import(demo: httpx.AsyncClient) -> None:
    image = await _queued(demo)
    data = bytes(range(256)) * 64
    assert (await demo.put(f"{IMAGES}/{image}/stage", content=data,
                           headers=OCTETS)).status_code == 204
    assert await _status(demo, image) == "uploading"
    resp = await demo.post(f"{IMAGES}/{image}/import", json=GLANCE_DIRECT)
    assert resp.status_code == 202 and resp.content == b"", resp.text
    shown = (await demo.get(f"{IMAGES}/{image}")).json()
    assert shown["status"] == "active" and shown["size"] == len(data)
    assert shown["os_hash_value"] == hashlib.sha512(data).hexdigest()
    assert shown["checksum"] == hashlib.md5(data).hexdigest()
    assert (await demo.get(f"{IMAGES}/{image}/file")).content == data
    tasks = (await demo.get(f"{IMAGES}/{image}/tasks")).json()["tasks"]
    assert len(tasks) == 1
    task = tasks[0]
    assert task["status"] == "success" and task["image_id"] == image
    assert task["request_id"] == resp.headers["x-openstack-request-id"]
    assert task["input"]["import_req"]["method"]["name"] == "glance-direct"
    assert task["result"] == {"image_id": image} and task["expires_at"]


async def test_import_before_staging_is_409(demo: httpx.AsyncClient) -> None:
    image = await _queued(demo)
    resp = await demo.post(f"{IMAGES}/{image}/import", json=GLANCE_DIRECT)
    assert resp.status_code == 409 and "staged" in resp.text
    assert (await demo.get(f"{IMAGES}/{image}/tasks")).json()["tasks"] == []


async def test_import_needs_the_formats(demo: httpx.AsyncClient) -> None:
    resp = await demo.post(IMAGES, json={"name": "noformat"})
    image = resp.json()["id"]
    await demo.put(f"{IMAGES}/{image}/stage", content=b"x", headers=OCTETS)
    resp = await demo.post(f"{IMAGES}/{image}/import", json=GLANCE_DIRECT)
    assert resp.status_code == 409 and "container_format" in resp.text
    assert await _status(demo, image) == "uploading"


async def test_staging_twice_or_after_upload_is_409(demo: httpx.AsyncClient) -> None:
    image = await _queued(demo)
    await demo.put(f"{IMAGES}/{image}/stage", content=b"x", headers=OCTETS)
    assert (await demo.put(f"{IMAGES}/{image}/stage", content=b"y",
                           headers=OCTETS)).status_code == 409
    active = await upload_image(demo, name="up")
    assert (await demo.put(f"{IMAGES}/{active}/stage", content=b"y",
                           headers=OCTETS)).status_code == 409


async def test_staging_takes_only_octet_streams(demo: httpx.AsyncClient) -> None:
    image = await _queued(demo)
    resp = await demo.put(f"{IMAGES}/{image}/stage", content=b"x",
                          headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415
    assert await _status(demo, image) == "queued"


@pytest.mark.parametrize("settings_overrides", [{"max_image_bytes": 1000}])
async def test_staging_too_much_is_413_and_the_image_stays_queued(
        demo: httpx.AsyncClient) -> None:
    image = await _queued(demo)
    resp = await demo.put(f"{IMAGES}/{image}/stage", content=b"x" * 5000, headers=OCTETS)
    assert resp.status_code == 413
    assert await _status(demo, image) == "queued"


@pytest.mark.parametrize("body, words", [
    ({}, "'method' field"),
    ({"method": {}}, "'name' field"),
    ({"method": {"name": "web-download", "uri": "http://example.com/i.img"}}, "web-download"),
    ({"method": {"name": "copy-image"}}, "copy-image"),
    ({"method": {"name": "glance-direct"}, "all_stores": "yes"}, "boolean"),
    ({"method": {"name": "glance-direct"}, "stores": ["a"]}, "Multi backend"),
    ({"method": {"name": "glance-direct"}, "all_stores_must_succeed": False}, "enabled_backends"),
    ([], "'method' field"),
])
async def test_bad_import_bodies_are_400(demo: httpx.AsyncClient, body: Any, words: str) -> None:
    image = await _queued(demo)
    await demo.put(f"{IMAGES}/{image}/stage", content=b"x", headers=OCTETS)
    resp = await demo.post(f"{IMAGES}/{image}/import", json=body)
    assert resp.status_code == 400 and words in resp.text, resp.text
    assert await _status(demo, image) == "uploading"


@pytest.mark.parametrize("persona, code", [("reader", 403), ("other", 404)])
async def test_only_the_owners_members_stage_and_import(tenants: Tenants, persona: str,
                                                        code: int) -> None:
    image = await _queued(tenants.member)
    client = tenants.clients[persona]
    assert (await client.put(f"{IMAGES}/{image}/stage", content=b"x",
                             headers=OCTETS)).status_code == code
    await tenants.member.put(f"{IMAGES}/{image}/stage", content=b"x", headers=OCTETS)
    assert (await client.post(f"{IMAGES}/{image}/import",
                              json=GLANCE_DIRECT)).status_code == code
    assert await _status(tenants.member, image) == "uploading"


async def test_deleting_a_staged_image_removes_its_staged_data(
        demo: httpx.AsyncClient, api: Any) -> None:
    image = await _queued(demo)
    await demo.put(f"{IMAGES}/{image}/stage", content=b"x" * 10, headers=OCTETS)
    staged = api.cloud.state["images"].staging.path(image)
    assert staged.exists()
    assert (await demo.delete(f"{IMAGES}/{image}")).status_code == 204
    assert not staged.exists()


# -- /v2/info and tasks ------------------------------------------------------------------
async def test_info_documents(demo: httpx.AsyncClient) -> None:
    methods = (await demo.get("/image/v2/info/import")).json()["import-methods"]
    assert methods["value"] == ["glance-direct"] and methods["type"] == "array"
    stores = await demo.get("/image/v2/info/stores")
    assert stores.status_code == 404 and "Multi backend" in stores.text


async def test_usage_counts_the_projects_images(demo: httpx.AsyncClient) -> None:
    await upload_image(demo, name="u1", data=b"x" * (3 << 20))
    image = await _queued(demo)
    await demo.put(f"{IMAGES}/{image}/stage", content=b"x" * (2 << 20), headers=OCTETS)
    usage = (await demo.get("/image/v2/info/usage")).json()["usage"]
    assert usage["image_count_total"] == {"limit": -1, "usage": 2}
    assert usage["image_size_total"]["usage"] == 3
    assert usage["image_stage_total"]["usage"] == 2
    assert usage["image_count_uploading"]["usage"] == 1


async def test_tasks_api_is_admins_and_refuses_url_imports(
        admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    task = {"type": "import", "input": {"import_from": "http://example.com/x.qcow2",
                                        "import_from_format": "qcow2",
                                        "image_properties": {"disk_format": "qcow2"}}}
    assert (await demo.post("/image/v2/tasks", json=task)).status_code == 403
    resp = await admin.post("/image/v2/tasks", json=task)
    assert resp.status_code == 400 and "URL" in resp.text
    assert (await admin.get("/image/v2/tasks")).json()["tasks"] == []
    assert (await admin.get(f"/image/v2/tasks/{uuid.uuid4()}")).status_code == 404


@pytest.mark.parametrize("body", [{}, {"type": "import"}, {"type": "copy", "input": {}},
                                  {"type": "import", "input": "x"}, []])
async def test_bad_task_bodies_are_400(admin: httpx.AsyncClient, body: Any) -> None:
    assert (await admin.post("/image/v2/tasks", json=body)).status_code == 400


async def test_an_import_task_is_listed_and_shown(admin: httpx.AsyncClient) -> None:
    image = await _queued(admin)
    await admin.put(f"{IMAGES}/{image}/stage", content=b"x", headers=OCTETS)
    await admin.post(f"{IMAGES}/{image}/import", json=GLANCE_DIRECT)
    listed = (await admin.get("/image/v2/tasks")).json()["tasks"]
    assert [t["image_id"] for t in listed] == [image] and "input" not in listed[0]
    shown = (await admin.get(f"/image/v2/tasks/{listed[0]['id']}")).json()
    assert shown["status"] == "success" and shown["type"] == "api_image_import"


@pytest.mark.parametrize("name, title", [
    ("member", "member"), ("members", "members"), ("task", "task"), ("tasks", "tasks")])
async def test_schemas(demo: httpx.AsyncClient, name: str, title: str) -> None:
    body = (await demo.get(f"/image/v2/schemas/{name}")).json()
    assert body["name"] == title and body["properties"]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_a_trailing_slash_names_no_image(demo: httpx.AsyncClient, method: str) -> None:
    assert (await demo.request(method, f"{IMAGES}/")).status_code == 404
