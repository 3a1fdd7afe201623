"""The metadefs' JSON schemas: served at ``/v2/schemas/metadefs/…`` and the
same documents every request body is checked against (:func:`check`), so what
the API says it takes and what it takes cannot drift apart.

As Glance's (``glance.schema.Schema``), a document allows no keys beyond its
``properties``; read-only keys are refused with a 403 before the check.
"""
from __future__ import annotations

import copy
import re
from typing import Any

from cirrus.image import exception as exc
from cirrus.text import storable

_STRING_ARRAY = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
_TYPES = ["array", "boolean", "integer", "number", "object", "string", None]
_COUNT = {"type": "integer", "minimum": 0}
_TIME = {"type": "string", "readOnly": True, "format": "date-time"}
_LINK = {"type": "string", "readOnly": True}

# One property definition (a namespace's or an object's properties map to these).
PROPERTY: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 80},
    "title": {"type": "string"},
    "description": {"type": "string"},
    "operators": {"type": "array", "items": {"type": "string"}},
    "type": {"type": "string", "enum": _TYPES},
    "required": _STRING_ARRAY,
    "minimum": {"type": "number"}, "maximum": {"type": "number"},
    "maxLength": _COUNT, "minLength": _COUNT,
    "pattern": {"type": "string", "format": "regex"},
    "enum": {"type": "array"},
    "readonly": {"type": "boolean"},
    "default": {},
    "items": {"type": "object", "properties": {"type": {"type": "string", "enum": _TYPES},
                                               "enum": {"type": "array"}}},
    "maxItems": _COUNT, "minItems": _COUNT,
    "uniqueItems": {"type": "boolean"},
    "additionalItems": {"type": "boolean"},
}
_PROPERTY_MAP = {"type": "object", "additionalProperties": {
    "type": "object", "required": ["title", "type"], "properties": PROPERTY}}

ASSOCIATION: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 80},
    "prefix": {"type": "string", "maxLength": 80},
    "properties_target": {"type": "string", "maxLength": 80},
    "created_at": _TIME, "updated_at": _TIME,
}
OBJECT: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 80},
    "description": {"type": "string"},
    "required": _STRING_ARRAY,
    "properties": _PROPERTY_MAP,
    "schema": _LINK, "self": _LINK, "created_at": _TIME, "updated_at": _TIME,
}
TAG: dict[str, Any] = {"name": {"type": "string", "maxLength": 255},
                       "created_at": _TIME, "updated_at": _TIME}
NAMESPACE: dict[str, Any] = {
    "namespace": {"type": "string", "maxLength": 80},
    "display_name": {"type": "string", "maxLength": 80},
    "description": {"type": "string", "maxLength": 500},
    "visibility": {"type": "string", "enum": ["public", "private"]},
    "protected": {"type": "boolean"},
    "owner": {"type": "string", "maxLength": 255},
    "created_at": _TIME, "updated_at": _TIME, "schema": _LINK, "self": _LINK,
    "resource_type_associations": {"type": "array", "items": {
        "type": "object", "properties": {k: ASSOCIATION[k] for k in
                                         ("name", "prefix", "properties_target")}}},
    "properties": _PROPERTY_MAP,
    "objects": {"type": "array", "items": {"type": "object", "properties": {
        k: OBJECT[k] for k in ("name", "description", "required", "properties")}}},
    "tags": {"type": "array", "items": {"type": "object", "properties": {"name": TAG["name"]}}},
}


