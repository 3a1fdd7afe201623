"""Migrations: ``GET /os-migrations`` (every move, admins) and
``/servers/{id}/migrations`` (a server's live migrations in progress, 2.23;
abort 2.24; ``force_complete`` 2.22), in Nova's shapes per microversion."""
from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, json_body, query_int, reply
from cirrus.compute.migrations import LIVE_IN_PROGRESS, Migration, MigrationFilters
from cirrus.exception import NotFound, ValidationError

Version = tuple[int, int]
M = "/v2.1/servers/{server_id}/migrations"
_FIELDS = ("id", "source_compute", "dest_compute", "source_node", "dest_node", "dest_host",
           "old_instance_type_id", "new_instance_type_id", "instance_uuid", "status")
_SERVER_FIELDS = tuple(k for k in _FIELDS if k not in (
    "instance_uuid", "old_instance_type_id", "new_instance_type_id"))
_BYTES = ("memory_total_bytes", "memory_processed_bytes", "memory_remaining_bytes",
          "disk_total_bytes", "disk_processed_bytes", "disk_remaining_bytes")
# Filters of 2.1–2.58 (others are ignored there); 2.59 on refuses unknown ones.
_FILTERS = {"host", "status", "instance_uuid", "migration_type", "source_compute", "hidden"}


class VersionNotFound(NotFound):
    msg_fmt = "The resource could not be found."


def _time(value: dt.datetime | None) -> str | None:
    """Nova's migration times: ISO 8601 without a zone, with microseconds."""
    return None if value is None else value.isoformat(timespec="microseconds")


def _base(request: Request) -> str:
    return str(request.app.state.settings.public_url or request.base_url).rstrip("/")


def migration_view(request: Request, row: Migration, v: Version) -> dict[str, Any]:
    """One entry of ``GET /os-migrations``."""
    out: dict[str, Any] = {k: row[k] for k in _FIELDS}  # type: ignore[literal-required]
    out["created_at"], out["updated_at"] = _time(row["created_at"]), _time(row["updated_at"])
    if v >= (2, 23):
        out["migration_type"] = row["migration_type"]
        if row["migration_type"] == "live-migration" and \
                row["status"] in [s.value for s in LIVE_IN_PROGRESS]:
            path = f"servers/{row['instance_uuid']}/migrations/{row['id']}"
            out["links"] = [{"rel": "self", "href": f"{_base(request)}/compute/v2.1/{path}"},
                            {"rel": "bookmark", "href": f"{_base(request)}/compute/{path}"}]
    if v >= (2, 59):
        out["uuid"] = row["uuid"]
    if v >= (2, 80):
        out["user_id"], out["project_id"] = row["user_id"], row["project_id"]
    return out


def server_migration_view(row: Migration, v: Version) -> dict[str, Any]:
    """One live migration of ``/servers/{id}/migrations``."""
    out: dict[str, Any] = {k: row[k] for k in _SERVER_FIELDS}  # type: ignore[literal-required]
    out["server_uuid"] = row["instance_uuid"]
    out.update(dict.fromkeys(_BYTES))  # the drivers report no progress (yet)
    out["created_at"], out["updated_at"] = _time(row["created_at"]), _time(row["updated_at"])
    if v >= (2, 59):
        out["uuid"] = row["uuid"]
    if v >= (2, 80):
        out["user_id"], out["project_id"] = row["user_id"], row["project_id"]
    return out


def _date(request: Request, name: str) -> dt.datetime | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(field=name, reason=f"{raw!r} is not a date-time") from None
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _filters(request: Request, v: Version) -> MigrationFilters:
    params = request.query_params
    allowed = set(_FILTERS)
    if v >= (2, 59):
        allowed |= {"limit", "marker", "changes-since"}
    if v >= (2, 66):
        allowed.add("changes-before")
    if v >= (2, 80):
        allowed |= {"user_id", "project_id"}
    unknown = set(params) - allowed
    if v >= (2, 59) and unknown:
        raise ValidationError(field=sorted(unknown)[0], reason="is not a valid query parameter")
    f = MigrationFilters(host=params.get("host"), status=params.get("status"),
                         instance_uuid=params.get("instance_uuid"),
                         migration_type=params.get("migration_type"),
                         source_compute=params.get("source_compute"))
    if v >= (2, 59):
        f.limit = query_int(request, "limit", None)
        f.marker = params.get("marker")
        f.changes_since = _date(request, "changes-since")
    if v >= (2, 66):
        f.changes_before = _date(request, "changes-before")
        if f.changes_since and f.changes_before and f.changes_before < f.changes_since:
            raise ValidationError(field="changes-before", reason="The value of changes-since "
                                  "must be less than or equal to changes-before.")
    if v >= (2, 80):
        f.user_id, f.project_id = params.get("user_id"), params.get("project_id")
    return f


async def index(request: Request) -> Response:
    v = api_version(request)
    f = _filters(request, v)
    rows = await request.app.state.compute_api.moves.list_migrations(f)
    body: dict[str, Any] = {"migrations": [migration_view(request, r, v) for r in rows]}
    if v >= (2, 59) and f.limit is not None and rows and len(rows) == f.limit:
        body["migrations_links"] = [{"rel": "next", "href": (
            f"{_base(request)}/compute/v2.1/os-migrations?limit={f.limit}"
            f"&marker={rows[-1]['uuid']}")}]
    return reply(body)


def _at_least(request: Request, version: Version) -> Version:
    v = api_version(request)
    if v < version:
        raise VersionNotFound()
    return v


def _migration_id(request: Request) -> int:
    raw = request.path_params["migration_id"]
    if not raw.isdigit() or len(raw) > 10:
        raise NotFound()
    return int(raw)


async def server_index(request: Request) -> Response:
    v = _at_least(request, (2, 23))
    rows = await request.app.state.compute_api.moves.live_migrations(
        context(request), request.path_params["server_id"])
    return reply({"migrations": [server_migration_view(r, v) for r in rows]})


async def server_show(request: Request) -> Response:
    v = _at_least(request, (2, 23))
    row = await request.app.state.compute_api.moves.live_migration_in_progress(
        context(request), request.path_params["server_id"], _migration_id(request))
    return reply({"migration": server_migration_view(row, v)})


async def server_delete(request: Request) -> Response:
    v = _at_least(request, (2, 24))
    await request.app.state.compute_api.moves.live_migrate_abort(
        context(request), request.path_params["server_id"], _migration_id(request), v)
    return Response(status_code=202)


async def server_action(request: Request) -> Response:
    _at_least(request, (2, 22))
    body = await json_body(request)
    if not isinstance(body, dict) or set(body) != {"force_complete"} or \
            body["force_complete"] is not None:
        raise ValidationError(field="force_complete",
                              reason="the body must be {\"force_complete\": null}")
    await request.app.state.compute_api.moves.live_migrate_force_complete(
        context(request), request.path_params["server_id"], _migration_id(request))
    return Response(status_code=202)


ROUTES = [
    Route("/v2.1/os-migrations", index, methods=["GET"]),
    Route(M, server_index, methods=["GET"]),
    Route(f"{M}/{{migration_id}}", server_show, methods=["GET"]),
    Route(f"{M}/{{migration_id}}", server_delete, methods=["DELETE"]),
    Route(f"{M}/{{migration_id}}/action", server_action, methods=["POST"]),
]
