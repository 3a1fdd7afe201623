"""``POST /v3/auth/tokens`` bodies, checked before any work, as Keystone's
``keystone/auth/schema.py`` checks them (with the bounds and text rules of
:mod:`cirrus.identity.schema`): 400 for the shape, 401 for a method or scope
cirrus does not offer, as Keystone answers an unknown one."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cirrus.exception import ValidationError
from cirrus.identity.exception import Unauthorized
from cirrus.identity.schema import (ID_MAX, METHOD_MAX, NAME_MAX, PASSWORD_MAX,
                                    PROJECT_NAME_MAX, TOKEN_MAX, obj, text)

METHODS = ("password", "token", "application_credential")


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
