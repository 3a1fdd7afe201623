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
METHOD_MAX = 64
METHODS = ("password", "token")
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
    project, domain = _scope(auth.get("scope", None), "scope" in auth)
    return AuthRequest(methods, user, password, token, project, domain)


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
FIELDS: dict[str, dict[str, Check]] = {
    "project": {"name": _text(PROJECT_NAME_MAX, blank=False), "description": _DESCRIPTION,
                "enabled": boolean, "domain_id": _domain_id},
    "user": {"name": _NAME, "password": _password, "enabled": boolean,
             "domain_id": _domain_id, "default_project_id": _text(ID_MAX, nullable=True),
             "email": _text(NAME_MAX, nullable=True), "description": _DESCRIPTION},
    "role": {"name": _NAME, "description": _DESCRIPTION, "domain_id": _domain_id},
}
# Checked, but not columns of the kind's table.
NOT_STORED = {"user": frozenset({"description"}), "role": frozenset({"description"})}


def admin_body(body: Any, kind: str, creating: bool) -> dict[str, Any]:
    """The stored values of a ``{kind: {...}}`` create or update body; 400 for
    a wrong type, an overlong or invalid string, a missing name on create."""
    data = body.get(kind) if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise ValidationError(field=kind, reason=f"'{kind}' is a required object")
    out: dict[str, Any] = {}
    for key, value in data.items():
        check = FIELDS[kind].get(key)
        if check is None:
            continue
        value = check(value, f"{kind}/{key}")
        if key in NOT_STORED.get(kind, ()) or (key == "domain_id" and value is None):
            continue
        out[key] = value
    if kind == "role" and out.pop("domain_id", None) is not None:
        raise ValidationError(field="role/domain_id",
                              reason="domain-specific roles are not supported")
    if creating and "name" not in out:
        raise ValidationError(field=f"{kind}/name", reason="'name' is required")
    return out
