"""Keystone v3 administration routes.

Admins only, but for what Keystone lets any user do for themselves: read their
own user and their token's project, list their own projects
(``/v3/auth/projects``, ``/v3/users/{self}/projects``) and the domains they
hold a role on (``/v3/auth/domains``). Bodies are checked by
:func:`cirrus.identity.schema.admin_body`; ids in paths and filters that could
name nothing (overlong, NUL, lone surrogates) are 404 and 400 without a query.
"""
from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.exception import ValidationError
from cirrus.identity import admin, schema
from cirrus.identity.exception import (DomainNotFound, ProjectNotFound, RoleNotFound,
                                       UserNotFound)

COLLECTION = {"project": "projects", "user": "users", "role": "roles", "domain": "domains"}


def _base(request: Request) -> str:
    return request.app.state.settings.public_url.rstrip("/") + "/identity/v3"


def view(request: Request, kind: str, row: dict[str, Any]) -> dict[str, Any]:
    out = {"id": row["id"], "name": row["name"],
           "links": {"self": f"{_base(request)}/{COLLECTION[kind]}/{row['id']}"}}
    if kind in ("project", "user", "domain"):
        out["enabled"] = row["enabled"]
    if kind in ("project", "user"):
        out["domain_id"] = row["domain_id"]
    if kind in ("project", "domain"):
        out["description"] = row.get("description") or ""
    if kind == "project":
        out.update({"is_domain": False, "parent_id": row["domain_id"], "tags": [], "options": {}})
    if kind == "user":
        out.update({"default_project_id": row["default_project_id"], "email": row["email"],
                    "password_expires_at": None, "options": {}})
    if kind == "role":
        out.update({"domain_id": None, "description": None, "options": {}})
    return out


def _lifetime(request: Request) -> float:
    return float(request.app.state.settings.token_expiration)


def _rounds(request: Request) -> int:
    return int(request.app.state.settings.password_hash_rounds)


def _path_id(request: Request, key: str, missing: type[Exception], field: str) -> str:
    """A path parameter naming a row; one that cannot is not found, unread."""
    value = request.path_params[key]
    if not schema.is_plain(value):
        raise missing(**{field: "(invalid)"})
    return value


_MISSING = {"project": (ProjectNotFound, "project_id"), "user": (UserNotFound, "user_id"),
            "role": (RoleNotFound, "role_id"), "domain": (DomainNotFound, "domain_id")}


def _query(request: Request, key: str, max_length: int = schema.ID_MAX) -> str | None:
    """A filter from the query string; 400 for one no row could match."""
    value = request.query_params.get(key)
    if value is not None and not schema.is_plain(value, max_length):
        raise ValidationError(field=key, reason="is not a valid filter value")
    return value


def _admin(request: Request) -> Any:
    ctx = context(request)
    policy.enforce(ctx, "identity:admin")
    return ctx


def collection(kind: str) -> tuple[Any, Any]:
    async def index(request: Request) -> Response:
        _admin(request)
        filters: dict[str, Any] = {"name": _query(request, "name", schema.NAME_MAX),
                                   "domain_id": _query(request, "domain_id"),
                                   "enabled": _query(request, "enabled")}
        if filters["enabled"] is not None:
            filters["enabled"] = filters["enabled"].lower() in ("true", "1")
        rows = await request.app.state.db.read(admin.list_rows, kind, filters)
        return reply({COLLECTION[kind]: [view(request, kind, r) for r in rows],
                      "links": {"self": str(request.url), "next": None, "previous": None}})

    async def create(request: Request) -> Response:
        _admin(request)
        values = schema.admin_body(await json_body(request), kind, True)
        values = await asyncio.to_thread(admin.with_password_hashed, values, True,
                                         _rounds(request))
        row = await request.app.state.db.run(admin.create, kind, values)
        return reply({kind: view(request, kind, row)}, status=201)
    return index, create


