"""Image API roles and ownership, as Glance's secure-RBAC defaults have them.

A reader reads and never writes; another project's member neither sees a
private image (404) nor changes a public one (403); publishing and giving an
image to another project are for admins; only the owner manages members, and
a member project answers for its own membership only.
"""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.security.conftest import Tenants

IMAGES = "/image/v2/images"
PATCH = {"Content-Type": "application/openstack-images-v2.1-json-patch"}
DATA = {"Content-Type": "application/octet-stream"}


async def listings_answer(t: Tenants) -> None:
    """After any refused request, the listings still work for owner and admin."""
    for client in (t.member, t.admin):
        resp = await client.get(IMAGES)
        assert resp.status_code == 200, resp.text


async def make_image(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    resp = await client.post(IMAGES, json={"name": "img", "disk_format": "raw",
                                           "container_format": "bare", **body})
    assert resp.status_code == 201, resp.text
    return resp.json()


async def writes(client: httpx.AsyncClient, image_id: str) -> dict[str, httpx.Response]:
    """Every kind of image write, by ``client``, on ``image_id``."""
    url = f"{IMAGES}/{image_id}"
    return {
        "patch": await client.patch(url, headers=PATCH,
                                    json=[{"op": "replace", "path": "/name", "value": "pwned"}]),
        "upload": await client.put(f"{url}/file", content=b"evil", headers=DATA),
        "add tag": await client.put(f"{url}/tags/evil"),
        "remove tag": await client.delete(f"{url}/tags/keep"),
        "add member": await client.post(f"{url}/members", json={"member": "someone"}),
        "delete": await client.delete(url),
    }


async def unchanged(t: Tenants, image: dict[str, Any]) -> None:
    shown = (await t.admin.get(f"{IMAGES}/{image['id']}")).json()
    assert (shown["name"], shown["status"], shown["tags"]) == (image["name"], "queued", ["keep"])
    if shown["visibility"] == "shared":
        members = await t.admin.get(f"{IMAGES}/{image['id']}/members")
        assert members.json()["members"] == [], members.text


async def test_a_reader_reads_but_never_writes(tenants: Tenants) -> None:
    image = await make_image(tenants.member, visibility="shared", tags=["keep"])
    assert (await tenants.reader.get(f"{IMAGES}/{image['id']}")).status_code == 200
    listed = (await tenants.reader.get(IMAGES)).json()["images"]
    assert image["id"] in {i["id"] for i in listed}
    assert (await tenants.reader.get(f"{IMAGES}/{image['id']}/members")).status_code == 200
    for what, resp in (await writes(tenants.reader, image["id"])).items():
        assert resp.status_code == 403, (what, resp.text)
    created = await tenants.reader.post(IMAGES, json={"name": "by-reader"})
    assert created.status_code == 403, created.text
    await unchanged(tenants, image)
    await listings_answer(tenants)


async def test_a_reader_may_not_download(tenants: Tenants) -> None:
    """Glance's download_image needs the member role."""
    image = await make_image(tenants.member)
    url = f"{IMAGES}/{image['id']}/file"
    assert (await tenants.member.put(url, content=b"data", headers=DATA)).status_code == 204
    assert (await tenants.reader.get(url)).status_code == 403
    assert (await tenants.member.get(url)).content == b"data"


@pytest.mark.parametrize("visibility", ["private", "shared"])
async def test_another_project_neither_sees_nor_changes_a_private_image(
        tenants: Tenants, visibility: str) -> None:
    image = await make_image(tenants.member, visibility=visibility, tags=["keep"])
    assert (await tenants.other.get(f"{IMAGES}/{image['id']}")).status_code == 404
    assert (await tenants.other.get(f"{IMAGES}/{image['id']}/file")).status_code == 404
    assert (await tenants.other.get(f"{IMAGES}/{image['id']}/members")).status_code == 404
    listed = (await tenants.other.get(IMAGES, params={"visibility": "all"})).json()["images"]
    assert image["id"] not in {i["id"] for i in listed}
    for what, resp in (await writes(tenants.other, image["id"])).items():
        assert resp.status_code == 404, (what, resp.text)
    await unchanged(tenants, image)
    await listings_answer(tenants)


@pytest.mark.parametrize("visibility", ["public", "community"])
async def test_another_project_sees_but_cannot_change_a_public_image(
        tenants: Tenants, visibility: str) -> None:
    image = await make_image(tenants.admin, visibility=visibility, tags=["keep"])
    patched = await tenants.admin.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
        {"op": "add", "path": "/owner", "value": tenants.project["demo"]}])
    assert patched.status_code == 200, patched.text
    image = patched.json()
    assert (await tenants.other.get(f"{IMAGES}/{image['id']}")).status_code == 200
    for what, resp in (await writes(tenants.other, image["id"])).items():
        assert resp.status_code == 403, (what, resp.text)
    await unchanged(tenants, image)
    await listings_answer(tenants)


