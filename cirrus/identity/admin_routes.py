"""Keystone v3 administration routes (admins; users may read themselves)."""
from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.exception import ValidationError
from cirrus.identity import admin
from cirrus.identity.exception import RoleNotFound

FIELDS = {"project": {"name": str, "description": str, "enabled": bool, "domain_id": str},
          "user": {"name": str, "password": str, "enabled": bool, "domain_id": str,
                   "default_project_id": str, "email": str, "description": str},
          "role": {"name": str, "description": str, "domain_id": str}}
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


def _body(body: Any, kind: str, creating: bool) -> dict[str, Any]:
    data = body.get(kind) if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise ValidationError(field=kind, reason=f"'{kind}' is a required object")
    out = {}
    for key, value in data.items():
        expected = FIELDS[kind].get(key)
        if expected is None:
            continue  # Keystone keeps extra attributes; cirrus ignores them
        if not isinstance(value, expected) and not (value is None and key != "name"):
            raise ValidationError(field=f"{kind}/{key}", reason=f"must be {expected.__name__}")
        if key == "description" and kind != "project":
            continue
        out[key] = value
    if creating and not out.get("name"):
        raise ValidationError(field=f"{kind}/name", reason="'name' is required")
    return out


def _admin(request: Request) -> Any:
    ctx = context(request)
    policy.enforce(ctx, "identity:admin")
    return ctx


def collection(kind: str) -> tuple[Any, Any]:
    async def index(request: Request) -> Response:
        ctx = context(request)
        filters = {k: request.query_params.get(k) for k in ("name", "domain_id", "enabled")}
        if filters["enabled"] is not None:
            filters["enabled"] = filters["enabled"].lower() in ("true", "1")
        if not ctx.is_admin:
            if kind != "role":
                policy.enforce(ctx, "identity:admin")
        rows = await request.app.state.db.read(admin.list_rows, kind, filters)
        return reply({COLLECTION[kind]: [view(request, kind, r) for r in rows],
                      "links": {"self": str(request.url), "next": None, "previous": None}})

    async def create(request: Request) -> Response:
        _admin(request)
        values = _body(await json_body(request), kind, True)
        values = await asyncio.to_thread(admin.with_password_hashed, values, True)
        row = await request.app.state.db.run(admin.create, kind, values)
        return reply({kind: view(request, kind, row)}, status=201)
    return index, create


def member(kind: str) -> tuple[Any, Any, Any]:
    async def show(request: Request) -> Response:
        ctx = context(request)
        ident = request.path_params["id"]
        if not (kind == "user" and ident == ctx.user_id) and not \
                (kind == "project" and ident == ctx.project_id):
            policy.enforce(ctx, "identity:admin")
        row = await request.app.state.db.read(admin.get, kind, ident)
        return reply({kind: view(request, kind, row)})

    async def update(request: Request) -> Response:
        _admin(request)
        values = _body(await json_body(request), kind, False)
        values = await asyncio.to_thread(admin.with_password_hashed, values, False)
        row = await request.app.state.db.run(admin.update, kind, request.path_params["id"], values)
        return reply({kind: view(request, kind, row)})

    async def delete(request: Request) -> Response:
        _admin(request)
        await request.app.state.db.run(admin.delete, kind, request.path_params["id"])
        return no_content()
    return show, update, delete


async def user_projects(request: Request) -> Response:
    ctx = context(request)
    user_id = request.path_params["id"]
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
    ctx = context(request)
    rows = await request.app.state.db.read(admin.list_rows, "domain", {})
    mine = rows if ctx.is_admin else [r for r in rows if r["id"] == "default"]
    return reply({"domains": [view(request, "domain", r) for r in mine],
                  "links": {"self": str(request.url), "next": None, "previous": None}})


def _scope(request: Request) -> dict[str, str]:
    target = request.path_params["target"]
    return {"project_id": request.path_params["tid"]} if target == "projects" else \
        {"domain_id": request.path_params["tid"]}


async def grant(request: Request) -> Response:
    _admin(request)
    p = request.path_params
    await request.app.state.db.run(admin.grant, p["uid"], p["rid"], **_scope(request))
    return no_content()


async def check_grant(request: Request) -> Response:
    _admin(request)
    p = request.path_params
    found = await request.app.state.db.read(admin.assignments, p["uid"],
                                            _scope(request).get("project_id"), p["rid"],
                                            _scope(request).get("domain_id"))
    if not found:
        raise RoleNotFound(role_id=p["rid"])
    return no_content()


async def revoke_grant(request: Request) -> Response:
    _admin(request)
    p = request.path_params
    if not await request.app.state.db.run(admin.revoke, p["uid"], p["rid"], **_scope(request)):
        raise RoleNotFound(role_id=p["rid"])
    return no_content()


async def list_grants(request: Request) -> Response:
    _admin(request)
    p = request.path_params
    scope = _scope(request)

    def load(conn: Any) -> list[dict[str, Any]]:
        rows = admin.assignments(conn, p["uid"], scope.get("project_id"), None, scope.get("domain_id"))
        return [admin.get(conn, "role", r["role_id"]) for r in rows]
    roles = await request.app.state.db.read(load)
    return reply({"roles": [view(request, "role", r) for r in roles],
                  "links": {"self": str(request.url), "next": None, "previous": None}})


async def role_assignments(request: Request) -> Response:
    ctx = context(request)
    q = request.query_params
    user = q.get("user.id")
    if not (user and user == ctx.user_id):
        policy.enforce(ctx, "identity:admin")
    names = "include_names" in q

    def load(conn: Any) -> list[dict[str, Any]]:
        out = []
        for r in admin.assignments(conn, user, q.get("scope.project.id"), q.get("role.id"),
                                   q.get("scope.domain.id")):
            role = {"id": r["role_id"]}
            usr = {"id": r["user_id"]}
            scope = {"project": {"id": r["project_id"]}} if r["project_id"] else \
                {"domain": {"id": r["domain_id"]}}
            if names:
                role["name"] = admin.get(conn, "role", r["role_id"])["name"]
                usr["name"] = admin.get(conn, "user", r["user_id"])["name"]
                if r["project_id"]:
                    scope["project"]["name"] = admin.get(conn, "project", r["project_id"])["name"]
            out.append({"role": role, "user": usr, "scope": scope,
                        "links": {"assignment": f"{_base(request)}/role_assignments"}})
        return out
    return reply({"role_assignments": await request.app.state.db.read(load),
                  "links": {"self": str(request.url), "next": None, "previous": None}})


async def services(request: Request) -> Response:
    context(request)
    catalog = request.app.state.identity.catalog()
    return reply({"services": [{"id": s["id"], "type": s["type"], "name": s["name"],
                                "enabled": True, "description": s["name"]} for s in catalog]})


async def endpoints(request: Request) -> Response:
    context(request)
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
