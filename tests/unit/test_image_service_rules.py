"""Rules of the image service's newer parts, as tables: the metadefs' schema
checks, import bodies, the listing's size and hidden parameters, and which
statuses deactivate and reactivate take."""
from __future__ import annotations

from typing import Any

import pytest
from starlette.datastructures import QueryParams

from cirrus.exception import CirrusException
from cirrus.image import exception as exc
from cirrus.image.importing import check_import_body
from cirrus.image.metadefs import schemas
from cirrus.image.metadefs.api import Kind, nested_items
from cirrus.image.query import parse
from cirrus.image.states import DEACTIVATE_FROM, REACTIVATE_FROM, ImageStatus

ARRAY = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
OBJ = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}},
       "required": ["a"], "additionalProperties": False}


@pytest.mark.parametrize("schema, value, ok", [
    ({"type": "string", "maxLength": 3}, "abc", True),
    ({"type": "string", "maxLength": 3}, "abcd", False),
    ({"type": "string"}, "\ud800", False),           # a lone surrogate cannot be stored
    ({"type": "string"}, 5, False),
    ({"type": "integer"}, True, False),               # bool is no integer in JSON
    ({"type": "number"}, 1.5, True),
    ({"type": ["null", "string"]}, None, True),
    ({"type": "string", "enum": ["x", None]}, "y", False),
    ({"enum": ["array", None]}, None, True),
    ({"type": "string", "format": "regex"}, "a(", False),
    ({"type": "string", "format": "regex"}, "^a+$", True),
    (ARRAY, ["a", "b"], True), (ARRAY, ["a", "a"], False), (ARRAY, ["a", 1], False),
    (OBJ, {"a": 1}, True), (OBJ, {"a": -1}, False), (OBJ, {}, False), (OBJ, {"a": 1, "b": 2}, False),
    ({"type": "object", "additionalProperties": {"type": "boolean"}}, {"x": True}, True),
    ({"type": "object", "additionalProperties": {"type": "boolean"}}, {"x": 1}, False),
    ({}, {"anything": [1, {"deep": None}]}, True),
])
def test_schema_check(schema: dict[str, Any], value: Any, ok: bool) -> None:
    if ok:
        schemas.check(schema, value)
    else:
        with pytest.raises(exc.InvalidImage):
            schemas.check(schema, value)


@pytest.mark.parametrize("doc, body, code", [
    (schemas.NAMESPACE_DOC, {"namespace": "n"}, None),
    (schemas.NAMESPACE_DOC, {"namespace": "n", "created_at": "x"}, 403),
    (schemas.NAMESPACE_DOC, {"namespace": "n", "bogus": 1}, 400),
    (schemas.NAMESPACE_DOC, {"display_name": "n"}, 400),
    (schemas.NAMESPACE_DOC, "n", 400),
    (schemas.PROPERTY_DOC, {"name": "p", "title": "P", "type": "string"}, None),
    (schemas.PROPERTY_DOC, {"name": "p", "title": "P"}, 400),
    (schemas.PROPERTY_DOC, {"name": "p", "title": "P", "type": "date"}, 400),
    (schemas.OBJECT_DOC, {"name": "o", "self": "/x"}, 403),
    (schemas.TAG_DOC, {"name": "t" * 256}, 400),
    (schemas.ASSOCIATION_DOC, {"name": "OS::Nova::Flavor", "prefix": "x" * 81}, 400),
])
def test_metadef_bodies(doc: dict[str, Any], body: Any, code: int | None) -> None:
    if code is None:
        assert schemas.body(doc, body) == body
    else:
        with pytest.raises(CirrusException) as raised:
            schemas.body(doc, body)
        assert raised.value.code == code


def test_every_served_schema_names_itself() -> None:
    for path, doc in schemas.SCHEMAS.items():
        assert doc["name"] and doc["properties"], path


def test_a_namespace_bodys_items() -> None:
    items = nested_items({"namespace": "n", "tags": [{"name": "t"}],
                          "properties": {"p": {"title": "P", "type": "string"}},
                          "resource_type_associations": [{"name": "OS::Glance::Image",
                                                          "prefix": "x_"}]})
    assert items == [(Kind.PROPERTY, "p", {"title": "P", "type": "string"}),
                     (Kind.TAG, "t", {}),
                     (Kind.RESOURCE_TYPE, "OS::Glance::Image", {"prefix": "x_"})]


@pytest.mark.parametrize("body, method", [
    ({"method": {"name": "glance-direct"}}, "glance-direct"),
    ({"method": {"name": "glance-direct"}, "all_stores": True}, "glance-direct"),
    ({"method": {"name": "glance-direct"}, "stores": []}, "glance-direct"),
    ({"method": {"name": "glance-direct"}, "all_stores_must_succeed": True}, "glance-direct"),
    ({"method": {"name": "glance-direct"}, "all_stores_must_succeed": False}, None),
    ({"method": {"name": "glance-direct"}, "stores": ["file"]}, None),
    ({"method": {"name": "web-download", "uri": "http://x"}}, None),
    ({"method": {"name": "glance-download"}}, None),
    ({"method": {"name": "copy-image"}}, None),
    ({"method": "glance-direct"}, None), ({"method": {}}, None), ({}, None), (None, None),
])
def test_import_bodies(body: Any, method: str | None) -> None:
    if method is not None:
        assert check_import_body(body) == method
    else:
        with pytest.raises(exc.InvalidImage):
            check_import_body(body)


@pytest.mark.parametrize("query, size_min, size_max, hidden", [
    ("", None, None, False),
    ("size=5", 5, 5, False),
    ("size_min=5", 5, None, False),
    ("size_max=5", None, 5, False),
    ("size_min=2&size_max=9&size=4", 4, 4, False),
    ("size_min=6&size=4", 6, 4, False),          # nothing can match
    ("size=0&size_max=5", 0, 0, False),
    ("os_hidden=true", None, None, True),
    ("os_hidden=TRUE", None, None, True),
    ("os_hidden=false", None, None, False),
])
def test_listing_sizes_and_hidden(query: str, size_min: int | None, size_max: int | None,
                                  hidden: bool) -> None:
    parsed = parse(QueryParams(query))
    assert (parsed.size_min, parsed.size_max, parsed.hidden) == (size_min, size_max, hidden)


@pytest.mark.parametrize("query", ["size=x", "size_min=", "size_max=1e3", "os_hidden=1"])
def test_bad_listing_parameters(query: str) -> None:
    with pytest.raises(exc.InvalidImage):
        parse(QueryParams(query))


@pytest.mark.parametrize("status, deactivate, reactivate", [
    (ImageStatus.ACTIVE, True, True), (ImageStatus.DEACTIVATED, True, True),
    (ImageStatus.QUEUED, False, False), (ImageStatus.SAVING, False, False),
    (ImageStatus.UPLOADING, False, False), (ImageStatus.IMPORTING, False, False),
    (ImageStatus.KILLED, False, False),
])
def test_which_statuses_the_actions_take(status: ImageStatus, deactivate: bool,
                                         reactivate: bool) -> None:
    assert (status in DEACTIVATE_FROM, status in REACTIVATE_FROM) == (deactivate, reactivate)
