"""Glance's image schema as checks: what a client may store in an image.

Every value a client sends passes here before it is written, on create, PATCH,
tags and members alike, so that nothing stored can break a later listing:
strings are valid Unicode (no lone surrogates, which no UTF-8 encoder takes)
without NUL (PostgreSQL's text refuses it), numbers are integers in the
columns' range, lengths are Glance's and counts are Glance's default quotas.

Errors are Glance's: 400 for a value outside the schema, 403 for a read-only or
reserved attribute, 413 for a quota ("Attempted: …, Maximum: …").
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from cirrus.image import exception as exc
from cirrus.text import storable

MAX_INT = 2**31 - 1          # Glance's min_ram/min_disk: 32-bit columns
NAME_LENGTH = 255
KEY_LENGTH = 255
VALUE_LENGTH = 65535         # Glance's property value column (TEXT)
TAG_LENGTH = 255
PROJECT_ID_LENGTH = 64       # Keystone's project id column, and our owner/member_id
PROPERTY_QUOTA = 128         # Glance's image_property_quota
TAG_QUOTA = 128              # Glance's image_tag_quota
MEMBER_QUOTA = 128           # Glance's image_member_quota

DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
VISIBILITIES = ("public", "private", "shared", "community")
MEMBER_STATUSES = ("pending", "accepted", "rejected")
# Set by the service, never by a client (Glance's read-only and disallowed keys).
READ_ONLY = ("id", "status", "checksum", "os_hash_algo", "os_hash_value", "size",
             "virtual_size", "created_at", "updated_at", "file", "schema", "self",
             "direct_url", "locations", "stores")
RESERVED = ("location", "deleted", "deleted_at")
RESERVED_NAMESPACE = "os_glance"
# Properties of Glance's schema that are not strings.
NULLABLE_PROPERTIES = ("kernel_id", "ramdisk_id")
BOOLEAN_PROPERTIES = ("os_hidden",)

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PROJECT_ID = re.compile(r"[A-Za-z0-9_.-]{1,%d}" % PROJECT_ID_LENGTH)




def shown(value: str) -> str:
    """``value`` safe to quote in an error message (short, encodable)."""
    return value[:80].encode("utf-8", "backslashreplace").decode("utf-8")


def text(field: str, value: Any, max_length: int) -> str:
    """``value`` if it is a string Glance would store; 400 otherwise."""
    if not isinstance(value, str):
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': expected a string.")
    if len(value) > max_length:
        raise exc.InvalidImage(reason=f"'{field}' is longer than {max_length} characters.")
    if not storable(value):
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': not valid Unicode text.")
    return value


def within_quota(what: str, attempted: int, maximum: int) -> None:
    """413 when ``attempted`` exceeds ``maximum`` (Glance's LimitExceeded)."""
    if attempted > maximum:
        raise exc.ImageLimitExceeded(what=what, attempted=attempted, maximum=maximum)


def image_id(value: Any) -> str:
    """A client-chosen image id: a UUID in canonical form (Glance's pattern)."""
    if not isinstance(value, str) or not _UUID.fullmatch(value):
        raise exc.InvalidImage(reason="Invalid value for 'id': expected a UUID.")
    return value.lower()


def is_image_id(value: str) -> bool:
    """Whether ``value`` can name an image (anything else is simply not found)."""
    return _UUID.fullmatch(value) is not None


def project_id(field: str, value: Any) -> str:
    """An owner or member: a plausible Keystone project id (≤ 64 of [A-Za-z0-9_.-])."""
    if not isinstance(value, str) or not _PROJECT_ID.fullmatch(value):
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': expected a project id "
                                      f"of at most {PROJECT_ID_LENGTH} letters, digits, "
                                      f"'_', '.' or '-'.")
    return value


def is_project_id(value: str) -> bool:
    return _PROJECT_ID.fullmatch(value) is not None


def tag(value: Any) -> str:
    return text("tag", value, TAG_LENGTH)


def tags(field: str, value: Any) -> list[str]:
    """A tag list: each tag checked, duplicates dropped, at most TAG_QUOTA (413)."""
    if not isinstance(value, list):
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': expected a list of strings.")
    unique = list(dict.fromkeys(tag(t) for t in value))
    within_quota("tags", len(unique), TAG_QUOTA)
    return unique


def member_status(value: Any) -> str:
    if not isinstance(value, str) or value not in MEMBER_STATUSES:
        raise exc.InvalidImage(reason="Invalid value for 'status': expected one of "
                                      + ", ".join(MEMBER_STATUSES) + ".")
    return value


def _integer(field: str, value: Any) -> int:
    # bool is an int in Python, not in JSON schema; floats (even 1.0) are not integers.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_INT:
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': expected an integer "
                                      f"from 0 to {MAX_INT}.")
    return value


def _boolean(field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': expected a boolean.")
    return value


def _choice(options: tuple[str, ...], nullable: bool = False) -> Callable[[str, Any], Any]:
    def check(field: str, value: Any) -> Any:
        if (value is None and nullable) or (isinstance(value, str) and value in options):
            return value
        raise exc.InvalidImage(reason=f"Invalid value for '{field}': expected one of "
                                      + ", ".join(options) + (" or null." if nullable else "."))
    return check


def _name(field: str, value: Any) -> str | None:
    return None if value is None else text(field, value, NAME_LENGTH)


# The image's own columns a client may set, each with its check (which returns
# the value to store). ``owner`` is admin-only beyond one's own project: the
# service decides that, not the schema.
CORE: dict[str, Callable[[str, Any], Any]] = {
    "name": _name,
    "visibility": _choice(VISIBILITIES),
    "protected": _boolean,
    "min_disk": _integer,
    "min_ram": _integer,
    "disk_format": _choice(DISK_FORMATS, nullable=True),
    "container_format": _choice(CONTAINER_FORMATS, nullable=True),
    "tags": tags,
    "owner": project_id,
}


def settable(key: str) -> None:
    """403 unless a client may set ``key`` (Glance's read-only and reserved names)."""
    if key in READ_ONLY:
        raise exc.ImageForbidden(reason=f"Attribute '{key}' is read-only.")
    if key in RESERVED or key.startswith(RESERVED_NAMESPACE):
        raise exc.ImageForbidden(reason=f"Attribute '{shown(key)}' is reserved.")


def core_value(key: str, value: Any) -> Any:
    """The value to store for core attribute ``key``; 400/413 if outside the schema."""
    return CORE[key](key, value)


def property_value(key: Any, value: Any) -> Any:
    """Check an additional property (Glance: string keys and values); 400/403."""
    if not isinstance(key, str) or not key:
        raise exc.InvalidImage(reason="A property name must be a non-empty string.")
    text("property name", key, KEY_LENGTH)
    settable(key)
    if key in BOOLEAN_PROPERTIES:
        return _boolean(key, value)
    if value is None and key in NULLABLE_PROPERTIES:
        return None
    return text(key, value, VALUE_LENGTH)


@dataclass
class NewImage:
    """A create request, checked: core columns, additional properties, id."""

    image_id: str | None
    core: dict[str, Any]
    properties: dict[str, Any]


def new_image(body: dict[str, Any]) -> NewImage:
    """Check a ``POST /v2/images`` body as Glance does; 400, 403 or 413."""
    for key in body:
        if key != "id":
            settable(key)
    chosen = image_id(body["id"]) if "id" in body else None
    core = {key: core_value(key, body[key]) for key in CORE if key in body}
    props = {key: property_value(key, value) for key, value in body.items()
             if key not in CORE and key != "id"}
    within_quota("properties", len(props), PROPERTY_QUOTA)
    return NewImage(chosen, core, props)
