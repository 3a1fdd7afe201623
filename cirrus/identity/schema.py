"""Identity request bodies, checked before any work (Keystone's schemas, as checks).

Keystone validates ``POST /v3/auth/tokens`` against ``keystone/auth/schema.py``
and the project, user and role bodies against their resources' schemas: a body
of the wrong shape is 400, wrong credentials are 401. These are the same rules
as a few type checks, plus what cirrus's storage needs as well: bounded lengths
(Keystone's: names 255, project names 64, ids 64, passwords 4096), text that is
valid Unicode (no lone surrogates: they cannot be encoded, stored or listed)
and, where it reaches the database, without NUL (PostgreSQL refuses it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from cirrus.exception import ValidationError
from cirrus.identity.exception import Unauthorized
from cirrus.text import encodable, storable

NAME_MAX = 255
PROJECT_NAME_MAX = 64
ID_MAX = 64
PASSWORD_MAX = 4096  # Keystone's [identity] max_password_length
TOKEN_MAX = 16384
DESCRIPTION_MAX = 65535
TAGS_MAX = 80
METHOD_MAX = 64
METHODS = ("password", "token", "application_credential")
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


# -- POST /v3/auth/tokens ------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    """A user, project or domain by id, or by name (within ``domain``)."""

    id: str | None = None
    name: str | None = None
    domain: "Ref | None" = None


@dataclass(frozen=True)
class AuthRequest:
    """A checked ``auth`` body: the methods with their credentials, and the scope
    (a project, a domain, or neither: unscoped)."""

    methods: tuple[str, ...]
    user: Ref | None = None
    password: str | None = None
    token: str | None = None
    project: Ref | None = None
    domain: Ref | None = None
    app_cred: "AppCredRef | None" = None
    system: bool = False


@dataclass(frozen=True)
class AppCredRef:
    """An application credential by id, or by name and its user; its secret."""

    secret: str
    id: str | None = None
    name: str | None = None
    user: Ref | None = None


def _app_cred(identity: dict[str, Any]) -> AppCredRef:
    where = "identity/application_credential"
    ref = obj(identity, "application_credential", "identity")
    if "secret" not in ref:
        raise ValidationError(field=f"{where}/secret", reason="is required")
    secret = text(ref["secret"], f"{where}/secret", PASSWORD_MAX, nul=True)
    if "id" in ref:
        return AppCredRef(secret, id=text(ref["id"], f"{where}/id", ID_MAX))
    if "name" not in ref or "user" not in ref:
        raise ValidationError(field=where, reason="id, or name and user, must be present")
    user = _ref(obj(ref, "user", where), f"{where}/user", NAME_MAX, name_needs_domain=True)
    return AppCredRef(secret, name=text(ref["name"], f"{where}/name", NAME_MAX), user=user)


def auth_request(auth: Any) -> AuthRequest:
    """Check Keystone's ``auth`` object; 400 for its shape, 401 for a method
    cirrus does not offer (as Keystone answers an unknown one)."""
    if not isinstance(auth, dict):
        raise ValidationError(field="auth", reason="must be an object")
    identity = obj(auth, "identity", "auth")
    methods = _methods(identity.get("methods"))
    user = password = token = None
    if "password" in methods:
        user_ref = obj(obj(identity, "password", "identity"), "user", "identity/password")
        user = _ref(user_ref, "identity/password/user", NAME_MAX, name_needs_domain=True)
        if "password" not in user_ref:
            raise ValidationError(field="identity/password/user/password", reason="is required")
        password = text(user_ref["password"], "identity/password/user/password", PASSWORD_MAX,
                        nul=True)
    if "token" in methods:
        token_ref = obj(identity, "token", "identity")
        if "id" not in token_ref:
            raise ValidationError(field="identity/token/id", reason="is required")
        token = text(token_ref["id"], "identity/token/id", TOKEN_MAX)
    app_cred = _app_cred(identity) if "application_credential" in methods else None
    if app_cred is not None and len(methods) > 1:
        raise Unauthorized("An application credential authenticates alone.")
    scope = auth.get("scope", None)
    if isinstance(scope, dict) and "system" in scope:
        if scope["system"] != {"all": True} or len(scope) != 1:
            raise ValidationError(field="scope/system", reason="must be {\"all\": true}")
        return AuthRequest(methods, user, password, token, app_cred=app_cred, system=True)
    project, domain = _scope(scope, "scope" in auth)
    return AuthRequest(methods, user, password, token, project, domain, app_cred)


def _methods(value: Any) -> tuple[str, ...]:
    where = "identity/methods"
    if not isinstance(value, list) or not value:
        raise ValidationError(field=where, reason="must be a non-empty list of strings")
    methods = tuple(dict.fromkeys(text(v, where, METHOD_MAX) for v in value))
    for method in methods:
        if method not in METHODS:
            raise Unauthorized("Attempted to authenticate with an unsupported method.")
    return methods


def _ref(ref: dict[str, Any], where: str, name_max: int, *,
         name_needs_domain: bool) -> Ref:
    """An id or a name (keys present, as Keystone checks), with its domain."""
    if "id" not in ref and "name" not in ref:
        raise ValidationError(field=where, reason="id or name must be present")
    ident = text(ref["id"], f"{where}/id", ID_MAX) if "id" in ref else None
    name = text(ref["name"], f"{where}/name", name_max) if "name" in ref else None
    domain = None
    if "domain" in ref:
        domain = _ref(obj(ref, "domain", where), f"{where}/domain", NAME_MAX,
                      name_needs_domain=False)
    if ident is None and name_needs_domain and domain is None:
        raise ValidationError(field=f"{where}/domain", reason="is required with a name")
    return Ref(ident, name, domain)


def _scope(scope: Any, given: bool) -> tuple[Ref | None, Ref | None]:
    """(project, domain) of the scope; neither for an unscoped token."""
    if not given or scope is None or scope == "unscoped":
        return None, None
    if not isinstance(scope, dict):
        raise ValidationError(field="scope", reason="must be an object or 'unscoped'")
    kinds = [k for k in ("project", "domain", "OS-TRUST:trust", "system") if k in scope]
    if not kinds and "unscoped" in scope:
        return None, None
    if len(kinds) != 1:
        raise ValidationError(field="scope",
                              reason="exactly one of project, domain, OS-TRUST:trust or system")
    if kinds[0] == "project":
        return _ref(obj(scope, "project", "scope"), "scope/project", PROJECT_NAME_MAX,
                    name_needs_domain=True), None
    if kinds[0] == "domain":
        return None, _ref(obj(scope, "domain", "scope"), "scope/domain", NAME_MAX,
                          name_needs_domain=False)
    raise Unauthorized(f"Scope {kinds[0]} is not supported by this cloud.")


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