@pytest.mark.parametrize("persona", ["norole", "unscoped"])
async def test_no_role_no_scope_no_images(tenants: Tenants, persona: str) -> None:
    image = await make_image(tenants.admin, visibility="public", tags=["keep"])
    client = getattr(tenants, persona)
    assert (await client.get(IMAGES)).status_code in (401, 403)
    assert (await client.get(f"{IMAGES}/{image['id']}")).status_code in (401, 403, 404)
    assert (await client.post(IMAGES, json={"name": "x"})).status_code in (401, 403)
    for what, resp in (await writes(client, image["id"])).items():
        assert resp.status_code in (401, 403, 404), (what, resp.text)
    await unchanged(tenants, image)
    await listings_answer(tenants)


async def test_only_admins_publish(tenants: Tenants) -> None:
    refused = await tenants.member.post(IMAGES, json={"name": "pub", "visibility": "public"})
    assert refused.status_code == 403, refused.text
    image = await make_image(tenants.member)
    for value in ("public",):
        resp = await tenants.member.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
            {"op": "replace", "path": "/visibility", "value": value}])
        assert resp.status_code == 403, resp.text
    assert (await tenants.other.get(f"{IMAGES}/{image['id']}")).status_code == 404
    community = await tenants.member.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
        {"op": "replace", "path": "/visibility", "value": "community"}])
    assert community.status_code == 200, community.text
    published = await tenants.admin.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
        {"op": "replace", "path": "/visibility", "value": "public"}])
    assert published.status_code == 200 and published.json()["visibility"] == "public"
    await listings_answer(tenants)


async def test_only_admins_give_an_image_to_another_project(tenants: Tenants) -> None:
    other = tenants.project["other"]
    refused = await tenants.member.post(IMAGES, json={"name": "gift", "owner": other})
    assert refused.status_code == 403, refused.text
    own = await make_image(tenants.member, owner=tenants.project["demo"])
    assert own["owner"] == tenants.project["demo"]
    for op in ("add", "replace"):
        resp = await tenants.member.patch(f"{IMAGES}/{own['id']}", headers=PATCH, json=[
            {"op": op, "path": "/owner", "value": other}])
        assert resp.status_code == 403, resp.text
    assert (await tenants.other.get(f"{IMAGES}/{own['id']}")).status_code == 404
    given = await tenants.admin.patch(f"{IMAGES}/{own['id']}", headers=PATCH, json=[
        {"op": "replace", "path": "/owner", "value": other}])
    assert given.status_code == 200 and given.json()["owner"] == other
    assert (await tenants.other.get(f"{IMAGES}/{own['id']}")).status_code == 200
    assert (await tenants.member.get(f"{IMAGES}/{own['id']}")).status_code == 404
    made = await make_image(tenants.admin, owner=tenants.project["demo"], visibility="private")
    renamed = await tenants.member.patch(f"{IMAGES}/{made['id']}", headers=PATCH, json=[
        {"op": "replace", "path": "/name", "value": "mine now"}])
    assert renamed.status_code == 200, renamed.text
    await listings_answer(tenants)


