"""Keystone v3 administration routes: domains, projects, users, groups, roles.

Admins only, but for what Keystone lets any user do for themselves: read their
own user, their token's project and its domain, list their own projects
(``/v3/auth/projects``, ``/v3/users/{self}/projects``) and the domains they
hold a role on (``/v3/auth/domains``). Bodies are checked by
:func:`cirrus.identity.schema.admin_body`; ids in paths and filters that could
name nothing (overlong, NUL, lone surrogates) are 404 and 400 without a query.
The other resources have their own modules, composed in :data:`ROUTES`.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.context import RequestContext
from cirrus.identity import (admin, assignment_routes, catalog_routes, credential_routes,
                             group_routes, policy_routes, project_tags, schema,
                             self_routes, tag_routes)
from cirrus.identity.exception import (DomainNotFound, GroupNotFound, ProjectNotFound,
                                       RoleNotFound, UserNotFound)
from cirrus.identity.http import (flag, lifetime, listing, path_id, query, query_list,
                                  require_admin, rounds)
from cirrus.identity.views import COLLECTION, view

_MISSING = {"project": (ProjectNotFound, "project_id"), "user": (UserNotFound, "user_id"),
            "role": (RoleNotFound, "role_id"), "domain": (DomainNotFound, "domain_id"),
            "group": (GroupNotFound, "group_id")}


def _filters(request: Request, kind: str) -> dict[str, Any]:
    filters: dict[str, Any] = {"name": query(request, "name", schema.NAME_MAX),
                               "domain_id": query(request, "domain_id"),
                               "enabled": query(request, "enabled"),
                               "parent_id": query(request, "parent_id")}
    if filters["enabled"] is not None:
        filters["enabled"] = filters["enabled"].lower() in ("true", "1")
    if kind == "role" and filters["domain_id"] is None:
        filters["domain_id"] = sa.null()  # global roles, unless a domain's are asked for
    return filters


def _with_tags(conn: sa.Connection, kind: str, rows: list[dict[str, Any]]
               ) -> list[dict[str, Any]]:
    if kind != "project" or rows and "parent_id" not in rows[0]:  # not projects, or domains
        return rows
    tags = project_tags.of(conn, [r["id"] for r in rows])
    return [{**r, "tags": tags[r["id"]]} for r in rows]


def _list(kind: str, filters: dict[str, Any], tag_filters: list[list[str]], domains: bool
          ) -> Callable[[sa.Connection], list[dict[str, Any]]]:
    """The rows of a listing; ``domains``: the projects that are domains."""
    def load(conn: sa.Connection) -> list[dict[str, Any]]:
        if domains:
            return admin.list_rows(conn, "domain", {k: v for k, v in filters.items()
                                                    if k in ("name", "enabled")})
        rows = admin.list_rows(conn, kind, filters)
        if kind == "project":
            allowed = project_tags.matching(conn, *tag_filters)
            rows = [r for r in rows if allowed is None or r["id"] in allowed]
        return _with_tags(conn, kind, rows)
    return load


def _save(kind: str, row_id: str | None, values: dict[str, Any], tags: list[str] | None,
          life: float) -> Callable[[sa.Connection], dict[str, Any]]:
    """Create (``row_id`` None) or update the row, and a project's tags. A
    project that is a domain (``is_domain``) is saved as the domain."""
    def save(conn: sa.Connection) -> dict[str, Any]:
        acting = "domain" if values.get("is_domain") else kind if row_id is None \
            else admin.acting_kind(conn, kind, row_id)
        if acting != kind:
            stored = {k: v for k, v in values.items() if k in ("name", "description", "enabled")}
            return admin.create(conn, acting, stored) if row_id is None else \
                admin.update(conn, acting, row_id, stored, lifetime=life)
        values.pop("is_domain", None)
        row = admin.create(conn, kind, values) if row_id is None else \
            admin.update(conn, kind, row_id, values, lifetime=life)
        if tags is not None:
            project_tags.replace(conn, row["id"], tags)
        return _with_tags(conn, kind, [row])[0]
    return save


async def _values(request: Request, kind: str, creating: bool
                  ) -> tuple[dict[str, Any], list[str] | None]:
    body = await json_body(request)
    values = schema.admin_body(body, kind, creating)
    if kind == "project" and body[kind].get("is_domain"):
        values["is_domain"] = True
    tags = None
    if kind == "project" and "tags" in body[kind]:
        tags = schema.FIELDS["project"]["tags"](body[kind]["tags"], "project/tags")
    values = await asyncio.to_thread(admin.with_password_hashed, values, creating,
                                     rounds(request))
    return values, tags


def collection(kind: str) -> tuple[Any, Any]:
    async def index(request: Request) -> Response:
        require_admin(request)
        tag_filters = [query_list(request, k) for k in ("tags", "tags-any", "not-tags",
                                                         "not-tags-any")]
        domains = kind == "project" and flag(request, "is_domain")
        rows = await request.app.state.db.read(_list(kind, _filters(request, kind), tag_filters,
                                                     domains))
        return reply(listing(request, COLLECTION[kind], [view(request, kind, r) for r in rows]))

    async def create(request: Request) -> Response:
        require_admin(request)
        values, tags = await _values(request, kind, True)
        row = await request.app.state.db.run(_save(kind, None, values, tags, lifetime(request)))
        return reply({kind: view(request, kind, row)}, status=201)
    return index, create


def _may_read(ctx: RequestContext, kind: str, row: dict[str, Any]) -> bool:
    """Keystone's self-service reads: one's own user, one's token's project,
    the domain one's token is scoped to (or whose project it is scoped to)."""
    if kind == "user":
        return row["id"] == ctx.user_id
    if kind == "project":
        return row["id"] == ctx.project_id
    return kind == "domain" and row["id"] == ctx.domain_id


