"""Image API input: Glance's schema, limits, quotas, media types and query
parameters. Nothing a client sends is a 500, nothing it can store breaks a
listing: after every refused request ``GET /v2/images`` still answers.
"""
from __future__ import annotations

import json
import math
from typing import Any

import httpx
import pytest

from cirrus.image.models import images
from tests.security.conftest import Tenants

IMAGES = "/image/v2/images"
PATCH = {"Content-Type": "application/openstack-images-v2.1-json-patch"}
JSON = {"Content-Type": "application/json"}
DATA = {"Content-Type": "application/octet-stream"}
BIG = 2**63


async def listings_answer(t: Tenants) -> None:
    """After any refused request, the listings still work for owner and admin."""
    for client in (t.member, t.admin):
        resp = await client.get(IMAGES)
        assert resp.status_code == 200, resp.text
        for image in resp.json()["images"]:
            assert (await client.get(f"{IMAGES}/{image['id']}")).status_code == 200


@pytest.fixture
async def image(tenants: Tenants) -> dict[str, Any]:
    resp = await tenants.member.post(IMAGES, json={"name": "victim", "color": "blue"})
    assert resp.status_code == 201, resp.text
    return resp.json()


async def patch_raw(client: httpx.AsyncClient, image: dict[str, Any], text: str,
                    headers: dict[str, str] = PATCH) -> httpx.Response:
    return await client.patch(f"{IMAGES}/{image['id']}", content=text.encode(), headers=headers)


# -- stored junk ----------------------------------------------------------------------------
# Raw JSON texts: lone surrogates, NaN/Infinity and NUL, which stdlib json reads happily.
JUNK_VALUES = ['"\\ud800"', '"a\\udfffb"', "NaN", "Infinity", "-Infinity", '"nul\\u0000"',
               '{"deep": [NaN]}', '["\\ud800"]', "5", "1.5", "true", "null"]


CREATE_JUNK = ['{"name": "\\ud800"}', '{"name": "a\\u0000"}', '{"x\\ud800": "v"}',
               '{"x\\u0000": "v"}', '{"tags": ["\\ud800"]}', '{"tags": ["a\\u0000"]}', '{"": "v"}',
               *('{"x": %s}' % v for v in JUNK_VALUES)]
PATCH_JUNK = [*('{"op": "add", "path": "/x", "value": %s}' % v for v in JUNK_VALUES),
              *('{"op": "replace", "path": "/color", "value": %s}' % v for v in JUNK_VALUES),
              '{"op": "add", "path": "/x\\ud800", "value": "v"}',
              '{"op": "add", "path": "/x\\u0000", "value": "v"}',
              '{"op": "replace", "path": "/name", "value": "\\udc00"}',
              '{"op": "replace", "path": "/tags", "value": ["\\ud800"]}',
              '{"op": "replace", "path": "/tags", "value": [NaN]}']


async def test_create_refuses_what_cannot_be_stored(tenants: Tenants) -> None:
    for text in CREATE_JUNK:
        resp = await tenants.member.post(IMAGES, content=text.encode(), headers=JSON)
        assert resp.status_code == 400, (text, resp.text)
        assert resp.json()["code"].startswith("400")
    await listings_answer(tenants)


async def test_patch_refuses_what_cannot_be_stored(tenants: Tenants,
                                                   image: dict[str, Any]) -> None:
    for op in PATCH_JUNK:
        resp = await patch_raw(tenants.member, image, f"[{op}]")
        assert resp.status_code == 400, (op, resp.text)
    shown = (await tenants.member.get(f"{IMAGES}/{image['id']}")).json()
    assert shown["color"] == "blue" and "x" not in shown and shown["name"] == "victim"
    resp = await tenants.member.put(f"{IMAGES}/{image['id']}/tags/a%00b")
    assert resp.status_code == 400, resp.text
    await listings_answer(tenants)