@pytest.mark.parametrize("owner", ["x" * 65, "", "a b", "\u00e9t\u00e9", "a/b", 5, None, ["demo"]])
async def test_an_owner_must_be_a_plausible_project_id(tenants: Tenants, owner: Any) -> None:
    resp = await tenants.admin.post(IMAGES, json={"name": "o", "owner": owner})
    assert resp.status_code == 400, resp.text
    image = await make_image(tenants.admin)
    resp = await tenants.admin.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
        {"op": "replace", "path": "/owner", "value": owner}])
    assert resp.status_code == 400, resp.text
    await listings_answer(tenants)


# -- members --------------------------------------------------------------------------------

async def shared_with_other(t: Tenants) -> tuple[str, str]:
    """A shared image of demo with project ``other`` as a (pending) member: (url, other)."""
    image = await make_image(t.member, visibility="shared")
    url = f"{IMAGES}/{image['id']}/members"
    resp = await t.member.post(url, json={"member": t.project["other"]})
    assert resp.status_code == 200 and resp.json()["status"] == "pending", resp.text
    return url, t.project["other"]


async def test_a_member_project_accepts_for_itself_only(tenants: Tenants) -> None:
    url, other = await shared_with_other(tenants)
    image_url = url.removesuffix("/members")
    assert (await tenants.other.get(image_url)).status_code == 200
    assert image_url.split("/")[-1] not in {i["id"] for i in (await tenants.other.get(IMAGES)).json()["images"]}
    owner_accepts = await tenants.member.put(f"{url}/{other}", json={"status": "accepted"})
    assert owner_accepts.status_code == 403, owner_accepts.text
    reader_accepts = await tenants.reader.put(f"{url}/{other}", json={"status": "accepted"})
    assert reader_accepts.status_code == 403, reader_accepts.text
    accepted = await tenants.other.put(f"{url}/{other}", json={"status": "accepted"})
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    listed = {i["id"] for i in (await tenants.other.get(IMAGES)).json()["images"]}
    assert image_url.split("/")[-1] in listed
    await listings_answer(tenants)


async def test_only_the_owner_manages_members(tenants: Tenants) -> None:
    url, other = await shared_with_other(tenants)
    admin_project = tenants.project["admin"]
    assert (await tenants.admin.post(url, json={"member": admin_project})).status_code == 200
    # The member project may neither add, remove, nor touch another membership.
    assert (await tenants.other.post(url, json={"member": "someone"})).status_code == 403
    assert (await tenants.other.delete(f"{url}/{other}")).status_code == 403
    assert (await tenants.other.delete(f"{url}/{admin_project}")).status_code == 404
    resp = await tenants.other.put(f"{url}/{admin_project}", json={"status": "rejected"})
    assert resp.status_code == 404, resp.text
    assert (await tenants.other.get(f"{url}/{admin_project}")).status_code == 404
    # ... and sees its own membership only.
    seen = (await tenants.other.get(url)).json()["members"]
    assert [m["member_id"] for m in seen] == [other]
    assert (await tenants.other.get(f"{url}/{other}")).status_code == 200
    # The owner's reader sees them all but changes nothing.
    assert len((await tenants.reader.get(url)).json()["members"]) == 2
    assert (await tenants.reader.delete(f"{url}/{other}")).status_code == 403
    assert (await tenants.reader.post(url, json={"member": "someone"})).status_code == 403
    assert len((await tenants.member.get(url)).json()["members"]) == 2
    assert (await tenants.member.delete(f"{url}/{other}")).status_code == 204
    await listings_answer(tenants)


async def test_only_shared_images_have_members(tenants: Tenants) -> None:
    image = await make_image(tenants.member, visibility="private")
    resp = await tenants.member.post(f"{IMAGES}/{image['id']}/members",
                                     json={"member": tenants.project["other"]})
    assert resp.status_code == 403, resp.text
    await listings_answer(tenants)