def member(kind: str) -> tuple[Any, Any, Any]:
    def ident(request: Request) -> str:
        return path_id(request, "id", *_MISSING[kind])

    async def show(request: Request) -> Response:
        ctx = context(request)

        def load(conn: sa.Connection) -> dict[str, Any]:
            row_id = ident(request)
            row = _with_tags(conn, kind, [admin.get(conn, admin.acting_kind(conn, kind, row_id),
                                                    row_id)])[0]
            if kind == "domain" and ctx.project_id and not ctx.is_admin:
                own = admin.get(conn, "project", ctx.project_id)
                if own["domain_id"] == row["id"]:
                    return row
            if not _may_read(ctx, kind, row):
                policy.enforce(ctx, "identity:admin")
            return row
        if not ctx.is_admin and kind in ("role", "group"):
            policy.enforce(ctx, "identity:admin")
        return reply({kind: view(request, kind, await request.app.state.db.read(load))})

    async def update(request: Request) -> Response:
        require_admin(request)
        row_id = ident(request)
        values, tags = await _values(request, kind, False)
        row = await request.app.state.db.run(_save(kind, row_id, values, tags,
                                                   lifetime(request)))
        return reply({kind: view(request, kind, row)})

    async def delete(request: Request) -> Response:
        require_admin(request)
        row_id = ident(request)

        def delete(conn: sa.Connection) -> None:
            admin.delete(conn, admin.acting_kind(conn, kind, row_id), row_id,
                         lifetime=lifetime(request))
        await request.app.state.db.run(delete)
        return no_content()
    return show, update, delete


async def user_projects(request: Request) -> Response:
    ctx = context(request)
    user_id = path_id(request, "id", UserNotFound, "user_id")
    if user_id != ctx.user_id:
        policy.enforce(ctx, "identity:admin")
    rows = await request.app.state.db.read(admin.projects_of, user_id)
    return reply(listing(request, "projects", [view(request, "project", r) for r in rows]))


def _routes() -> list[Route]:
    routes: list[Route] = []
    for kind in ("project", "user", "role", "domain", "group"):
        index, create = collection(kind)
        show, update, delete = member(kind)
        base = f"/v3/{COLLECTION[kind]}"
        routes += [Route(base, index, methods=["GET"]), Route(base, create, methods=["POST"]),
                   Route(base + "/{id}", show, methods=["GET"]),
                   Route(base + "/{id}", update, methods=["PATCH"]),
                   Route(base + "/{id}", delete, methods=["DELETE"])]
    routes.append(Route("/v3/users/{id}/projects", user_projects, methods=["GET"]))
    return [*routes, *self_routes.ROUTES, *group_routes.ROUTES, *assignment_routes.ROUTES,
            *catalog_routes.ROUTES, *credential_routes.ROUTES, *policy_routes.ROUTES,
            *tag_routes.ROUTES]


ROUTES = _routes()
