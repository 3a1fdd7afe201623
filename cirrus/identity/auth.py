"""Keystone's ``auth`` request body into verified token data.

The body is checked first (:func:`cirrus.identity.auth_schema.auth_request`: 400 for
its shape); then the credentials (401 when wrong); then, in one read, the user,
the scope's roles and the revocation generation together, which the token
carries: a revocation is newer than the token exactly when the token's read did
not see it (:mod:`cirrus.identity.revocation`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cirrus.identity import app_credentials, revocation, store
from cirrus.identity.exception import Unauthorized
from cirrus.identity.auth_schema import AppCredRef, AuthRequest, Ref, auth_request
from cirrus.identity.tokens import TokenData

if TYPE_CHECKING:
    from cirrus.identity.manager import IdentityService

_DENIED = "The request you have made requires authentication."


@dataclass(frozen=True)
class Grant:
    """What a token may carry, read in one snapshot with the generation."""

    generation: int
    project_id: str | None
    domain_id: str | None
    roles: list[str]
    system: bool = False


def _domain(conn: Any, ref: Ref | None) -> dict[str, Any]:
    if ref is None:
        raise Unauthorized(_DENIED)
    dom = store.get_domain(conn, id=ref.id) if ref.id is not None else \
        store.get_domain(conn, name=ref.name)
    if dom is None or not dom["enabled"]:
        raise Unauthorized("Could not find domain: %s." % (ref.id or ref.name))
    return dom


def _find_user(conn: Any, ref: Ref) -> dict[str, Any]:
    if ref.id is not None:
        user = store.get_user(conn, id=ref.id)
    else:
        user = store.get_user(conn, name=ref.name, domain_id=_domain(conn, ref.domain)["id"])
    if user is None:
        raise Unauthorized(_DENIED)
    return user


def _project(conn: Any, ref: Ref) -> dict[str, Any]:
    if ref.id is not None:
        project = store.get_project(conn, id=ref.id)
    else:
        project = store.get_project(conn, name=ref.name,
                                    domain_id=_domain(conn, ref.domain)["id"])
    if project is None or not project["enabled"] or not _domain_enabled(conn, project):
        raise Unauthorized("Could not find project: %s." % (ref.id or ref.name))
    return project


def _domain_enabled(conn: Any, row: dict[str, Any]) -> bool:
    """Whether the domain of a user or project is enabled: a disabled domain's
    users and projects authenticate and scope nothing (Keystone's)."""
    dom = store.get_domain(conn, id=row["domain_id"])
    return dom is not None and bool(dom["enabled"])


def _grant(conn: Any, user_id: str, password_hash: str | None,
           project: Ref | None, domain: Ref | None, system: bool = False) -> Grant:
    """The generation, then the user (still enabled, still with the password
    hash that was verified) and the scope's roles, in one read transaction.
    On a database whose statements each read the latest commit, reading the
    generation first errs the safe way: a token may be refused that need not."""
    generation = revocation.read_generation(conn)
    user = store.get_user(conn, id=user_id)
    if user is None or not user["enabled"] or not _domain_enabled(conn, user) or (
            password_hash is not None and user["password_hash"] != password_hash):
        raise Unauthorized(_DENIED)
    if project is not None:
        project_id = _project(conn, project)["id"]
        roles = store.role_names_for(conn, user_id, project_id=project_id)
        if not roles:
            raise Unauthorized(f"User {user_id} has no access to project {project_id}")
        return Grant(generation, project_id, None, [r["name"] for r in roles])
    if domain is not None:
        domain_id = _domain(conn, domain)["id"]
        roles = store.role_names_for(conn, user_id, domain_id=domain_id)
        if not roles:
            raise Unauthorized(f"User {user_id} has no access to domain {domain_id}")
        return Grant(generation, None, domain_id, [r["name"] for r in roles])
    if system:
        roles = store.role_names_for(conn, user_id, system="all")
        if not roles:
            raise Unauthorized(f"User {user_id} has no access to the system")
        return Grant(generation, None, None, [r["name"] for r in roles], system=True)
    return Grant(generation, None, None, [])


async def resolve_auth(service: "IdentityService", auth: Any) -> TokenData:
    """Verify the credentials in ``auth`` and build the token to issue.

    Supports the ``password`` and ``token`` methods (both: the same user) and
    project, domain or no scope. Raises 400 for malformed bodies and 401 for
    wrong credentials.
    """
    req = auth_request(auth)
    if req.app_cred is not None:
        return await _from_app_cred(service, req)
    old = await service.validate(req.token) if req.token is not None else None
    if old is not None and old.app_cred_id:
        raise Unauthorized("A token from an application credential cannot be rescoped.")
    password_hash, default_project = None, None
    if req.user is not None and req.password is not None:
        user = await service.db.read(_find_user, req.user)
        await service.check_password(user, req.password)
        if old is not None and old.user_id != user["id"]:
            raise Unauthorized(_DENIED)
        user_id, password_hash = user["id"], user["password_hash"]
        default_project = user["default_project_id"] if old is None else None
    else:
        assert old is not None
        user_id = old.user_id
    project = req.project
    if old is not None and project is None and req.domain is None and "scope" not in auth \
            and old.project_id:
        project = Ref(id=old.project_id)  # a token's own scope, as Keystone keeps it
    # A rescoped token keeps how its user first proved who they are (Keystone's).
    methods = tuple(dict.fromkeys([*(old.methods if old else []), *req.methods]))
    if default_project and "scope" not in auth:
        data = await _default_scoped(service, methods, user_id, password_hash, default_project)
    else:
        data = await _issue(service, AuthRequest(methods, project=project, domain=req.domain,
                                                 system=req.system),
                            user_id, password_hash, old)
    if req.token is not None:
        # Revoked while this one was made? Its own event would not reach the
        # new token, whose read saw it: checked again now that the read is done.
        await service.validate(req.token)
    return data


async def _default_scoped(service: "IdentityService", methods: tuple[str, ...], user_id: str,
                          password_hash: str | None, project_id: str) -> TokenData:
    """No scope asked: the user's default project's, as Keystone does, or
    unscoped when they hold no role there (or it is gone or disabled)."""
    try:
        return await _issue(service, AuthRequest(methods, project=Ref(id=project_id)),
                            user_id, password_hash, None)
    except Unauthorized:
        return await _issue(service, AuthRequest(methods), user_id, password_hash, None)


async def _issue(service: "IdentityService", req: AuthRequest, user_id: str,
                 password_hash: str | None, old: TokenData | None) -> TokenData:
    grant = await service.db.read(_grant, user_id, password_hash, req.project, req.domain,
                                  req.system)
    return service.new_token_data(
        user_id, list(req.methods), project_id=grant.project_id, domain_id=grant.domain_id,
        roles=grant.roles, generation=grant.generation, system=grant.system,
        expires_at=old.expires_at if old else None,
        parent_audit_id=old.audit_chain_id if old else None)


def _app_cred_grant(conn: Any, ref: AppCredRef, scoped: bool) -> tuple[dict[str, Any], Grant]:
    """The credential (by id, or by its user and name) and what its token may
    carry, read with the generation; 401 when it names none, has expired or
    its user lost every role it holds."""
    generation = revocation.read_generation(conn)
    if ref.id is not None:
        row = app_credentials.get(conn, None, ref.id) if store.exists_app_cred(conn, ref.id) \
            else None
    else:
        assert ref.user is not None and ref.name is not None
        row = app_credentials.find(conn, _find_user(conn, ref.user)["id"], ref.name)
    if row is None or scoped:
        raise Unauthorized(_DENIED)
    user = store.get_user(conn, id=row["user_id"])
    project = store.get_project(conn, id=row["project_id"])
    roles = app_credentials.usable(conn, row)
    if user is None or not user["enabled"] or project is None or not project["enabled"] \
            or not roles or not _domain_enabled(conn, user) or not _domain_enabled(conn, project):
        raise Unauthorized(_DENIED)
    return row, Grant(generation, row["project_id"], None, roles)


async def _from_app_cred(service: "IdentityService", req: AuthRequest) -> TokenData:
    """A token from an application credential: on its project, with its roles,
    in the audit chain its id names (deleting it revokes the chain). It
    takes no other scope than its own (401)."""
    assert req.app_cred is not None
    row, grant = await service.db.read(_app_cred_grant, req.app_cred,
                                       req.project is not None or req.domain is not None
                                       or req.system)
    await service.check_secret(row["secret_hash"], req.app_cred.secret)
    return service.new_token_data(
        row["user_id"], list(req.methods), project_id=grant.project_id, domain_id=None,
        roles=grant.roles, generation=grant.generation, parent_audit_id=row["id"],
        app_cred_id=row["id"])
