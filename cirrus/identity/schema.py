"""Identity request bodies, checked before any work (Keystone's schemas, as checks).

Keystone validates the bodies of its resources against their schemas (and
``POST /v3/auth/tokens`` against ``keystone/auth/schema.py``: see
:mod:`cirrus.identity.auth_schema`): a body of the wrong shape is 400, wrong
credentials are 401. These are the same rules
as a few type checks, plus what cirrus's storage needs as well: bounded lengths
(Keystone's: names 255, project names 64, ids 64, passwords 4096), text that is
valid Unicode (no lone surrogates: they cannot be encoded, stored or listed)
and, where it reaches the database, without NUL (PostgreSQL refuses it).
"""
from __future__ import annotations

from typing import Any, Callable

from cirrus.exception import ValidationError
from cirrus.text import encodable, storable

NAME_MAX = 255
PROJECT_NAME_MAX = 64
ID_MAX = 64
PASSWORD_MAX = 4096  # Keystone's [identity] max_password_length
TOKEN_MAX = 16384
DESCRIPTION_MAX = 65535
TAGS_MAX = 80
METHOD_MAX = 64

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


# -- values ------------------------------------------------------------------------

def text(value: Any, where: str, max_length: int, *, blank: bool = True,
         nul: bool = False) -> str:
    """``value`` if it is a string of at most ``max_length`` characters, valid
    Unicode, not blank unless ``blank``, without NUL unless ``nul``; else 400."""
    if not isinstance(value, str):
        raise ValidationError(field=where, reason="must be a string")
    if len(value) > max_length:
        raise ValidationError(field=where, reason=f"is longer than {max_length} characters")
    if not blank and not value.strip():
        raise ValidationError(field=where, reason="must not be empty or blank")
    if not nul and "\x00" in value:
        raise ValidationError(field=where, reason="must not contain NUL characters")
    if not encodable(value):
        raise ValidationError(field=where, reason="is not valid Unicode")
    return value


def is_plain(value: str, max_length: int = ID_MAX) -> bool:
    """Whether a path or query value can name a stored row at all (bounded,
    valid Unicode, no NUL): other values name nothing, without a query."""
    return len(value) <= max_length and storable(value)


