"""The image service's input rules as tables: Glance's schema, JSON-patch
pointers and operations, list parameters, and a view that shows any stored row.
No cloud: these are the pure functions the HTTP tests go through."""
from __future__ import annotations

import json
import math
from typing import Any

import pytest
from starlette.datastructures import QueryParams

from cirrus.exception import CirrusException
from cirrus.image import patch, query, schema
from cirrus.image.views import image_view, presentable


def code_of(fn: Any, *args: Any) -> int:
    """The HTTP code ``fn(*args)`` raises, or 200."""
    try:
        fn(*args)
    except CirrusException as e:
        return e.code
    return 200


@pytest.mark.parametrize("key, value, code", [
    ("name", "n" * 255, 200), ("name", "n" * 256, 400), ("name", None, 200),
    ("name", "\ud800", 400), ("name", "a\x00", 400), ("name", "caf\u00e9 \U0001f600", 200),
    ("min_ram", 0, 200), ("min_ram", 2**31 - 1, 200), ("min_ram", 2**31, 400),
    ("min_ram", 2**63, 400), ("min_ram", -1, 400), ("min_ram", 1.0, 400),
    ("min_ram", math.nan, 400), ("min_ram", True, 400), ("min_ram", "1", 400),
    ("min_disk", None, 400), ("protected", 0, 400), ("protected", False, 200),
    ("visibility", "community", 200), ("visibility", "all", 400), ("visibility", None, 400),
    ("disk_format", None, 200), ("disk_format", "qcow2", 200), ("disk_format", ["raw"], 400),
    ("container_format", "bare", 200), ("container_format", "crate", 400),
    ("tags", [], 200), ("tags", ["t"] * 500, 200), ("tags", [f"t{i}" for i in range(128)], 200),
    ("tags", [f"t{i}" for i in range(129)], 413), ("tags", ["t" * 256], 400),
    ("tags", [None], 400), ("tags", {"t": 1}, 400),
    ("owner", "0123456789abcdef0123456789abcdef", 200), ("owner", "x" * 64, 200),
    ("owner", "x" * 65, 400), ("owner", "", 400), ("owner", "a\nb", 400), ("owner", None, 400),
])
def test_core_values(key: str, value: Any, code: int) -> None:
    assert code_of(schema.core_value, key, value) == code


@pytest.mark.parametrize("key, value, code", [
    ("os_distro", "debian", 200), ("k" * 255, "v" * 65535, 200), ("k" * 256, "v", 400),
    ("x", "v" * 65536, 400), ("", "v", 400), ("x", 5, 400), ("x", None, 400),
    ("x", math.inf, 400), ("x", ["v"], 400), ("x", {"a": "b"}, 400), ("x", "\udc00", 400),
    ("x\ud800", "v", 400), ("x\x00", "v", 400), ("kernel_id", None, 200), ("ramdisk_id", 5, 400),
    ("os_hidden", True, 200), ("os_hidden", "true", 400), ("size", "1", 403),
    ("status", "active", 403), ("deleted", "v", 403), ("os_glance_x", "v", 403),
])
def test_property_values(key: Any, value: Any, code: int) -> None:
    assert code_of(schema.property_value, key, value) == code


@pytest.mark.parametrize("body, code", [
    ({}, 200), ({"id": "3f0b6c5e-2f8e-4b4a-9d2e-0c6f4f7c6a11"}, 200),
    ({"id": "3F0B6C5E-2F8E-4B4A-9D2E-0C6F4F7C6A11"}, 200), ({"id": "{3f0b6c5e-2f8e-4b4a}"}, 400),
    ({"id": None}, 400), ({"size": 1}, 403), ({"checksum": None}, 403), ({"stores": "x"}, 403),
    ({f"p{i}": "v" for i in range(128)}, 200), ({f"p{i}": "v" for i in range(129)}, 413),
])
def test_new_image_bodies(body: dict[str, Any], code: int) -> None:
    assert code_of(schema.new_image, body) == code


@pytest.mark.parametrize("pointer, key", [
    ("/name", "name"), ("/a~1b", "a/b"), ("/a~0b", "a~b"), ("/a~01", "a~1"), ("/ x ", "x"),
    ("/", ""),
])
def test_pointers(pointer: str, key: str) -> None:
    assert patch.parse([{"op": "remove", "path": pointer}], 10) == [patch.Change("remove", key)]


@pytest.mark.parametrize("pointer", ["name", "", "//a", "/a//b", "/a/", "/a/b", "/~", "/a~2",
                                     "/tags/-", "/ / ", 5, None, ["/name"]])
def test_bad_pointers(pointer: Any) -> None:
    assert code_of(patch.parse, [{"op": "remove", "path": pointer}], 10) == 400


