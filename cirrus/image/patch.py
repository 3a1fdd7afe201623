"""Image PATCH: Glance's JSON-patch media types, parsed into changes and applied.

``application/openstack-images-v2.1-json-patch`` carries RFC 6902 operations
(``{"op": "add", "path": "/name", "value": …}``), the older ``…-v2.0-…`` type
JSON-schema draft 4 ones (``{"add": "/name", "value": …}``). Either way a path
is a one-level JSON pointer (``/name``, ``~1`` for ``/``, ``~0`` for ``~``).
Parsing answers 400 for any malformed patch; applying checks every value
against :mod:`cirrus.image.schema`, in order, on a copy of the image.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from cirrus.image import exception as exc
from cirrus.image import schema

MEDIA_TYPES = {"application/openstack-images-v2.1-json-patch": 10,
               "application/openstack-images-v2.0-json-patch": 4}
ACCEPT_PATCH = ", ".join(sorted(MEDIA_TYPES))
OPERATIONS = ("add", "remove", "replace")


@dataclass(frozen=True)
class Change:
    """One operation on one top-level attribute or property of an image."""

    op: str
    key: str
    value: Any = None
    # Draft 4 (v2.0) ``add`` refuses to overwrite; draft 10 (v2.1) overwrites.
    strict_add: bool = False


def draft_of(content_type: str | None) -> int:
    """The JSON-schema draft of a PATCH's media type; 415 for any other type."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media not in MEDIA_TYPES:
        raise exc.UnsupportedMediaType(reason=f"Image PATCH expects Content-Type one of: "
                                              f"{ACCEPT_PATCH}")
    return MEDIA_TYPES[media]


def parse(body: Any, draft: int) -> list[Change]:
    """The changes a PATCH body asks for; 400 for anything malformed."""
    if not isinstance(body, list):
        raise exc.InvalidImage(reason="Request body must be a JSON array of operation objects.")
    return [_change(raw, draft) for raw in body]


def _change(raw: Any, draft: int) -> Change:
    if not isinstance(raw, dict):
        raise exc.InvalidImage(reason="Operations must be JSON objects.")
    op, pointer = _op_and_pointer(raw) if draft == 10 else _op_and_pointer_d4(raw)
    key = _key(pointer)
    if op == "remove":
        return Change(op, key)
    if "value" not in raw:
        raise exc.InvalidImage(reason=f'Operation "{op}" requires a member named "value".')
    return Change(op, key, raw["value"], strict_add=draft == 4)


def _op_and_pointer(raw: dict[str, Any]) -> tuple[str, Any]:
    op = raw.get("op")
    if not isinstance(op, str) or op not in OPERATIONS:
        raise exc.InvalidImage(reason="Invalid operation: 'op' must be one of: "
                                      + ", ".join(OPERATIONS) + ".")
    if "path" not in raw:
        raise exc.InvalidImage(reason="Unable to find 'path' in JSON Schema change")
    return op, raw["path"]


def _op_and_pointer_d4(raw: dict[str, Any]) -> tuple[str, Any]:
    ops = [op for op in OPERATIONS if op in raw]
    if len(ops) != 1:
        raise exc.InvalidImage(reason='Operation objects must contain exactly one member '
                                      'named "add", "remove", or "replace".')
    return ops[0], raw[ops[0]]


_ADJACENT = re.compile(r"/\s*/")
_BAD_ESCAPE = re.compile(r"~(?![01])")


def _key(pointer: Any) -> str:
    """The attribute a one-level JSON pointer names (Glance's accepted form)."""
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise exc.InvalidImage(reason="A path must be a JSON pointer starting with '/'.")
    if _ADJACENT.search(pointer) or (len(pointer) > 1 and pointer.endswith("/")):
        raise exc.InvalidImage(reason="A path must not hold an empty segment.")
    if _BAD_ESCAPE.search(pointer):
        raise exc.InvalidImage(reason="A path holds '~' that is not '~0' or '~1'.")
    parts = pointer[1:].split("/")
    if len(parts) != 1:
        raise exc.InvalidImage(reason="Invalid JSON pointer for this resource: "
                                      "only top-level attributes can be changed.")
    return parts[0].replace("~1", "/").replace("~0", "~").strip()


@dataclass
class Draft:
    """An image being patched: its writable columns, its properties, and which
    keys the patch touched (the service's policy looks at ``owner`` and
    ``visibility``)."""

    core: dict[str, Any]
    properties: dict[str, Any]
    touched: set[str] = field(default_factory=set)


def apply(row: dict[str, Any], changes: Iterable[Change]) -> Draft:
    """``changes`` applied in order to a copy of ``row``: 400, 403, 409 or 413."""
    draft = Draft({key: row[key] for key in schema.CORE}, dict(row["properties"] or {}))
    before = set(draft.properties)
    for change in changes:
        schema.settable(change.key)
        draft.touched.add(change.key)
        if change.key in schema.CORE:
            _apply_core(draft, change)
        else:
            _apply_property(draft, change)
    if set(draft.properties) - before:  # Glance counts only when a property is added
        schema.within_quota("properties", len(draft.properties), schema.PROPERTY_QUOTA)
    return draft


def _apply_core(draft: Draft, change: Change) -> None:
    if change.op == "remove":
        raise exc.ImageForbidden(reason=f"Property {change.key} may not be removed.")
    if change.op == "add" and change.strict_add:
        raise exc.ImageConflict(reason=f"Property {change.key} already present.")
    draft.core[change.key] = schema.core_value(change.key, change.value)


def _apply_property(draft: Draft, change: Change) -> None:
    key = change.key
    # os_hidden is one of Glance's base attributes, kept with the properties:
    # always there (false unless set), never removed.
    base = key in schema.BOOLEAN_PROPERTIES
    if change.op == "remove" and base:
        raise exc.ImageForbidden(reason=f"Property {key} may not be removed.")
    if change.op == "remove":
        if key not in draft.properties:
            raise exc.ImageConflict(reason=f"Property {schema.shown(key)} does not exist.")
        del draft.properties[key]
        return
    value = schema.property_value(key, change.value)
    if change.op == "replace" and key not in draft.properties and not base:
        raise exc.ImageConflict(reason=f"Property {key} does not exist.")
    if change.op == "add" and change.strict_add and key in draft.properties:
        raise exc.ImageConflict(reason=f"Property {key} already present.")
    draft.properties[key] = value