async def test_junk_already_stored_is_shown_not_raised(tenants: Tenants,
                                                       image: dict[str, Any]) -> None:
    """A row written before the checks existed: listings and shows answer."""
    db = tenants.api.cloud.db
    assert db is not None
    props: dict[str, Any] = {"s": "a\ud800b", "k\udfff": "v", "deep": {"l": ["\ud800", 1.0]}}
    if db.is_sqlite:  # PostgreSQL's json type refuses NaN itself
        props.update(nan=math.nan, inf=math.inf, nested=[{"x": -math.inf}])
    await db.run(lambda conn: conn.execute(images.update().where(
        images.c.id == image["id"]).values(properties=props, tags=["ok", "t\ud800"])))
    for client in (tenants.member, tenants.admin):
        listed = await client.get(IMAGES)
        assert listed.status_code == 200, listed.text
        shown = await client.get(f"{IMAGES}/{image['id']}")
        assert shown.status_code == 200, shown.text
        body = shown.json()
        assert body["s"] == "a\ufffdb" and body["k\ufffd"] == "v"
        assert body["tags"] == ["ok", "t\ufffd"] and body["deep"] == {"l": ["\ufffd", 1.0]}
        if "nan" in props:
            assert body["nan"] is None and body["inf"] is None and body["nested"] == [{"x": None}]
    # The owner can still clean it up.
    fixed = await patch_raw(tenants.member, image, json.dumps(
        [{"op": "remove", "path": "/s"}, {"op": "replace", "path": "/tags", "value": ["ok"]}]))
    assert fixed.status_code == 200, fixed.text
    assert "s" not in fixed.json() and fixed.json()["tags"] == ["ok"]


# -- ranges and lengths ---------------------------------------------------------------------
BAD_SIZES = [BIG, 2**64, 2**31, -1, 1.5, 1.0, "1", True, None, [1], {"a": 1}]


async def test_min_ram_and_min_disk_are_integers_from_0_to_2_31(
        tenants: Tenants, image: dict[str, Any]) -> None:
    for key in ("min_ram", "min_disk"):
        for value in BAD_SIZES:
            resp = await tenants.member.post(IMAGES, json={"name": "n", key: value})
            assert resp.status_code == 400, (key, value, resp.text)
            resp = await tenants.member.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
                {"op": "replace", "path": f"/{key}", "value": value}])
            assert resp.status_code == 400, (key, value, resp.text)
    await listings_answer(tenants)


READ_ONLY = ["size", "virtual_size", "status", "checksum", "os_hash_value", "created_at",
             "updated_at", "self", "file", "schema", "locations", "direct_url"]


async def test_read_only_attributes_are_not_settable(tenants: Tenants,
                                                     image: dict[str, Any]) -> None:
    for key in READ_ONLY:
        resp = await tenants.member.post(IMAGES, json={"name": "n", key: 10})
        assert resp.status_code == 403, (key, resp.text)
        for op in ("add", "replace", "remove"):
            resp = await tenants.member.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
                {"op": op, "path": f"/{key}", "value": 10}])
            assert resp.status_code == 403, (key, op, resp.text)
    shown = (await tenants.member.get(f"{IMAGES}/{image['id']}")).json()
    assert shown["size"] is None and shown["status"] == "queued"
    await listings_answer(tenants)


BAD_BODIES = [
    {"name": "n" * 256}, {"k" * 256: "v"}, {"x": "v" * 65536}, {"tags": ["t" * 256]},
    {"tags": "t"}, {"tags": [1]}, {"id": "not-a-uuid"}, {"id": 5},
    {"id": "12345678-1234-1234-1234-123456789abc\n"}, {"protected": "yes"},
    {"visibility": "everyone"}, {"disk_format": 5}, {"container_format": ["bare"]},
    {"os_hidden": "yes"}, {"kernel_id": 5}]


async def test_lengths_and_types_are_glances(tenants: Tenants) -> None:
    for body in BAD_BODIES:
        resp = await tenants.member.post(IMAGES, json=body)
        assert resp.status_code == 400, (list(body), resp.text)
    await listings_answer(tenants)


async def test_the_largest_values_are_kept(tenants: Tenants) -> None:
    body = {"name": "n" * 255, "k" * 255: "v" * 65535, "tags": ["t" * 255],
            "min_ram": 2**31 - 1, "min_disk": 0, "kernel_id": None, "os_hidden": True}
    resp = await tenants.member.post(IMAGES, json=body)
    assert resp.status_code == 201, resp.text
    shown = resp.json()
    assert shown["k" * 255] == "v" * 65535 and shown["min_ram"] == 2**31 - 1
    assert shown["os_hidden"] is True and shown["kernel_id"] is None
    await listings_answer(tenants)


async def test_reserved_attributes_are_refused(tenants: Tenants, image: dict[str, Any]) -> None:
    for key in ("deleted", "location", "os_glance_import_task"):
        assert (await tenants.member.post(IMAGES, json={key: "v"})).status_code == 403, key
        resp = await tenants.member.patch(f"{IMAGES}/{image['id']}", headers=PATCH, json=[
            {"op": "add", "path": f"/{key}", "value": "v"}])
        assert resp.status_code == 403, (key, resp.text)