def boolean(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationError(field=where, reason="must be a boolean")
    return value


def obj(parent: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise ValidationError(field=f"{where}/{key}", reason="must be an object")
    return value


# -- projects, users, roles -------------------------------------------------------------

Check = Callable[[Any, str], Any]


def _text(max_length: int, *, blank: bool = True, nullable: bool = False) -> Check:
    def check(value: Any, where: str) -> Any:
        if value is None and nullable:
            return None
        return text(value, where, max_length, blank=blank)
    return check


def _password(value: Any, where: str) -> str | None:
    return None if value is None else text(value, where, PASSWORD_MAX, nul=True)


def _domain_id(value: Any, where: str) -> str | None:
    if value is None:
        return None  # the default domain
    value = text(value, where, ID_MAX, blank=False)
    if not set(value) <= _ID_CHARS:
        raise ValidationError(field=where, reason="must be an id: letters, digits and -")
    return value


_NAME = _text(NAME_MAX, blank=False)
_DESCRIPTION = _text(DESCRIPTION_MAX, nullable=True)

# Per kind: field → its check. Keystone keeps attributes it does not know;
# cirrus ignores them.
def _tags(value: Any, where: str) -> list[str]:
    """Keystone's project tags: at most 80, each 1–255 characters, no ``/`` or ``,``."""
    if not isinstance(value, list) or len(value) > TAGS_MAX:
        raise ValidationError(field=where, reason=f"must be a list of at most {TAGS_MAX} tags")
    return list(dict.fromkeys(tag(v, where) for v in value))


def tag(value: Any, where: str) -> str:
    value = text(value, where, NAME_MAX, blank=False)
    if "/" in value or "," in value:
        raise ValidationError(field=where, reason="must not contain '/' or ','")
    return value


# Per kind: field → its check. Keystone keeps attributes it does not know;
# cirrus ignores them.
FIELDS: dict[str, dict[str, Check]] = {
    "project": {"name": _text(PROJECT_NAME_MAX, blank=False), "description": _DESCRIPTION,
                "enabled": boolean, "domain_id": _domain_id, "parent_id": _domain_id,
                "tags": _tags, "is_domain": boolean},
    "user": {"name": _NAME, "password": _password, "enabled": boolean,
             "domain_id": _domain_id, "default_project_id": _text(ID_MAX, nullable=True),
             "email": _text(NAME_MAX, nullable=True), "description": _DESCRIPTION},
    "role": {"name": _NAME, "description": _DESCRIPTION, "domain_id": _domain_id},
    "domain": {"name": _text(PROJECT_NAME_MAX, blank=False), "description": _DESCRIPTION,
               "enabled": boolean},
    "group": {"name": _NAME, "description": _DESCRIPTION, "domain_id": _domain_id},
}
# Checked, but not columns of the kind's table (a project's tags have their own
# table; a project that is a domain is a row of domains).
NOT_STORED = {"project": frozenset({"tags", "is_domain"}), "user": frozenset({"description"})}


def admin_body(body: Any, kind: str, creating: bool) -> dict[str, Any]:
    """The stored values of a ``{kind: {...}}`` create or update body; 400 for
    a wrong type, an overlong or invalid string, a missing name on create. A
    user's attributes cirrus does not know are kept under ``extra``."""
    out = resource_body(body, kind, FIELDS[kind], ("name",) if creating else ())
    out = {k: v for k, v in out.items() if k not in NOT_STORED.get(kind, ())
           and not (k == "domain_id" and v is None)}
    if kind == "user":
        extra = user_extra(body[kind])
        if "description" in body[kind]:  # checked above; Keystone keeps it as an extra
            extra["description"] = body[kind]["description"]
        if extra:
            out["extra"] = extra
    return out


EXTRA_MAX = 16


def user_extra(data: dict[str, Any]) -> dict[str, Any]:
    """The attributes of a user body that are not cirrus's: strings (checked as
    any text field), 64-bit integers, booleans or null, at most 16 of them, as
    Keystone keeps them in ``extra``."""
    extra = {k: v for k, v in data.items() if k not in FIELDS["user"] and k not in USER_READONLY}
    if len(extra) > EXTRA_MAX:
        raise ValidationError(field="user", reason=f"at most {EXTRA_MAX} other attributes")
    for key, value in extra.items():
        text(key, "user", NAME_MAX, blank=False)
        if isinstance(value, str):
            text(value, f"user/{key}", DESCRIPTION_MAX)
        elif isinstance(value, int) and not isinstance(value, bool) and \
                not -2 ** 63 <= value < 2 ** 63:
            raise ValidationError(field=f"user/{key}", reason="is out of range")
        elif value is not None and not isinstance(value, (bool, int)):
            raise ValidationError(field=f"user/{key}", reason="must be a string, integer or boolean")
    return extra


# What a user body may echo back but never sets.
USER_READONLY = frozenset({"id", "links", "password_expires_at", "options", "extra"})


def resource_body(body: Any, key: str, fields: dict[str, Check],
                  required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The checked ``fields`` of a ``{key: {...}}`` body (others ignored, as
    Keystone keeps what it does not know); 400 naming the field."""
    data = body.get(key) if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise ValidationError(field=key, reason=f"'{key}' is a required object")
    out = {k: fields[k](v, f"{key}/{k}") for k, v in data.items() if k in fields}
    for name in required:
        if name not in out:
            raise ValidationError(field=f"{key}/{name}", reason=f"'{name}' is required")
    return out


def one_of(*choices: str) -> Check:
    def check(value: Any, where: str) -> str:
        if value not in choices:
            raise ValidationError(field=where, reason=f"must be one of {', '.join(choices)}")
        return value
    return check


def _blob(value: Any, where: str) -> str:
    return text(value, where, DESCRIPTION_MAX, blank=False)


def _url(value: Any, where: str) -> str:
    value = text(value, where, DESCRIPTION_MAX, blank=False)
    if not value.startswith(("http://", "https://")):
        raise ValidationError(field=where, reason="must be an http(s) URL")
    return value


_ID = _text(ID_MAX, blank=False)
_NULLABLE_ID = _text(ID_MAX, nullable=True)
_REGION_ID = _text(NAME_MAX, blank=False)
CATALOG_FIELDS: dict[str, dict[str, Check]] = {
    "region": {"id": _REGION_ID, "description": _DESCRIPTION,
               "parent_region_id": _text(NAME_MAX, nullable=True)},
    "service": {"type": _NAME, "name": _text(NAME_MAX, nullable=True),
                "description": _DESCRIPTION, "enabled": boolean},
    "endpoint": {"service_id": _ID, "interface": one_of("public", "internal", "admin"),
                 "url": _url, "region_id": _text(NAME_MAX, nullable=True),
                 "region": _text(NAME_MAX, nullable=True), "enabled": boolean},
    "credential": {"user_id": _ID, "project_id": _NULLABLE_ID, "type": _NAME,
                   "blob": _blob},
    "policy": {"type": _NAME, "blob": _blob},
}
