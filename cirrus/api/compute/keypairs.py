"""``/os-keypairs``: create (generated), import, list, show, delete."""
from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import text
from cirrus.api.compute.views import reply_stored
from cirrus.api.wsgi import context, json_body, query_int, reply
from cirrus.compute import keypairs
from cirrus.compute.scope import require_project
from cirrus.db.base import isotime
from cirrus.exception import Forbidden, ValidationError

# Nova's safe characters of a key pair name; '@' and '.' from 2.92.
NAME_RE = re.compile(r"^[a-zA-Z0-9 _-]{1,255}$")
NAME_RE_292 = re.compile(r"^[a-zA-Z0-9 _.@-]{1,255}$")


def view(row: dict[str, Any], version: tuple[int, int], detail: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": row["name"], "public_key": row["public_key"],
                           "fingerprint": row["fingerprint"]}
    if version >= (2, 2):
        out["type"] = row["type"]
    if detail:
        out.update({"user_id": row["user_id"], "created_at": isotime(row["created_at"]),
                    "deleted": False, "deleted_at": None, "updated_at": None, "id": row["id"]})
    return out


def _user(request: Request, ctx: Any) -> str:
    user = request.query_params.get("user_id")
    if user and api_version(request) >= (2, 10):
        if not ctx.is_admin and user != ctx.user_id:
            raise Forbidden(action="os_compute_api:os-keypairs (another user's)")
        return user
    return ctx.user_id


async def create(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)
    body = await json_body(request)
    data = body.get("keypair") if isinstance(body, dict) else None
    if not isinstance(data, dict) or set(data) - {"name", "public_key", "type", "user_id"}:
        raise ValidationError(field="keypair", reason="'keypair' with name[, public_key, type]")
    name = data.get("name")
    pattern = NAME_RE_292 if version >= (2, 92) else NAME_RE
    if not isinstance(name, str) or not pattern.match(name) or name != name.strip():
        raise ValidationError(field="name", reason=f"{name!r} is not a valid key pair name")
    key_type = data.get("type", "ssh") if version >= (2, 2) else "ssh"
    if key_type not in ("ssh", "x509"):
        raise ValidationError(field="type", reason="must be ssh or x509")
    project_id = require_project(ctx)  # the key pair quota is the project's
    user = ctx.user_id
    if version >= (2, 10) and ctx.is_admin and data.get("user_id"):
        user = text(data["user_id"], "user_id", min_len=1, max_len=64)
    private = None
    if data.get("public_key") is not None:
        # No length in Nova's schema; the body limit bounds it.
        public_key = text(data["public_key"], "public_key", max_len=1 << 20)
        public = keypairs.check_public_key(public_key) if key_type == "ssh" else public_key
    elif version >= (2, 92):
        raise ValidationError(field="public_key", reason="is required from microversion 2.92")
    else:
        private, public = keypairs.generate(key_type)
    row = await request.app.state.db.run(keypairs.create, request.app.state.settings, user,
                                         project_id, name, public, key_type)
    out = view(row, version, detail=False)
    out["user_id"] = row["user_id"]
    if private is not None:
        out["private_key"] = private
    return reply({"keypair": out}, status=201 if version >= (2, 2) else 200)


async def index(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)
    rows = await request.app.state.db.read(keypairs.list_for, _user(request, ctx))
    marker = request.query_params.get("marker")
    if marker and version >= (2, 35):
        names = [r["name"] for r in rows]
        rows = rows[names.index(marker) + 1:] if marker in names else []
    limit = query_int(request, "limit", None)
    if limit is not None and version >= (2, 35):
        rows = rows[:limit]
    return reply_stored({"keypairs": [{"keypair": view(r, version, detail=False)} for r in rows]})


async def show(request: Request) -> Response:
    ctx = context(request)
    row = await request.app.state.db.read(keypairs.get, _user(request, ctx),
                                          request.path_params["name"])
    return reply_stored({"keypair": view(row, api_version(request), detail=True)})


async def delete(request: Request) -> Response:
    ctx = context(request)
    await request.app.state.db.run(keypairs.delete, _user(request, ctx), request.path_params["name"])
    return Response(status_code=202 if api_version(request) < (2, 2) else 204)


ROUTES = [
    Route("/v2.1/os-keypairs", index, methods=["GET"]),
    Route("/v2.1/os-keypairs", create, methods=["POST"]),
    Route("/v2.1/os-keypairs/{name}", show, methods=["GET"]),
    Route("/v2.1/os-keypairs/{name}", delete, methods=["DELETE"]),
]