# -- quotas (Glance's defaults: 128 properties, 128 tags, 128 members) ---------------------
def assert_over_quota(resp: httpx.Response, attempted: int) -> None:
    assert resp.status_code == 413, resp.text
    assert f"Attempted: {attempted}, Maximum: 128" in resp.json()["message"]


async def test_property_quota(tenants: Tenants, image: dict[str, Any]) -> None:
    many = {f"p{i}": "v" for i in range(129)}
    assert_over_quota(await tenants.member.post(IMAGES, json=many), 129)
    url = f"{IMAGES}/{image['id']}"  # it has one property already: color
    ops = [{"op": "add", "path": f"/p{i}", "value": "v"} for i in range(127)]
    assert (await tenants.member.patch(url, headers=PATCH, json=ops)).status_code == 200
    one_more = [{"op": "add", "path": "/last", "value": "v"}]
    assert_over_quota(await tenants.member.patch(url, headers=PATCH, json=one_more), 129)
    replaced = [{"op": "replace", "path": "/color", "value": "red"}]
    assert (await tenants.member.patch(url, headers=PATCH, json=replaced)).status_code == 200
    await listings_answer(tenants)


async def test_tag_quota(tenants: Tenants, image: dict[str, Any]) -> None:
    assert_over_quota(await tenants.member.post(
        IMAGES, json={"tags": [f"t{i}" for i in range(10_000)]}), 10_000)
    url = f"{IMAGES}/{image['id']}"
    ops = [{"op": "replace", "path": "/tags", "value": [f"t{i}" for i in range(129)]}]
    assert_over_quota(await tenants.member.patch(url, headers=PATCH, json=ops), 129)
    ops[0]["value"] = [f"t{i}" for i in range(128)] + ["t0"]  # duplicates count once
    assert (await tenants.member.patch(url, headers=PATCH, json=ops)).status_code == 200
    assert_over_quota(await tenants.member.put(f"{url}/tags/one-more"), 129)
    assert (await tenants.member.put(f"{url}/tags/t5")).status_code == 204  # already there
    assert (await tenants.member.put(f"{IMAGES}/{image['id']}/tags/{'t' * 256}")).status_code == 400
    assert len((await tenants.member.get(url)).json()["tags"]) == 128
    await listings_answer(tenants)


async def test_member_quota(tenants: Tenants) -> None:
    resp = await tenants.member.post(IMAGES, json={"name": "s", "visibility": "shared"})
    url = f"{IMAGES}/{resp.json()['id']}/members"
    for i in range(128):
        added = await tenants.member.post(url, json={"member": f"project-{i}"})
        assert added.status_code == 200, added.text
    assert_over_quota(await tenants.member.post(url, json={"member": "project-x"}), 129)
    assert len((await tenants.member.get(url)).json()["members"]) == 128
    await listings_answer(tenants)


# -- members --------------------------------------------------------------------------------
BAD_MEMBERS = [
    '{"member": ""}', '{"member": "%s"}' % ("x" * 65), '{"member": "%s"}' % ("x" * 70_000),
    '{"member": "\\ud800"}', '{"member": "a\\u0000"}', '{"member": "a b"}', '{"member": "a/b"}',
    '{"member": 5}', '{"member": null}', '{"member": ["p"]}', '{"member": {"id": "p"}}',
    '{"other": "p"}', '["p"]', '"p"', "5"]
BAD_STATUSES = ['{"status": "approved"}', '{"status": 1}', '{"status": null}',
                '{"status": "\\ud800"}', '{}', '["accepted"]']


@pytest.fixture
async def shared(tenants: Tenants) -> str:
    """The members URL of a shared image of demo, with project other a pending member."""
    resp = await tenants.member.post(IMAGES, json={"name": "s", "visibility": "shared"})
    url = f"{IMAGES}/{resp.json()['id']}/members"
    assert (await tenants.member.post(url, json={"member": tenants.project["other"]})).status_code == 200
    return url


async def test_a_member_must_be_a_plausible_project_id(tenants: Tenants, shared: str) -> None:
    for text in BAD_MEMBERS:
        resp = await tenants.member.post(shared, content=text.encode(), headers=JSON)
        assert resp.status_code == 400, (text[:40], resp.text[:200])
    assert len((await tenants.member.get(shared)).json()["members"]) == 1
    await listings_answer(tenants)


async def test_a_member_status_is_glances(tenants: Tenants, shared: str) -> None:
    other = tenants.project["other"]
    for text in BAD_STATUSES:
        resp = await tenants.other.put(f"{shared}/{other}", content=text.encode(), headers=JSON)
        assert resp.status_code == 400, (text, resp.text)
    assert (await tenants.other.get(f"{shared}/{other}")).json()["status"] == "pending"
    await listings_answer(tenants)


