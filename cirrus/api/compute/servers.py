"""``/servers``: create, list, show, delete (thin handlers)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute import views
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.server_schema import parse_create, parse_update
from cirrus.api.wsgi import context, fast_reply, json_body, no_content, query_int, reply
from cirrus.compute import queries
from cirrus.compute.exception import InstanceNotFound
from cirrus.compute.scope import require_project
from cirrus.db.rows import read_here
from cirrus.exception import ValidationError

MAX_LIMIT = 1000
TAGS_SHOWN = (2, 26)  # the server view carries its tags from here
GROUPS_SHOWN = (2, 71)  # and one server's view its server groups
# oslo's strict bool_from_string, as Nova parses the ``locked`` filter (2.73).
TRUE_WORDS = ("1", "t", "true", "on", "y", "yes")
FALSE_WORDS = ("0", "f", "false", "off", "n", "no")


def _base(request: Request) -> str:
    return request.app.state.settings.public_url.rstrip("/")


async def create(request: Request) -> Response:
    ctx = context(request)
    version = api_version(request)
    req, want_reservation = parse_create(await json_body(request), version)
    rows, reservation_id = await request.app.state.compute_api.create(ctx, req)
    if want_reservation:
        return reply({"reservation_id": reservation_id}, status=202)
    row = rows[0]
    base = _base(request)
    server = {"id": row["uuid"], "links": views.links(base, "servers", row["uuid"]),
              "OS-DCF:diskConfig": "AUTO" if row.get("auto_disk_config") else "MANUAL",
              "security_groups": [{"name": n} for n in row["security_groups"]],
              "adminPass": req.admin_password}
    # fast_reply: the same bytes as reply (no floats in this body), encoded in C.
    return fast_reply({"server": server}, status=202,
                      headers={"Location": f"{base}/compute/v2.1/servers/{row['uuid']}"})


def _list_query(request: Request, ctx: Any) -> queries.ListQuery:
    params = request.query_params
    own_project = require_project(ctx)  # no project is no servers, never everyone's
    all_tenants = params.get("all_tenants", params.get("all_projects"))
    see_all = all_tenants is not None and all_tenants.lower() not in ("0", "false", "off", "no")
    if see_all:
        policy.enforce(ctx, "compute:server:all_tenants")
    # Only admins listing all projects may narrow the listing to another project.
    project = (params.get("project_id") or params.get("tenant_id")) if see_all and ctx.is_admin else None
    changes = params.get("changes-since") or params.get("changes_since")
    changes_since = None
    if changes:
        try:
            changes_since = datetime.fromisoformat(changes.replace("Z", "+00:00")).replace(tzinfo=None)
        except ValueError:
            raise ValidationError(field="changes-since", reason=f"{changes!r} is not a date-time") from None
    limit = query_int(request, "limit", None, minimum=0)
    sort_keys = params.getlist("sort_key") or ["created_at"]
    sort_dirs = params.getlist("sort_dir") or ["desc"]
    sort = []
    for i, key in enumerate(sort_keys):
        key = {"name": "display_name", "id": "uuid"}.get(key, key)
        if key not in queries.SORT_KEYS:
            raise ValidationError(field="sort_key", reason=f"{key!r} is not a valid sort key")
        direction = sort_dirs[min(i, len(sort_dirs) - 1)]
        if direction not in ("asc", "desc"):
            raise ValidationError(field="sort_dir", reason=f"{direction!r} is not asc or desc")
        sort.append((key, direction))
    host = params.get("host")
    if host and not ctx.is_admin:
        host = None  # Nova ignores admin-only filters for others
    # ip6: for everyone from 2.5, the tag filters from 2.26, for admins always
    # (Nova's search options).
    version = api_version(request)
    ip6 = params.get("ip6") if ctx.is_admin or version >= (2, 5) else None
    tagged = ctx.is_admin or version >= (2, 26)

    def tag_filter(name: str) -> list[str]:
        return [t for t in params.get(name, "").split(",") if t] if tagged else []
    return queries.ListQuery(
        project_id=(project or None) if see_all else own_project,
        all_projects=see_all and not project,
        name=params.get("name"), status=params.getlist("status"), image=params.get("image"),
        flavor=params.get("flavor"), host=host, changes_since=changes_since,
        deleted=ctx.is_admin and params.get("deleted", "").lower() in ("true", "1"),
        ip=params.get("ip"), ip6=ip6, tags=tag_filter("tags"), tags_any=tag_filter("tags-any"),
        not_tags=tag_filter("not-tags"), not_tags_any=tag_filter("not-tags-any"),
        reservation_id=params.get("reservation_id"),
        locked=_locked_filter(request),
        limit=min(limit if limit is not None else MAX_LIMIT, MAX_LIMIT),
        marker=params.get("marker"), sort=sort)


def _locked_filter(request: Request) -> bool | None:
    """The ``locked`` filter, from 2.73 (ignored before, as Nova strips it)."""
    value = request.query_params.get("locked")
    if value is None or api_version(request) < (2, 73):
        return None
    word = value.strip().lower()
    if word not in TRUE_WORDS + FALSE_WORDS:
        raise ValidationError(field="locked", reason=(
            f"Unrecognized value '{value}', acceptable values are: "
            + ", ".join(f"'{w}'" for w in sorted(TRUE_WORDS + FALSE_WORDS))))
    return word in TRUE_WORDS


def _next_link(request: Request, rows: list[dict[str, Any]], q: queries.ListQuery,
               kind: str) -> list[dict[str, str]]:
    if q.limit is None or len(rows) < q.limit or not rows:
        return []
    params = dict(request.query_params)
    params["marker"] = rows[-1]["uuid"]
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return [{"rel": "next", "href": f"{_base(request)}/compute/v2.1/{kind}?{query}"}]


async def index(request: Request) -> Response:
    ctx = context(request)
    q = _list_query(request, ctx)
    rows = await request.app.state.db.read(queries.list_instances, q,
                                           columns=queries.BASIC_COLUMNS)
    base = _base(request)
    body: dict[str, Any] = {"servers": [views.basic(base, r) for r in rows]}
    links = _next_link(request, rows, q, "servers")
    if links:
        body["servers_links"] = links
    return views.reply_stored(body)


async def detail(request: Request) -> Response:
    ctx = context(request)
    q = _list_query(request, ctx)

    version = api_version(request)

    def load(conn: Any) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        rows = queries.list_instances(conn, q, network_info=True)
        if version >= TAGS_SHOWN:
            queries.with_tags(conn, rows)
        queries.with_volumes(conn, rows)
        return rows, queries.latest_faults(conn, rows)
    rows, faults = await request.app.state.db.read(load)
    view = views.DetailView(_base(request), version, is_admin=ctx.is_admin)
    body: dict[str, Any] = {"servers": [view(r, r["network_info"], faults.get(r["uuid"]))
                                        for r in rows]}
    links = _next_link(request, rows, q, "servers/detail")
    if links:
        body["servers_links"] = links
    return views.reply_stored(body)


@dataclass
class _OneServer:
    """What the view of one server needs, read in one transaction."""

    row: dict[str, Any]
    fault: dict[str, Any] | None
    server_groups: list[str]


def _load_one(conn: Any, uuid: str, version: tuple[int, int]) -> _OneServer:
    if conn.dialect.name == "postgresql":
        # One statement (a round trip) for the row, its tags, volumes and
        # groups; the rare fault still its own.
        row = queries.get_for_view_in_one(conn, uuid, groups=version >= GROUPS_SHOWN)
        groups = row.pop("server_groups", [])
        if version < TAGS_SHOWN:
            del row["tags"]
        return _OneServer(row, queries.latest_fault(conn, row), groups)
    row = queries.get_for_view(conn, uuid)
    if version >= TAGS_SHOWN:
        queries.with_tags(conn, [row])
    queries.with_volumes(conn, [row])
    groups = queries.server_groups_of(conn, uuid) if version >= GROUPS_SHOWN else []
    return _OneServer(row, queries.latest_fault(conn, row), groups)


def _one_view(request: Request, ctx: Any, one: _OneServer) -> dict[str, Any]:
    view = views.DetailView(_base(request), api_version(request), is_admin=ctx.is_admin)
    return view(one.row, one.row["network_info"], one.fault)


async def show(request: Request) -> Response:
    ctx = context(request)
    uuid = request.path_params["server_id"]
    version = api_version(request)
    # One read for the server, its info cache, tags and fault, on SQLite in
    # the loop's own thread (cheaper than the hop to a DB thread).
    one = await read_here(request.app.state.db, _load_one, uuid, version)
    # ComputeAPI.get's rule: a server the caller may not see does not exist.
    if not policy.check(ctx, "compute:server:get", one.row):
        raise InstanceNotFound(instance_id=uuid)
    server = _one_view(request, ctx, one)
    if version >= GROUPS_SHOWN:
        server["server_groups"] = one.server_groups
    return views.reply_stored({"server": server})


async def update(request: Request) -> Response:
    ctx = context(request)
    uuid = request.path_params["server_id"]
    version = api_version(request)
    updates = parse_update(await json_body(request), version)
    await request.app.state.compute_api.update_instance(ctx, uuid, updates)
    one = await request.app.state.db.read(_load_one, uuid, version)
    server = views.update_view(_one_view(request, ctx, one), version, one.server_groups)
    return views.reply_stored({"server": server})


async def delete(request: Request) -> Response:
    await request.app.state.compute_api.delete(context(request), request.path_params["server_id"])
    return no_content()


ROUTES = [
    Route("/v2.1/servers", create, methods=["POST"]),
    Route("/v2.1/servers", index, methods=["GET"]),
    Route("/v2.1/servers/detail", detail, methods=["GET"]),
    Route("/v2.1/servers/{server_id}", show, methods=["GET"]),
    Route("/v2.1/servers/{server_id}", update, methods=["PUT"]),
    Route("/v2.1/servers/{server_id}", delete, methods=["DELETE"]),
]
