"""Image service v2 over HTTP."""
from __future__ import annotations

import hashlib
import uuid
from typing import Any

import httpx
import pytest

from tests.functional.servers import upload_image

IMAGES = "/image/v2/images"
PATCH = {"Content-Type": "application/openstack-images-v2.1-json-patch"}


async def test_create_upload_download(demo: httpx.AsyncClient) -> None:
    resp = await demo.post(IMAGES, json={"name": "a", "disk_format": "qcow2",
                                         "container_format": "bare", "os_distro": "tiny"})
    assert resp.status_code == 201
    image = resp.json()
    assert image["status"] == "queued" and image["os_distro"] == "tiny"
    data = bytes(range(256)) * 1000
    assert (await demo.put(f"{IMAGES}/{image['id']}/file", content=data,
                           headers={"Content-Type": "application/octet-stream"})).status_code == 204
    shown = (await demo.get(f"{IMAGES}/{image['id']}")).json()
    assert shown["status"] == "active" and shown["size"] == len(data)
    assert shown["checksum"] == hashlib.md5(data).hexdigest()
    assert shown["os_hash_algo"] == "sha512" and shown["os_hash_value"] == hashlib.sha512(data).hexdigest()
    got = await demo.get(f"{IMAGES}/{image['id']}/file")
    assert got.content == data and got.headers["Content-MD5"] == shown["checksum"]
    again = await demo.put(f"{IMAGES}/{image['id']}/file", content=b"x",
                           headers={"Content-Type": "application/octet-stream"})
    assert again.status_code == 409
    assert (await demo.delete(f"{IMAGES}/{image['id']}")).status_code == 204
    assert (await demo.get(f"{IMAGES}/{image['id']}")).status_code == 404


async def test_visibility(admin: httpx.AsyncClient, demo: httpx.AsyncClient) -> None:
    private = (await admin.post(IMAGES, json={"name": "secret", "visibility": "private"})).json()
    public = (await admin.post(IMAGES, json={"name": "open", "visibility": "public"})).json()
    assert (await demo.get(f"{IMAGES}/{private['id']}")).status_code == 404
    assert (await demo.get(f"{IMAGES}/{public['id']}")).status_code == 200
    names = {i["name"] for i in (await demo.get(IMAGES)).json()["images"]}
    assert "open" in names and "secret" not in names
    forbidden = await demo.post(IMAGES, json={"name": "mine", "visibility": "public"})
    assert forbidden.status_code == 403 and forbidden.json()["code"].startswith("403")


@pytest.mark.parametrize("params, names", [
    ({"os_distro": "tiny"}, ["p1", "p2"]),
    ({"os_distro": "tiny", "hw_rng": "yes"}, ["p2"]),
    ({"os_distro": "other"}, []),
    ({"os_distro": "tiny", "name": "p1"}, ["p1"]),
    ({"limit": "5", "sort_key": "name", "sort_dir": "asc", "os_distro": "tiny"}, ["p1", "p2"]),
])
async def test_listing_filters_on_properties(demo: httpx.AsyncClient, params: dict[str, str],
                                             names: list[str]) -> None:
    """A query parameter that is not one of the listing's own is a property
    filter, by exact value (Glance)."""
    for name, extra in (("p1", {}), ("p2", {"hw_rng": "yes"}), ("p3", {"os_distro": "x"})):
        body = {"name": name, "disk_format": "raw", "container_format": "bare", **extra}
        if name != "p3":
            body["os_distro"] = "tiny"
        assert (await demo.post(IMAGES, json=body)).status_code == 201
    listed = (await demo.get(IMAGES, params={"sort_key": "name", "sort_dir": "asc",
                                             **params})).json()["images"]
    assert [i["name"] for i in listed] == names


async def test_json_patch(demo: httpx.AsyncClient) -> None:
    image = (await demo.post(IMAGES, json={"name": "p"})).json()
    url = f"{IMAGES}/{image['id']}"
    ops = [{"op": "add", "path": "/color", "value": "blue"},
           {"op": "replace", "path": "/name", "value": "q"}]
    patched = (await demo.patch(url, json=ops, headers=PATCH)).json()
    assert patched["color"] == "blue" and patched["name"] == "q"
    patched = (await demo.patch(url, json=[{"op": "remove", "path": "/color"}], headers=PATCH)).json()
    assert "color" not in patched
    assert (await demo.patch(url, json=[{"op": "replace", "path": "/status", "value": "active"}],
                             headers=PATCH)).status_code == 403
    assert (await demo.patch(url, json=ops)).status_code == 415


