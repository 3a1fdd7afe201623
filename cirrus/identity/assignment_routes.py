"""Grants, role assignments and role inference rules: admins only (Keystone's
``identity:create_grant`` … ``identity:list_role_assignments``,
``identity:create_implied_role`` …).

A grant path names who (``users/{uid}`` or ``groups/{gid}``) holds which role
where: ``/v3/projects/{tid}/…``, ``/v3/domains/{tid}/…`` or ``/v3/system/…``.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import no_content, reply
from cirrus.exception import ValidationError
from cirrus.identity import admin, assignments, implied_roles
from cirrus.identity.assignments import Actor, Assignment, Filters, Target
from cirrus.identity.exception import (DomainNotFound, GroupNotFound, ProjectNotFound,
                                       RoleNotFound, UserNotFound)
from cirrus.identity.http import (base, flag, lifetime, listing, path_id, query,
                                  require_admin)
from cirrus.identity.views import role_ref, view


def _grant_params(request: Request) -> tuple[Actor, str, Target]:
    """(who, role id, where) of a grant path; anything else names no grant."""
    params = request.path_params
    if "uid" in params:
        actor = Actor("user", path_id(request, "uid", UserNotFound, "user_id"))
    else:
        actor = Actor("group", path_id(request, "gid", GroupNotFound, "group_id"))
    role_id = path_id(request, "rid", RoleNotFound, "role_id") if "rid" in params else ""
    target = params.get("target")
    if target is None:
        return actor, role_id, Target(system=assignments.SYSTEM)
    if target == "projects":
        return actor, role_id, Target(
            project_id=path_id(request, "tid", ProjectNotFound, "project_id"))
    if target == "domains":
        return actor, role_id, Target(
            domain_id=path_id(request, "tid", DomainNotFound, "domain_id"))
    raise RoleNotFound(role_id="(invalid)")


async def grant(request: Request) -> Response:
    require_admin(request)
    await request.app.state.db.run(assignments.grant, *_grant_params(request))
    return no_content()


async def check_grant(request: Request) -> Response:
    require_admin(request)
    actor, role_id, target = _grant_params(request)

    def check(conn: sa.Connection) -> None:
        assignments.check_parts(conn, actor, role_id, target)
        if role_id not in assignments.roles_on(conn, actor, target):
            raise RoleNotFound(role_id=role_id)
    await request.app.state.db.read(check)
    return no_content()


async def revoke_grant(request: Request) -> Response:
    require_admin(request)
    actor, role_id, target = _grant_params(request)

    def revoke(conn: sa.Connection) -> None:
        assignments.check_parts(conn, actor, role_id, target)
        if not assignments.revoke(conn, actor, role_id, target, lifetime=lifetime(request)):
            raise RoleNotFound(role_id=role_id)
    await request.app.state.db.run(revoke)
    return no_content()


async def list_grants(request: Request) -> Response:
    require_admin(request)
    actor, _, target = _grant_params(request)

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        assignments.check_parts(conn, actor, None, target)
        return [admin.get(conn, "role", r) for r in assignments.roles_on(conn, actor, target)]
    roles = await request.app.state.db.read(load)
    return reply(listing(request, "roles", [view(request, "role", r) for r in roles]))


def _filters(request: Request) -> Filters:
    system = query(request, "scope.system")
    if system is not None and system != assignments.SYSTEM:
        raise ValidationError(field="scope.system", reason="must be 'all'")
    f = Filters(user_id=query(request, "user.id"), group_id=query(request, "group.id"),
                role_id=query(request, "role.id"), project_id=query(request, "scope.project.id"),
                domain_id=query(request, "scope.domain.id"), system=system)
    if f.user_id and f.group_id:
        raise ValidationError(field="group.id", reason="cannot be combined with user.id")
    return f


def _names(conn: sa.Connection, kind: str, ident: str) -> dict[str, Any]:
    """``{"id", "name"}`` (and the domain, for what lives in one) for include_names."""
    row = admin.get(conn, kind, ident)
    out: dict[str, Any] = {"id": ident, "name": row["name"]}
    if row.get("domain_id"):
        dom = admin.get(conn, "domain", row["domain_id"])
        out["domain"] = {"id": dom["id"], "name": dom["name"]}
    return out


def _body(conn: sa.Connection, a: Assignment, names: bool, url: str) -> dict[str, Any]:
    def ref(kind: str, ident: str) -> dict[str, Any]:
        return _names(conn, kind, ident) if names else {"id": ident}
    t = a.target
    scope: dict[str, Any] = {"project": ref("project", t.project_id)} if t.project_id else \
        {"domain": ref("domain", t.domain_id)} if t.domain_id else {"system": {"all": True}}
    links = {"assignment": url}
    if a.via_group:
        links["membership"] = f"{url.rsplit('/role_assignments', 1)[0]}/groups/" \
                              f"{a.via_group}/users/{a.actor.id}"
    if a.prior_role_id:
        links["prior_role"] = f"{url.rsplit('/role_assignments', 1)[0]}/roles/{a.prior_role_id}"
    return {"role": ref("role", a.role_id), a.actor.kind: ref(a.actor.kind, a.actor.id),
            "scope": scope, "links": links}


async def role_assignments(request: Request) -> Response:
    """Keystone's ``GET /v3/role_assignments`` with its filters, ``effective``
    (groups expanded, inference rules followed) and ``include_names``."""
    require_admin(request)
    f, names, effective = _filters(request), flag(request, "include_names"), \
        flag(request, "effective")
    if effective and f.group_id:
        raise ValidationError(field="group.id", reason="cannot be combined with effective")
    url = f"{base(request)}/role_assignments"

    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        found = assignments.effective(conn, f) if effective else assignments.listing(conn, f)
        return [_body(conn, a, names, url) for a in found]
    return reply(listing(request, "role_assignments", await request.app.state.db.read(load)))


def _rule_ids(request: Request) -> tuple[str, str]:
    return (path_id(request, "prior", RoleNotFound, "role_id"),
            path_id(request, "implied", RoleNotFound, "role_id"))


def _rule(request: Request, prior: dict[str, Any], implied: Any) -> dict[str, Any]:
    url = f"{base(request)}/roles/{prior['id']}/implies"
    if isinstance(implied, dict):
        url += f"/{implied['id']}"
        implies: Any = role_ref(request, implied)
    else:
        implies = [role_ref(request, r) for r in implied]
    return {"role_inference": {"prior_role": role_ref(request, prior), "implies": implies},
            "links": {"self": url}}


async def create_implied_role(request: Request) -> Response:
    require_admin(request)
    prior, implied = await request.app.state.db.run(
        implied_roles.create, *_rule_ids(request), lifetime=lifetime(request))
    return reply(_rule(request, prior, implied), status=201)


async def get_implied_role(request: Request) -> Response:
    require_admin(request)
    prior, implied = await request.app.state.db.read(implied_roles.get, *_rule_ids(request))
    if request.method == "HEAD":
        return no_content()
    return reply(_rule(request, prior, implied))


async def delete_implied_role(request: Request) -> Response:
    require_admin(request)
    await request.app.state.db.run(implied_roles.delete, *_rule_ids(request),
                                   lifetime=lifetime(request))
    return no_content()


async def list_implied_roles(request: Request) -> Response:
    require_admin(request)
    prior_id = path_id(request, "prior", RoleNotFound, "role_id")
    prior, implied = await request.app.state.db.read(implied_roles.implied_by, prior_id)
    return reply(_rule(request, prior, implied))


async def list_role_inference_rules(request: Request) -> Response:
    require_admin(request)
    rules = await request.app.state.db.read(implied_roles.every)
    return reply(listing(request, "role_inferences",
                         [_rule(request, p, i)["role_inference"] for p, i in rules]))


def _grant_routes() -> list[Route]:
    routes = []
    for where in ("/v3/{target:str}/{tid}", "/v3/system"):
        for who in ("users/{uid}", "groups/{gid}"):
            path = f"{where}/{who}/roles"
            routes += [Route(path, list_grants, methods=["GET"]),
                       Route(path + "/{rid}", grant, methods=["PUT"]),
                       Route(path + "/{rid}", check_grant, methods=["HEAD", "GET"]),
                       Route(path + "/{rid}", revoke_grant, methods=["DELETE"])]
    return routes


ROUTES = [
    *_grant_routes(),
    Route("/v3/role_assignments", role_assignments, methods=["GET"]),
    Route("/v3/roles/{prior}/implies", list_implied_roles, methods=["GET"]),
    Route("/v3/roles/{prior}/implies/{implied}", create_implied_role, methods=["PUT"]),
    Route("/v3/roles/{prior}/implies/{implied}", get_implied_role, methods=["GET", "HEAD"]),
    Route("/v3/roles/{prior}/implies/{implied}", delete_implied_role, methods=["DELETE"]),
    Route("/v3/role_inferences", list_role_inference_rules, methods=["GET"]),
]