def member(kind: str) -> tuple[Any, Any, Any]:
    def ident(request: Request) -> str:
        return _path_id(request, "id", *_MISSING[kind])

    async def show(request: Request) -> Response:
        ctx = context(request)
        row_id = ident(request)
        if not (kind == "user" and row_id == ctx.user_id) and not \
                (kind == "project" and row_id == ctx.project_id):
            policy.enforce(ctx, "identity:admin")
        row = await request.app.state.db.read(admin.get, kind, row_id)
        return reply({kind: view(request, kind, row)})

    async def update(request: Request) -> Response:
        _admin(request)
        row_id = ident(request)
        values = schema.admin_body(await json_body(request), kind, False)
        values = await asyncio.to_thread(admin.with_password_hashed, values, False,
                                         _rounds(request))
        row = await request.app.state.db.run(admin.update, kind, row_id, values,
                                             lifetime=_lifetime(request))
        return reply({kind: view(request, kind, row)})

    async def delete(request: Request) -> Response:
        _admin(request)
        await request.app.state.db.run(admin.delete, kind, ident(request),
                                       lifetime=_lifetime(request))
        return no_content()
    return show, update, delete


async def user_projects(request: Request) -> Response:
    ctx = context(request)
    user_id = _path_id(request, "id", UserNotFound, "user_id")
    if user_id != ctx.user_id:
        policy.enforce(ctx, "identity:admin")
    rows = await request.app.state.db.read(admin.projects_of, user_id)
    return reply({"projects": [view(request, "project", r) for r in rows],
                  "links": {"self": str(request.url), "next": None, "previous": None}})


async def auth_projects(request: Request) -> Response:
    ctx = context(request)
    rows = await request.app.state.db.read(admin.projects_of, ctx.user_id)
    return reply({"projects": [view(request, "project", r) for r in rows],
                  "links": {"self": str(request.url), "next": None, "previous": None}})


async def auth_domains(request: Request) -> Response:
    """The domains the caller holds a role on (Keystone's: not every domain)."""
    ctx = context(request)
    rows = await request.app.state.db.read(admin.domains_of, ctx.user_id)
    return reply({"domains": [view(request, "domain", r) for r in rows],
                  "links": {"self": str(request.url), "next": None, "previous": None}})


def _grant_params(request: Request) -> tuple[str, str, dict[str, str]]:
    """(user id, role id, scope) of a grant path: ``/v3/projects/…`` or
    ``/v3/domains/…``; anything else names no grant."""
    target = request.path_params["target"]
    if target not in ("projects", "domains"):
        raise RoleNotFound(role_id="(invalid)")
    user_id = _path_id(request, "uid", UserNotFound, "user_id")
    role_id = _path_id(request, "rid", RoleNotFound, "role_id") \
        if "rid" in request.path_params else ""
    if target == "projects":
        scope = {"project_id": _path_id(request, "tid", ProjectNotFound, "project_id")}
    else:
        scope = {"domain_id": _path_id(request, "tid", DomainNotFound, "domain_id")}
    return user_id, role_id, scope


async def grant(request: Request) -> Response:
    _admin(request)
    user_id, role_id, scope = _grant_params(request)
    await request.app.state.db.run(admin.grant, user_id, role_id, **scope)
    return no_content()


async def check_grant(request: Request) -> Response:
    _admin(request)
    user_id, role_id, scope = _grant_params(request)
    found = await request.app.state.db.read(admin.assignments, user_id,
                                            scope.get("project_id"), role_id,
                                            scope.get("domain_id"))
    if not found:
        raise RoleNotFound(role_id=role_id)
    return no_content()


async def revoke_grant(request: Request) -> Response:
    _admin(request)
    user_id, role_id, scope = _grant_params(request)
    if not await request.app.state.db.run(admin.revoke, user_id, role_id, **scope,
                                          lifetime=_lifetime(request)):
        raise RoleNotFound(role_id=role_id)
    return no_content()


