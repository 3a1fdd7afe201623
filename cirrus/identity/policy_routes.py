"""Keystone's policy blobs (``/v3/policies``): documents an operator stores
for services to fetch. cirrus keeps and serves them; its own rules are in
:mod:`cirrus.policies`, which a blob never changes. Admins only."""
from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import json_body, no_content, reply
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.identity import models as m
from cirrus.identity import schema
from cirrus.identity.exception import PolicyNotFound
from cirrus.identity.http import base, listing, path_id, query, require_admin

P = m.identity_policies
FIELDS = schema.CATALOG_FIELDS["policy"]


def _get(conn: sa.Connection, ident: str) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(P).where(P.c.id == ident))
    if row is None:
        raise PolicyNotFound(policy_id=ident)
    return row


def _view(request: Request, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "type": row["type"], "blob": row["blob"],
            "links": {"self": f"{base(request)}/policies/{row['id']}"}}


def _ident(request: Request) -> str:
    return path_id(request, "id", PolicyNotFound, "policy_id")


async def list_policies(request: Request) -> Response:
    require_admin(request)
    kind = query(request, "type", schema.NAME_MAX)
    q = sa.select(P).order_by(P.c.created_at, P.c.id)
    if kind is not None:
        q = q.where(P.c.type == kind)
    rows = await request.app.state.db.read(fetch_all, q)
    return reply(listing(request, "policies", [_view(request, r) for r in rows]))


async def create_policy(request: Request) -> Response:
    require_admin(request)
    values = schema.resource_body(await json_body(request), "policy", FIELDS, ("type", "blob"))
    ident = uuid.uuid4().hex

    def create(conn: sa.Connection) -> dict[str, Any]:
        conn.execute(P.insert().values(**values, id=ident, created_at=utcnow()))
        return _get(conn, ident)
    return reply({"policy": _view(request, await request.app.state.db.run(create))}, status=201)


async def show_policy(request: Request) -> Response:
    require_admin(request)
    return reply({"policy": _view(request, await request.app.state.db.read(
        _get, _ident(request)))})


async def update_policy(request: Request) -> Response:
    require_admin(request)
    ident = _ident(request)
    values = schema.resource_body(await json_body(request), "policy", FIELDS)

    def update(conn: sa.Connection) -> dict[str, Any]:
        _get(conn, ident)
        if values:
            conn.execute(P.update().where(P.c.id == ident).values(**values,
                                                                  updated_at=utcnow()))
        return _get(conn, ident)
    return reply({"policy": _view(request, await request.app.state.db.run(update))})


async def delete_policy(request: Request) -> Response:
    require_admin(request)
    ident = _ident(request)

    def delete(conn: sa.Connection) -> None:
        if not conn.execute(P.delete().where(P.c.id == ident)).rowcount:
            raise PolicyNotFound(policy_id=ident)
    await request.app.state.db.run(delete)
    return no_content()


ROUTES = [
    Route("/v3/policies", list_policies, methods=["GET"]),
    Route("/v3/policies", create_policy, methods=["POST"]),
    Route("/v3/policies/{id}", show_policy, methods=["GET"]),
    Route("/v3/policies/{id}", update_policy, methods=["PATCH"]),
    Route("/v3/policies/{id}", delete_policy, methods=["DELETE"]),
]
