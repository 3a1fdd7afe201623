"""``/os-server-groups``: affinity, anti-affinity and their soft variants."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import integer, text
from cirrus.api.compute.views import reply_stored
from cirrus.api.wsgi import context, json_body, no_content, query_int, reply
from cirrus.compute import server_groups as groups
from cirrus.compute.scope import require_project
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
    """``POST /os-server-groups`` body (Nova's server_groups ``create`` …
    ``create_v264`` schemas) → (name, policy, rules)."""
    data = body.get("server_group") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise ValidationError(field="server_group", reason="'server_group' is a required object")
    name = text(data.get("name"), "name", min_len=1, max_len=255)
    if not name.strip():
        raise ValidationError(field="name", reason="must not be empty or only spaces")
    if version >= (2, 64):
        kind, rules = _policy_and_rules(data)
    else:
        if set(data) - {"name", "policies"}:
            raise ValidationError(field="server_group", reason="only name and policies")
        policies = data.get("policies")
        if not isinstance(policies, list) or len(policies) != 1:
            raise ValidationError(field="policies", reason="exactly one policy is required")
        kind, rules = policies[0], {}
    valid = groups.POLICIES if version >= (2, 15) else groups.POLICIES[:2]
    if not isinstance(kind, str) or kind not in valid:
        raise ValidationError(field="policy", reason=f"must be one of {list(valid)}")
    return name, kind, rules


def _policy_and_rules(data: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """2.64's ``policy`` and ``rules`` (only max_server_per_host, only for
    anti-affinity)."""
    if set(data) - {"name", "policy", "rules"}:
        raise ValidationError(field="server_group", reason="only name, policy and rules")
    kind, rules = data.get("policy"), data.get("rules", {})
    if not isinstance(rules, dict) or set(rules) - {"max_server_per_host"}:
        raise ValidationError(field="rules", reason="only max_server_per_host is supported")
    if rules and kind != "anti-affinity":
        raise ValidationError(field="rules", reason="rules apply only to anti-affinity")
    if "max_server_per_host" in rules:
        rules = {"max_server_per_host": integer(rules["max_server_per_host"],
                                                "rules/max_server_per_host", minimum=1)}
    return kind, rules


async def create(request: Request) -> Response:
    ctx = context(request)
    require_project(ctx)
    version = api_version(request)
    name, group_policy, rules = _parse(await json_body(request), version)
    row = await request.app.state.db.run(groups.create_group, request.app.state.settings, ctx,
                                         name, group_policy, rules)
    return reply({"server_group": view(row, [], version)})


async def index(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)
    project = require_project(ctx)  # no project is no groups, never everyone's
    all_projects = ctx.is_admin and \
        request.query_params.get("all_projects", "").lower() in ("true", "1", "yes")
    offset = query_int(request, "offset", 0) or 0
    limit = query_int(request, "limit", None)

    def load(conn: Any) -> list[dict[str, Any]]:
        rows = groups.list_groups(conn, project, all_projects=all_projects)
        mems = groups.members(conn, [r["uuid"] for r in rows])
        return [view(r, mems[r["uuid"]], version) for r in rows]
    items = await request.app.state.db.read(load)
    items = items[offset:offset + limit] if limit is not None else items[offset:]
    return reply_stored({"server_groups": items})


async def show(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)

    def load(conn: Any) -> dict[str, Any]:
        row = groups.get_group(conn, ctx, request.path_params["group_id"])
        return view(row, groups.members(conn, [row["uuid"]])[row["uuid"]], version)
    return reply_stored({"server_group": await request.app.state.db.read(load)})


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