async def list_grants(request: Request) -> Response:
    _admin(request)
    user_id, _, scope = _grant_params(request)

    def load(conn: Any) -> list[dict[str, Any]]:
        rows = admin.assignments(conn, user_id, scope.get("project_id"), None,
                                 scope.get("domain_id"))
        return [admin.get(conn, "role", r["role_id"]) for r in rows]
    roles = await request.app.state.db.read(load)
    return reply({"roles": [view(request, "role", r) for r in roles],
                  "links": {"self": str(request.url), "next": None, "previous": None}})


async def role_assignments(request: Request) -> Response:
    """Admins only, as Keystone's ``identity:list_role_assignments``."""
    _admin(request)
    user, project, role, domain = (_query(request, k) for k in (
        "user.id", "scope.project.id", "role.id", "scope.domain.id"))
    names = "include_names" in request.query_params

    def load(conn: Any) -> list[dict[str, Any]]:
        out = []
        for r in admin.assignments(conn, user, project, role, domain):
            role_ref = {"id": r["role_id"]}
            usr = {"id": r["user_id"]}
            scope = {"project": {"id": r["project_id"]}} if r["project_id"] else \
                {"domain": {"id": r["domain_id"]}}
            if names:
                role_ref["name"] = admin.get(conn, "role", r["role_id"])["name"]
                usr["name"] = admin.get(conn, "user", r["user_id"])["name"]
                if r["project_id"]:
                    scope["project"]["name"] = admin.get(conn, "project", r["project_id"])["name"]
            out.append({"role": role_ref, "user": usr, "scope": scope,
                        "links": {"assignment": f"{_base(request)}/role_assignments"}})
        return out
    return reply({"role_assignments": await request.app.state.db.read(load),
                  "links": {"self": str(request.url), "next": None, "previous": None}})


async def services(request: Request) -> Response:
    _admin(request)  # Keystone's identity:list_services (the catalog is every token's)
    catalog = request.app.state.identity.catalog()
    return reply({"services": [{"id": s["id"], "type": s["type"], "name": s["name"],
                                "enabled": True, "description": s["name"]} for s in catalog]})


async def endpoints(request: Request) -> Response:
    _admin(request)  # Keystone's identity:list_endpoints
    catalog = request.app.state.identity.catalog()
    return reply({"endpoints": [{**e, "service_id": s["id"], "enabled": True}
                                for s in catalog for e in s["endpoints"]]})


def _routes() -> list[Route]:
    routes: list[Route] = []
    for kind in ("project", "user", "role"):
        index, create = collection(kind)
        show, update, delete = member(kind)
        base = f"/v3/{COLLECTION[kind]}"
        routes += [Route(base, index, methods=["GET"]), Route(base, create, methods=["POST"]),
                   Route(base + "/{id}", show, methods=["GET"]),
                   Route(base + "/{id}", update, methods=["PATCH"]),
                   Route(base + "/{id}", delete, methods=["DELETE"])]
    d_index, _ = collection("domain")
    d_show, _, _ = member("domain")
    grant_path = "/v3/{target:str}/{tid}/users/{uid}/roles"
    routes += [
        Route("/v3/domains", d_index, methods=["GET"]),
        Route("/v3/domains/{id}", d_show, methods=["GET"]),
        Route("/v3/users/{id}/projects", user_projects, methods=["GET"]),
        Route("/v3/auth/projects", auth_projects, methods=["GET"]),
        Route("/v3/auth/domains", auth_domains, methods=["GET"]),
        Route(grant_path, list_grants, methods=["GET"]),
        Route(grant_path + "/{rid}", grant, methods=["PUT"]),
        Route(grant_path + "/{rid}", check_grant, methods=["HEAD", "GET"]),
        Route(grant_path + "/{rid}", revoke_grant, methods=["DELETE"]),
        Route("/v3/role_assignments", role_assignments, methods=["GET"]),
        Route("/v3/services", services, methods=["GET"]),
        Route("/v3/endpoints", endpoints, methods=["GET"]),
    ]
    return routes


ROUTES = _routes()