async def test_a_junk_member_in_the_path_is_not_found(tenants: Tenants, shared: str) -> None:
    for member in ("a%00b", "x" * 300, "%E2%82%AC"):
        url = f"{shared}/{member}"
        assert (await tenants.member.get(url)).status_code == 404, member
        assert (await tenants.member.delete(url)).status_code == 404, member
        assert (await tenants.member.put(url, json={"status": "accepted"})).status_code == 404
    await listings_answer(tenants)


# -- media types ----------------------------------------------------------------------------
async def test_image_data_is_octet_stream_only(tenants: Tenants, image: dict[str, Any]) -> None:
    url = f"{IMAGES}/{image['id']}/file"
    for content_type in ("application/json", "text/plain", "application/x-www-form-urlencoded",
                         "application/octet-streams", None):
        headers = {"Content-Type": content_type} if content_type else {}
        resp = await tenants.member.put(url, content=b'{"a": 1}', headers=headers)
        assert resp.status_code == 415, (content_type, resp.text)
        assert resp.json()["code"].startswith("415")
    assert (await tenants.member.get(f"{IMAGES}/{image['id']}")).json()["status"] == "queued"
    ok = await tenants.member.put(url, content=b"data",
                                  headers={"Content-Type": "application/octet-stream; x=y"})
    assert ok.status_code == 204, ok.text
    await listings_answer(tenants)


async def test_a_patch_is_of_glances_media_types(tenants: Tenants, image: dict[str, Any]) -> None:
    for content_type in ("application/json", "application/json-patch+json", "text/plain", None):
        headers = {"Content-Type": content_type} if content_type else {}
        resp = await tenants.member.patch(f"{IMAGES}/{image['id']}", headers=headers, json=[
            {"op": "replace", "path": "/name", "value": "renamed"}])
        assert resp.status_code == 415, (content_type, resp.text)
        assert "openstack-images-v2.1-json-patch" in resp.headers["Accept-Patch"]
        assert resp.json()["code"].startswith("415")
    assert (await tenants.member.get(f"{IMAGES}/{image['id']}")).json()["name"] == "victim"
    await listings_answer(tenants)


async def test_a_v2_0_patch_uses_draft_4_operations(tenants: Tenants,
                                                    image: dict[str, Any]) -> None:
    v20 = {"Content-Type": "application/openstack-images-v2.0-json-patch"}
    url = f"{IMAGES}/{image['id']}"
    resp = await tenants.member.patch(url, headers=v20, json=[
        {"replace": "/name", "value": "renamed"}, {"add": "/shape", "value": "round"},
        {"remove": "/color"}])
    assert resp.status_code == 200, resp.text
    assert resp.json()["name"] == "renamed" and resp.json()["shape"] == "round"
    again = await tenants.member.patch(url, headers=v20, json=[{"add": "/shape", "value": "x"}])
    assert again.status_code == 409, again.text
    both = await tenants.member.patch(url, headers=v20, json=[{"add": "/a", "remove": "/b"}])
    assert both.status_code == 400, both.text


# -- malformed patches ------------------------------------------------------------------------
MALFORMED_PATCHES: list[Any] = [
    {"op": "add"}, "add", 5, None, [5], [[]], ["op"], [None],
    [{}], [{"op": "move", "path": "/name", "value": "x"}], [{"op": ["add"], "path": "/x"}],
    [{"op": "test", "path": "/name", "value": "x"}], [{"path": "/name", "value": "x"}],
    [{"op": "add", "value": "x"}], [{"op": "add", "path": 5, "value": "x"}],
    [{"op": "add", "path": "name", "value": "x"}], [{"op": "add", "path": "/a/b", "value": "x"}],
    [{"op": "add", "path": "/a/", "value": "x"}], [{"op": "add", "path": "//a", "value": "x"}],
    [{"op": "add", "path": "/~2", "value": "x"}], [{"op": "add", "path": "/a~", "value": "x"}],
    [{"op": "add", "path": "/", "value": "x"}], [{"op": "add", "path": "/tags/-", "value": "x"}],
    [{"op": "add", "path": "/x"}], [{"op": "replace", "path": "/name"}],
    [{"op": "replace", "path": "/name", "value": 5}],
    [{"op": "replace", "path": "/protected", "value": "yes"}],
    [{"op": "replace", "path": "/visibility", "value": "everyone"}],
    [{"op": "replace", "path": "/disk_format", "value": "floppy"}],
    [{"op": "replace", "path": "/tags", "value": "t"}],
    [{"op": "replace", "path": "/tags", "value": [1]}],
    [{"op": "add", "path": "/x", "value": 5}], [{"op": "add", "path": "/x", "value": ["v"]}],
    [{"op": "add", "path": "/x", "value": {"a": "b"}}],
    [{"op": "add", "path": "/" + "k" * 256, "value": "v"}],
    [{"op": "add", "path": "/x", "value": "v" * 65536}],
    [{"op": "replace", "path": "/name", "value": "ok"}, {"op": "replace", "path": "/min_ram", "value": -1}],
]
REFUSED_PATCHES = [
    ([{"op": "replace", "path": "/missing", "value": "v"}], 409),
    ([{"op": "remove", "path": "/missing"}], 409),
    ([{"op": "remove", "path": "/name"}], 403),
    ([{"op": "remove", "path": "/tags"}], 403),
    ([{"op": "add", "path": "/id", "value": "v"}], 403),
]


