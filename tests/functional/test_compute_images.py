"""Compute's image proxy over HTTP: /images (2.1–2.35) and their metadata
(2.1–2.38) in Nova's shapes, with the image service's visibility rules."""
from __future__ import annotations

import httpx
import pytest

from tests.conftest import Api
from tests.functional.servers import upload_image
from tests.functional.test_identity_admin import make_user

IMAGES = "/compute/v2.1/images"


def at(version: str) -> dict[str, str]:
    return {"OpenStack-API-Version": f"compute {version}"}


async def test_list_detail_show(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, name="tiny", min_ram=64, os_distro="busybox")
    listed = (await demo.get(IMAGES)).json()["images"]
    assert [i for i in listed if i["id"] == image][0]["name"] == "tiny"
    assert all(set(i) == {"id", "name", "links"} for i in listed)
    shown = await demo.get(f"{IMAGES}/{image}")
    assert shown.status_code == 200, shown.text
    body = shown.json()["image"]
    assert body["status"] == "ACTIVE" and body["progress"] == 100
    assert body["minRam"] == 64 and body["minDisk"] == 0
    assert body["metadata"] == {"os_distro": "busybox"}
    assert body["OS-EXT-IMG-SIZE:size"] == 1024
    assert {link["rel"] for link in body["links"]} == {"self", "bookmark", "alternate"}
    detail = (await demo.get(f"{IMAGES}/detail")).json()["images"]
    assert [i for i in detail if i["id"] == image] == [body]


async def test_a_queued_image_is_saving(demo: httpx.AsyncClient) -> None:
    made = await demo.post("/image/v2/images", json={"name": "q", "disk_format": "raw",
                                                     "container_format": "bare"})
    shown = (await demo.get(f"{IMAGES}/{made.json()['id']}")).json()["image"]
    assert (shown["status"], shown["progress"]) == ("SAVING", 25)


async def test_filters_and_paging(demo: httpx.AsyncClient) -> None:
    ids = [await upload_image(demo, name=f"img{i}", min_disk=i) for i in range(3)]
    by_name = (await demo.get(IMAGES, params={"name": "img1"})).json()["images"]
    assert [i["id"] for i in by_name] == [ids[1]]
    big = (await demo.get(f"{IMAGES}/detail", params={"minDisk": 1})).json()["images"]
    assert {i["id"] for i in big} == set(ids[1:])
    active = (await demo.get(IMAGES, params={"status": "ACTIVE"})).json()["images"]
    assert set(ids) <= {i["id"] for i in active}
    assert (await demo.get(IMAGES, params={"status": "SAVING"})).json()["images"] == []
    page = (await demo.get(IMAGES, params={"limit": 2})).json()
    assert len(page["images"]) == 2 and page["images_links"][0]["rel"] == "next"
    assert page["images_links"][0]["href"] == (
        f"http://127.0.0.1:8774{IMAGES}?limit=2&marker={page['images'][-1]['id']}")
    assert "images_links" not in (await demo.get(IMAGES, params={"limit": 0})).json()
    rest = (await demo.get(IMAGES, params={"marker": page["images"][-1]["id"]})).json()["images"]
    assert len(rest) == 1
    future = (await demo.get(IMAGES, params={"changes-since": "2999-01-01T00:00:00Z"})).json()
    assert future["images"] == []
    assert (await demo.get(IMAGES, params={"changes-since": "soon"})).status_code == 400
    assert (await demo.get(IMAGES, params={"marker": "nope"})).status_code == 400


async def test_delete(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo)
    assert (await demo.delete(f"{IMAGES}/{image}")).status_code == 204
    assert (await demo.get(f"{IMAGES}/{image}")).status_code == 404
    assert (await demo.delete(f"{IMAGES}/{image}")).status_code == 404


@pytest.mark.parametrize("method, path, version", [
    ("GET", "", "2.36"), ("GET", "/detail", "2.36"), ("GET", "/{id}", "2.36"),
    ("DELETE", "/{id}", "2.36"), ("GET", "/{id}/metadata", "2.39"),
    ("GET", "/{id}/metadata/k", "2.39")])
async def test_gone_after_their_last_microversion(demo: httpx.AsyncClient, method: str,
                                                  path: str, version: str) -> None:
    image = await upload_image(demo)
    resp = await demo.request(method, IMAGES + path.format(id=image), headers=at(version))
    assert resp.status_code == 404
    assert (await demo.get(f"{IMAGES}/{image}", headers=at("2.35"))).status_code == 200


async def test_metadata_crud(demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, os_distro="busybox")
    meta = f"{IMAGES}/{image}/metadata"
    assert (await demo.get(meta)).json() == {"metadata": {"os_distro": "busybox"}}
    merged = await demo.post(meta, json={"metadata": {"a": "1", "b": "2"}})
    assert merged.status_code == 200, merged.text
    assert merged.json()["metadata"] == {"os_distro": "busybox", "a": "1", "b": "2"}
    replaced = await demo.put(meta, json={"metadata": {"a": "9", "c": "3"}})
    assert replaced.json()["metadata"] == {"a": "9", "c": "3"}
    assert (await demo.get(f"{meta}/a")).json() == {"meta": {"a": "9"}}
    item = await demo.put(f"{meta}/d", json={"meta": {"d": "4"}})
    assert item.status_code == 200 and item.json() == {"meta": {"d": "4"}}
    assert (await demo.delete(f"{meta}/c")).status_code == 204
    assert (await demo.get(meta)).json()["metadata"] == {"a": "9", "d": "4"}
    assert (await demo.get(f"{meta}/c")).status_code == 404
    assert (await demo.delete(f"{meta}/c")).status_code == 404
    shown = (await demo.get(f"{IMAGES}/{image}")).json()["image"]
    assert shown["metadata"] == {"a": "9", "d": "4"}


@pytest.mark.parametrize("method, suffix, body", [
    ("PUT", "/k", {"meta": {"other": "v"}}), ("PUT", "/k", {"meta": {"k": "v", "j": "w"}}),
    ("PUT", "/k", {"metadata": {"k": "v"}}), ("POST", "", {"metadata": {"k": 1}}),
    ("POST", "", {"metadata": {"name": "renamed"}}), ("PUT", "", {"metadata": []}),
    ("POST", "", {"meta": {"k": "v"}}), ("POST", "", {"metadata": {"": "v"}})])
async def test_bad_metadata_bodies_are_400(demo: httpx.AsyncClient, method: str, suffix: str,
                                           body: dict) -> None:
    image = await upload_image(demo)
    resp = await demo.request(method, f"{IMAGES}/{image}/metadata{suffix}", json=body)
    assert resp.status_code == 400, resp.text
    assert (await demo.get(f"{IMAGES}/{image}")).json()["image"]["name"] == "cirros"


async def test_another_projects_private_image_is_404(api: Api, admin: httpx.AsyncClient,
                                                     demo: httpx.AsyncClient) -> None:
    image = await upload_image(demo, visibility="private")
    await make_user(admin, "eve")
    async with await api.as_user("eve") as eve:
        assert image not in {i["id"] for i in (await eve.get(IMAGES)).json()["images"]}
        for method, path in (("GET", ""), ("DELETE", ""), ("GET", "/metadata"),
                             ("DELETE", "/metadata/k")):
            resp = await eve.request(method, f"{IMAGES}/{image}{path}")
            assert resp.status_code == 404, (method, path, resp.text)
        post = await eve.post(f"{IMAGES}/{image}/metadata", json={"metadata": {"k": "v"}})
        assert post.status_code == 404
    assert (await demo.get(f"{IMAGES}/{image}/metadata")).json()["metadata"] == {}