@pytest.mark.parametrize("body", [{"name": 5}, {"disk_format": "floppy"}, {"min_ram": -1},
                                  {"visibility": "everyone"}, {"protected": "yes"}, []])
async def test_bad_bodies_are_400(demo: httpx.AsyncClient, body: Any) -> None:
    resp = await demo.post(IMAGES, json=body)
    assert resp.status_code == 400, resp.text


@pytest.mark.parametrize("settings_overrides", [{"max_image_bytes": 1000}])
async def test_too_large_upload_is_413_and_image_stays_queued(demo: httpx.AsyncClient) -> None:
    image = (await demo.post(IMAGES, json={"name": "big"})).json()
    resp = await demo.put(f"{IMAGES}/{image['id']}/file", content=b"x" * 5000,
                          headers={"Content-Type": "application/octet-stream"})
    assert resp.status_code == 413
    assert (await demo.get(f"{IMAGES}/{image['id']}")).json()["status"] == "queued"


async def test_protected_image_cannot_be_deleted(demo: httpx.AsyncClient) -> None:
    image = (await demo.post(IMAGES, json={"name": "keep", "protected": True})).json()
    assert (await demo.delete(f"{IMAGES}/{image['id']}")).status_code == 403


async def test_version_documents_are_public(api: Any) -> None:
    async with api.client() as anon:
        for path in ("/", "/identity/", "/identity/v3", "/compute/", "/compute/v2.1/",
                     "/image/", "/network/"):
            resp = await anon.get(path)
            assert resp.status_code in (200, 300), (path, resp.status_code)


async def test_an_images_tasks_are_listed_empty_for_whoever_may_see_it(
        demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, name="tasks")
    resp = await demo.get(f"/image/v2/images/{image}/tasks")
    assert resp.status_code == 200 and resp.json() == {"tasks": []}
    assert (await demo.get(f"/image/v2/images/{uuid.uuid4()}/tasks")).status_code == 404


async def test_hidden_images_are_listed_only_when_asked_for(demo: httpx.AsyncClient) -> None:
    hidden = (await demo.post(IMAGES, json={"name": "h", "os_hidden": True})).json()
    shown = (await demo.post(IMAGES, json={"name": "s"})).json()
    assert hidden["os_hidden"] is True and shown["os_hidden"] is False
    names = lambda resp: {i["name"] for i in resp.json()["images"]}  # noqa: E731
    assert names(await demo.get(IMAGES)) == {"s"}
    assert names(await demo.get(IMAGES, params={"os_hidden": "true"})) == {"h"}
    assert names(await demo.get(IMAGES, params={"os_hidden": "False"})) == {"s"}
    assert (await demo.get(IMAGES, params={"os_hidden": "maybe"})).status_code == 400
    # os_hidden is a base attribute: replaced though never set, never removed.
    url = f"{IMAGES}/{shown['id']}"
    hide = [{"op": "replace", "path": "/os_hidden", "value": True}]
    assert (await demo.patch(url, json=hide, headers=PATCH)).json()["os_hidden"] is True
    assert names(await demo.get(IMAGES)) == set()
    remove = [{"op": "remove", "path": "/os_hidden"}]
    assert (await demo.patch(url, json=remove, headers=PATCH)).status_code == 403
    wrong = [{"op": "replace", "path": "/os_hidden", "value": "yes"}]
    assert (await demo.patch(url, json=wrong, headers=PATCH)).status_code == 400


@pytest.mark.parametrize("params, sizes", [
    ({"size_min": "15"}, [20, 30]), ({"size_max": "20"}, [10, 20]), ({"size": "20"}, [20]),
    ({"size_min": "11", "size_max": "29"}, [20]), ({"size_min": "31"}, []),
    ({"size": "20", "size_min": "25"}, []),
])
async def test_listing_by_size(demo: httpx.AsyncClient, params: dict[str, str],
                               sizes: list[int]) -> None:
    for size in (10, 20, 30):
        await upload_image(demo, name=f"z{size}", data=b"z" * size)
    await demo.post(IMAGES, json={"name": "unsized"})  # no data: no size to compare
    listed = (await demo.get(IMAGES, params=params)).json()["images"]
    assert sorted(i["size"] for i in listed) == sizes


@pytest.mark.parametrize("params", [{"size_min": "x"}, {"size_max": "1.5"}, {"size": ""}])
async def test_bad_size_filters_are_400(demo: httpx.AsyncClient, params: dict[str, str]) -> None:
    assert (await demo.get(IMAGES, params=params)).status_code == 400