@pytest.mark.parametrize("body, draft", [
    ({}, 10), ("x", 10), (None, 10), ([1], 10), ([{"op": "copy", "path": "/a", "from": "/b"}], 10),
    ([{"op": "add", "path": "/a"}], 10), ([{"path": "/a", "value": 1}], 10),
    ([{"op": {"add": 1}, "path": "/a", "value": 1}], 10), ([{"add": "/a"}], 4),
    ([{"add": "/a", "replace": "/a", "value": 1}], 4), ([{"op": "add", "path": "/a", "value": 1}], 4),
])
def test_bad_patches(body: Any, draft: int) -> None:
    assert code_of(patch.parse, body, draft) == 400


@pytest.mark.parametrize("content_type, draft", [
    ("application/openstack-images-v2.1-json-patch", 10),
    ("Application/OpenStack-Images-v2.1-JSON-Patch; charset=utf-8", 10),
    ("application/openstack-images-v2.0-json-patch", 4),
])
def test_patch_media_types(content_type: str, draft: int) -> None:
    assert patch.draft_of(content_type) == draft


@pytest.mark.parametrize("content_type", [None, "", "application/json",
                                          "application/json-patch+json",
                                          "application/openstack-images-v2.2-json-patch"])
def test_other_media_types_are_415(content_type: str | None) -> None:
    assert code_of(patch.draft_of, content_type) == 415


ROW = {"properties": {"color": "blue"}, **{key: None for key in schema.CORE},
       "tags": ["a"], "visibility": "private", "protected": False, "min_ram": 0, "min_disk": 0}


@pytest.mark.parametrize("ops, code", [
    ([("add", "shape", "round"), ("remove", "shape")], 200),
    ([("replace", "color", "red")], 200), ([("replace", "shape", "round")], 409),
    ([("remove", "shape")], 409), ([("remove", "name")], 403), ([("add", "id", "x")], 403),
    ([("replace", "min_ram", 2**63)], 400), ([("add", "tags", ["t"] * 200)], 200),
    ([("add", f"p{i}", "v") for i in range(127)], 200),
    ([("add", f"p{i}", "v") for i in range(128)], 413),
])
def test_applying_changes(ops: list[tuple[Any, ...]], code: int) -> None:
    changes = [patch.Change(*op) for op in ops]
    assert code_of(patch.apply, ROW, changes) == code


@pytest.mark.parametrize("params, code", [
    ("", 200), ("limit=5", 200), ("limit=0", 200), (f"limit={2**63 - 1}", 200),
    (f"limit={2**63}", 400), ("limit=-1", 400), ("limit=x", 400), ("limit=" + "9" * 5000, 400),
    ("sort=name:asc,id", 200), ("sort=name:up", 400), ("sort=junk", 400), ("sort=,", 400),
    ("sort=name&sort_key=id", 400), ("sort_key=name&sort_key=id&sort_dir=asc", 200),
    ("sort_key=name&sort_dir=asc&sort_dir=desc&sort_dir=asc", 400), ("sort_dir=sideways", 400),
    ("visibility=all", 200), ("visibility=any", 400), ("member_status=all", 200),
    ("member_status=x", 400), ("name=a%00", 400), ("marker=%00", 400), ("tag=%00", 400),
    ("name=%ED%A0%80", 200),
])
def test_list_parameters(params: str, code: int) -> None:
    assert code_of(query.parse, QueryParams(params)) == code


def test_a_limit_is_cut_to_glances_maximum() -> None:
    assert query.parse(QueryParams("limit=100000")).limit == query.MAX_LIMIT
    assert query.parse(QueryParams("limit=0")).limit == query.DEFAULT_LIMIT


@pytest.mark.parametrize("stored, shown", [
    ("a\ud800b", "a\ufffdb"), ("\U0001f600", "\U0001f600"), ("\ud83d\ude00", "\U0001f600"),
    (math.nan, None), (-math.inf, None), (1.5, 1.5), (10**4000, None), (True, True),
    ({"k\udfff": [math.inf, "\udc00"]}, {"k\ufffd": [None, "\ufffd"]}),
    (object(), None),
])
def test_presentable(stored: Any, shown: Any) -> None:
    assert presentable(stored) == shown


def test_a_view_of_any_row_is_json() -> None:
    deep: Any = "bottom"
    for _ in range(500):
        deep = [deep]
    row = {**ROW, "id": "i", "name": "n\ud800", "status": "queued", "checksum": None,
           "os_hash_algo": None, "os_hash_value": None, "size": None, "virtual_size": None,
           "created_at": None, "updated_at": None, "tags": ["\ud800", 1, None],
           "properties": {"deep": deep, "nan": math.nan, "\ud800": "v", "os_hidden": "yes"}}
    view = image_view(row)
    json.dumps(view, allow_nan=False).encode("utf-8")
    assert view["name"] == "n\ufffd" and view["os_hidden"] is False and view["nan"] is None