def document(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A Glance schema document: no keys beyond ``properties``."""
    return {"name": name, "properties": copy.deepcopy(properties), "required": required,
            "additionalProperties": False}


def collection(name: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"name": name,
            "properties": {name: {"type": "array", "items": item}, "first": {"type": "string"},
                           "next": {"type": "string"}, "schema": {"type": "string"}},
            "links": [{"rel": "first", "href": "{first}"}, {"rel": "next", "href": "{next}"},
                      {"rel": "describedby", "href": "{schema}"}]}


NAMESPACE_DOC = document("namespace", NAMESPACE, ["namespace"])
ASSOCIATION_DOC = document("resource_type_association", ASSOCIATION, ["name"])
OBJECT_DOC = document("object", OBJECT, ["name"])
PROPERTY_DOC = document("property", PROPERTY, ["type", "title", "name"])
TAG_DOC = document("tag", TAG, ["name"])
TAGS_DOC = document("tags", {"tags": NAMESPACE["tags"]}, [])

SCHEMAS: dict[str, dict[str, Any]] = {
    "metadefs/namespace": NAMESPACE_DOC,
    "metadefs/namespaces": collection("namespaces", NAMESPACE_DOC),
    "metadefs/resource_type": ASSOCIATION_DOC,
    "metadefs/resource_types": collection("resource_type_associations", ASSOCIATION_DOC),
    "metadefs/object": OBJECT_DOC,
    "metadefs/objects": collection("objects", OBJECT_DOC),
    "metadefs/property": PROPERTY_DOC,
    # Glance's properties collection is a map from name to property.
    "metadefs/properties": {"name": "properties", "properties": {
        "properties": {"type": "object", "additionalProperties": document(
            "property", PROPERTY, ["type", "title"])},
        "first": {"type": "string"}, "next": {"type": "string"}, "schema": {"type": "string"}}},
    "metadefs/tag": TAG_DOC,
    "metadefs/tags": collection("tags", TAG_DOC),
}

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "boolean": (bool,), "object": (dict,), "array": (list,),
    "integer": (int,), "number": (int, float), "null": (type(None),)}


def _is(kind: str | None, value: Any) -> bool:
    if kind is None:
        return value is None
    if isinstance(value, bool) and kind in ("integer", "number"):
        return False  # bool is an int in Python, not in JSON
    return isinstance(value, _JSON_TYPES[kind])


def _fail(path: str, reason: str) -> exc.InvalidImage:
    return exc.InvalidImage(reason=f"Invalid value for '{path or 'body'}': {reason}.")


def check(schema: dict[str, Any], value: Any, path: str = "") -> None:
    """400 (naming the field) unless ``value`` fits ``schema``: the subset of
    JSON schema these documents use (type, enum, lengths, bounds, items,
    properties, required, additionalProperties, uniqueItems)."""
    kinds = schema.get("type")
    if kinds is not None:
        options = kinds if isinstance(kinds, list) else [kinds]
        if not any(_is(k, value) for k in options):
            raise _fail(path, f"expected {' or '.join(str(k) for k in options)}")
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        raise _fail(path, "expected one of " + ", ".join(str(v) for v in schema["enum"]))
    if isinstance(value, str):
        _check_string(schema, value, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value < schema.get("minimum", value):
        raise _fail(path, f"below the minimum of {schema['minimum']}")
    elif isinstance(value, list):
        _check_list(schema, value, path)
    elif isinstance(value, dict):
        _check_object(schema, value, path)


def _check_string(schema: dict[str, Any], value: str, path: str) -> None:
    if not storable(value):
        raise _fail(path, "not valid Unicode text")
    if len(value) > schema.get("maxLength", len(value)):
        raise _fail(path, f"longer than {schema['maxLength']} characters")
    if schema.get("format") == "regex":
        try:
            re.compile(value)
        except (re.error, RecursionError, OverflowError):
            raise _fail(path, "not a regular expression") from None


def _check_list(schema: dict[str, Any], value: list[Any], path: str) -> None:
    if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
        raise _fail(path, "items must be unique")
    for i, item in enumerate(value):
        check(schema.get("items", {}), item, f"{path}[{i}]")


def _check_object(schema: dict[str, Any], value: dict[str, Any], path: str) -> None:
    known = schema.get("properties")
    extra = schema.get("additionalProperties", True)
    for key in schema.get("required", []):
        if key not in value:
            raise _fail(f"{path}/{key}".lstrip("/"), "required")
    for key, item in value.items():
        where = f"{path}/{key}".lstrip("/")
        if known is not None and key in known:
            check(known[key], item, where)
        elif extra is False:
            raise _fail(where, "not an allowed attribute")
        elif isinstance(extra, dict):
            check(extra, item, where)


def body(doc: dict[str, Any], value: Any) -> dict[str, Any]:
    """A request body checked against ``doc``: 403 for a read-only key
    (Glance: "Attribute '…' is read-only."), 400 for anything else wrong."""
    if not isinstance(value, dict):
        raise exc.InvalidImage(reason="The request body must be a JSON object.")
    for key, spec in doc["properties"].items():
        if key in value and spec.get("readOnly"):
            raise exc.ImageForbidden(reason=f"Attribute '{key}' is read-only.")
    check(doc, value)
    return value
