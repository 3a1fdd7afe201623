"""Parsing Keystone's ``auth`` request body into verified token data."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cirrus import exception
from cirrus.identity import store
from cirrus.identity.exception import Unauthorized
from cirrus.identity.tokens import TokenData

if TYPE_CHECKING:
    from cirrus.identity.manager import IdentityService


def _obj(parent: dict, key: str, where: str) -> dict:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise exception.ValidationError(field=f"{where}.{key}", reason="must be an object")
    return value


def _domain_ref(conn: Any, ref: dict | None) -> dict:
    if not isinstance(ref, dict) or not (ref.get("id") or ref.get("name")):
        raise exception.ValidationError(field="domain", reason="id or name is required")
    dom = store.get_domain(conn, id=ref.get("id"), name=ref.get("name"))
    if dom is None or not dom["enabled"]:
        raise Unauthorized("Could not find domain: %s." % (ref.get("id") or ref.get("name")))
    return dom


def _find_user(conn: Any, ref: dict) -> dict:
    if ref.get("id"):
        user = store.get_user(conn, id=ref["id"])
    elif ref.get("name"):
        user = store.get_user(conn, name=ref["name"],
                              domain_id=_domain_ref(conn, ref.get("domain"))["id"])
    else:
        raise exception.ValidationError(field="auth.identity.password.user",
                                        reason="id or name is required")
    if user is None:
        raise Unauthorized("The request you have made requires authentication.")
    return user


def _resolve_scope(conn: Any, user_id: str, scope: Any) -> tuple[str | None, str | None, list[str]]:
    if scope is None or scope == "unscoped":
        return None, None, []
    if not isinstance(scope, dict):
        raise exception.ValidationError(field="auth.scope", reason="must be an object")
    if "project" in scope:
        ref = _obj(scope, "project", "auth.scope")
        if ref.get("id"):
            project = store.get_project(conn, id=ref["id"])
        elif ref.get("name"):
            project = store.get_project(conn, name=ref["name"],
                                        domain_id=_domain_ref(conn, ref.get("domain"))["id"])
        else:
            raise exception.ValidationError(field="auth.scope.project", reason="id or name is required")
        if project is None or not project["enabled"]:
            raise Unauthorized("Could not find project: %s." % (ref.get("id") or ref.get("name")))
        roles = store.role_names_for(conn, user_id, project_id=project["id"])
        if not roles:
            raise Unauthorized(f"User {user_id} has no access to project {project['id']}")
        return project["id"], None, [r["name"] for r in roles]
    if "domain" in scope:
        dom = _domain_ref(conn, scope["domain"])
        roles = store.role_names_for(conn, user_id, domain_id=dom["id"])
        if not roles:
            raise Unauthorized(f"User {user_id} has no access to domain {dom['id']}")
        return None, dom["id"], [r["name"] for r in roles]
    raise exception.ValidationError(field="auth.scope", reason="project or domain is required")


async def resolve_auth(service: "IdentityService", auth: Any) -> TokenData:
    """Verify the credentials in ``auth`` and build the token to issue.

    Supports the ``password`` and ``token`` methods and project, domain or no scope.
    Raises 400 for malformed bodies and 401 for wrong credentials.
    """
    if not isinstance(auth, dict):
        raise exception.ValidationError(field="auth", reason="must be an object")
    identity = _obj(auth, "identity", "auth")
    methods = identity.get("methods")
    if not isinstance(methods, list) or not methods:
        raise exception.ValidationError(field="auth.identity.methods", reason="must be a non-empty list")
    scope = auth.get("scope")
    if "password" in methods:
        user_ref = _obj(_obj(identity, "password", "auth.identity"), "user", "auth.identity.password")
        password = user_ref.get("password")
        if not isinstance(password, str):
            raise exception.ValidationError(field="auth.identity.password.user.password",
                                            reason="is required")
        user = await service.db.read(_find_user, user_ref)
        await service.check_password(user, password)
        user_id, expires, audit = user["id"], None, None
    elif "token" in methods:
        tok = _obj(identity, "token", "auth.identity").get("id")
        if not isinstance(tok, str):
            raise exception.ValidationError(field="auth.identity.token.id", reason="is required")
        old = await service.validate(tok)
        user_id, expires, audit = old.user_id, old.expires_at, None
        if scope is None and old.project_id:
            scope = {"project": {"id": old.project_id}}
    else:
        raise Unauthorized(f"Unsupported authentication method: {methods[0]}")
    user = await service.db.read(lambda c: store.get_user(c, id=user_id))
    if user is None or not user["enabled"]:
        raise Unauthorized("The request you have made requires authentication.")
    project_id, domain_id, roles = await service.db.read(_resolve_scope, user_id, scope)
    return service.new_token_data(user_id, list(methods), project_id=project_id,
                                  domain_id=domain_id, roles=roles, expires_at=expires,
                                  audit_id=audit)