async def test_a_malformed_patch_is_400(tenants: Tenants, image: dict[str, Any]) -> None:
    for body in MALFORMED_PATCHES:
        resp = await patch_raw(tenants.member, image, json.dumps(body))
        assert resp.status_code == 400, (body, resp.text)
    for ops, code in REFUSED_PATCHES:
        resp = await patch_raw(tenants.member, image, json.dumps(ops))
        assert resp.status_code == code, (ops, resp.text)
    shown = (await tenants.member.get(f"{IMAGES}/{image['id']}")).json()
    assert shown["name"] == "victim" and shown["min_ram"] == 0
    await listings_answer(tenants)


async def test_patch_operations_apply_in_order(tenants: Tenants, image: dict[str, Any]) -> None:
    resp = await patch_raw(tenants.member, image, json.dumps([
        {"op": "add", "path": "/a~1b", "value": "1"}, {"op": "remove", "path": "/a~1b"},
        {"op": "add", "path": "/c~0d", "value": "2"}, {"op": "replace", "path": "/c~0d", "value": "3"},
        {"op": "add", "path": "/tags", "value": ["x", "x"]}]))
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "a/b" not in body and body["c~d"] == "3" and body["tags"] == ["x"]


# -- query parameters ---------------------------------------------------------------------------
JUNK_QUERIES: list[dict[str, Any]] = [
    {"limit": "abc"}, {"limit": "-1"}, {"limit": "1e3"}, {"limit": "1.5"}, {"limit": ""},
    {"limit": "9" * 5000}, {"limit": str(2**64)}, {"marker": "nope"}, {"marker": "a\x00b"},
    {"marker": "x" * 5000}, {"sort": "junk"}, {"sort": "name:sideways"}, {"sort": ":asc"},
    {"sort": "name:asc,,"}, {"sort": "name", "sort_key": "id"}, {"sort_key": "junk"},
    {"sort_dir": "up"}, {"sort_key": ["name", "id"], "sort_dir": ["asc", "desc", "asc"]},
    {"visibility": "everyone"}, {"member_status": "maybe"}, {"name": "a\x00b"},
    {"owner": "\x00"}, {"disk_format": "a\x00"}, {"tag": "\x00"}]
ODD_QUERIES: list[dict[str, Any]] = [
    {"limit": "0"}, {"limit": str(2**62)}, {"limit": "1"}, {"sort": "name:asc,id"},
    {"sort_key": ["name", "id"], "sort_dir": "asc"}, {"visibility": "all"},
    {"member_status": "all"}, {"name": "x" * 5000}, {"name": "\u00e9\u20ac"}]


async def test_query_parameters_are_checked(tenants: Tenants, image: dict[str, Any]) -> None:
    for client in (tenants.member, tenants.admin):
        for params in JUNK_QUERIES:
            resp = await client.get(IMAGES, params=params)
            assert resp.status_code == 400, (params, resp.text[:200])
        for params in ODD_QUERIES:
            resp = await client.get(IMAGES, params=params)
            assert resp.status_code == 200, (params, resp.text[:200])
    await listings_answer(tenants)


async def test_a_junk_image_id_is_not_found(tenants: Tenants) -> None:
    for image_id in ("a%00b", "x" * 5000, "%E2%82%AC", "12345678-1234"):
        for client in (tenants.member, tenants.admin):
            assert (await client.get(f"{IMAGES}/{image_id}")).status_code == 404, image_id
            assert (await client.delete(f"{IMAGES}/{image_id}")).status_code == 404, image_id
            assert (await client.put(f"{IMAGES}/{image_id}/tags/t")).status_code == 404
    await listings_answer(tenants)
