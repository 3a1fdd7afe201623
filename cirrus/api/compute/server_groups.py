"""``/os-server-groups``: affinity, anti-affinity and their soft variants."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, json_body, no_content, query_int, reply
from cirrus.compute import server_groups as groups
from cirrus.exception import ValidationError

Version = tuple[int, int]


def view(row: dict[str, Any], member_ids: list[str], version: Version) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row["uuid"], "name": row["name"], "members": member_ids}
    if version >= (2, 64):
        out["policy"] = row["policy"]
        out["rules"] = row["rules"] or {}
    else:
        out["policies"] = [row["policy"]]
        out["metadata"] = {}
    if version >= (2, 13):
        out["project_id"] = row["project_id"]
        out["user_id"] = row["user_id"]
    return out


def _parse(body: Any, version: Version) -> tuple[str, str, dict[str, Any]]:
    data = body.get("server_group") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise ValidationError(field="server_group", reason="'server_group' is a required object")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise ValidationError(field="name", reason="must be a non-empty string of at most 255")
    allowed_soft = version >= (2, 15)
    if version >= (2, 64):
        if set(data) - {"name", "policy", "rules"}:
            raise ValidationError(field="server_group", reason="only name, policy and rules")
        policy, rules = data.get("policy"), data.get("rules", {})
        if not isinstance(rules, dict) or set(rules) - {"max_server_per_host"}:
            raise ValidationError(field="rules", reason="only max_server_per_host is supported")
        if rules and policy != "anti-affinity":
            raise ValidationError(field="rules", reason="rules apply only to anti-affinity")
        mspf = rules.get("max_server_per_host")
        if mspf is not None and (isinstance(mspf, bool) or not isinstance(mspf, int) or mspf < 1):
            raise ValidationError(field="rules/max_server_per_host", reason="must be an integer >= 1")
    else:
        if set(data) - {"name", "policies"}:
            raise ValidationError(field="server_group", reason="only name and policies")
        policies = data.get("policies")
        if not isinstance(policies, list) or len(policies) != 1:
            raise ValidationError(field="policies", reason="exactly one policy is required")
        policy, rules = policies[0], {}
    valid = groups.POLICIES if allowed_soft else groups.POLICIES[:2]
    if policy not in valid:
        raise ValidationError(field="policy", reason=f"{policy!r} is not one of {list(valid)}")
    return name, policy, rules


async def create(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)
    name, policy, rules = _parse(await json_body(request), version)
    row = await request.app.state.db.run(groups.create_group, request.app.state.settings, ctx,
                                         name, policy, rules)
    return reply({"server_group": view(row, [], version)})


async def index(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)
    all_projects = request.query_params.get("all_projects", "").lower() in ("true", "1", "yes")
    project = None if (all_projects and ctx.is_admin) else ctx.project_id

    def load(conn: Any) -> list[dict[str, Any]]:
        rows = groups.list_groups(conn, project)
        mems = groups.members(conn, [r["uuid"] for r in rows])
        return [view(r, mems[r["uuid"]], version) for r in rows]
    items = await request.app.state.db.read(load)
    offset = query_int(request, "offset", 0) or 0
    limit = query_int(request, "limit", None)
    items = items[offset:offset + limit] if limit is not None else items[offset:]
    return reply({"server_groups": items})


async def show(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)

    def load(conn: Any) -> dict[str, Any]:
        row = groups.get_group(conn, ctx, request.path_params["group_id"])
        return view(row, groups.members(conn, [row["uuid"]])[row["uuid"]], version)
    return reply({"server_group": await request.app.state.db.read(load)})


async def delete(request: Request) -> Response:
    await request.app.state.db.run(groups.delete_group, context(request),
                                   request.path_params["group_id"])
    return no_content()


ROUTES = [
    Route("/v2.1/os-server-groups", index, methods=["GET"]),
    Route("/v2.1/os-server-groups", create, methods=["POST"]),
    Route("/v2.1/os-server-groups/{group_id}", show, methods=["GET"]),
    Route("/v2.1/os-server-groups/{group_id}", delete, methods=["DELETE"]),
]
