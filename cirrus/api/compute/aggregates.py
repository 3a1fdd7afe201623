"""``/os-aggregates`` (admin): host aggregates, their hosts and metadata.

Bodies are checked as Nova's ``schemas/aggregates.py`` checks them; answers
are Nova's (``uuid`` from 2.41; create's answer without hosts and metadata).
"""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.compute.parameters import MAX_INT, METADATA_KEY, bad, encodable
from cirrus.api.wsgi import context, json_body, reply
from cirrus.compute import aggregate_api
from cirrus.compute import aggregates as agg_db
from cirrus.compute.exception import AggregateNotFound
from cirrus.db.base import nova_time

FQDN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")


def view(agg: agg_db.Aggregate, version: tuple[int, int], full: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"availability_zone": agg.availability_zone,
                           "created_at": nova_time(agg.created_at), "deleted": False,
                           "deleted_at": None, "id": agg.id, "name": agg.name,
                           "updated_at": nova_time(agg.updated_at)}
    if full:
        out["hosts"] = list(agg.hosts)
        out["metadata"] = dict(agg.metadata)
    if version >= (2, 41):
        out["uuid"] = agg.uuid
    return out


# -- Nova's parameter types ------------------------------------------------------------
def _printable(value: str) -> bool:
    return all(c.isprintable() or c.isspace() and c not in "\t\n\r\x0b\x0c" for c in value)


def name(value: Any, field: str, *, padded: bool = False, no_colon: bool = False) -> str:
    """Nova's ``name`` / ``az_name`` formats: 1–255 printable characters, no
    leading or trailing whitespace (``padded``: some allowed around a
    non-space), no ``:`` in a zone."""
    if not isinstance(value, str) or not 1 <= len(value) <= 255:
        raise bad(field, "must be a string of 1 to 255 characters")
    encodable(value, field)
    stripped = value.strip()
    if not _printable(value) or not stripped or (not padded and stripped != value) \
            or (no_colon and ":" in value):
        raise bad(field, f"{value[:60]!r} is not a valid name: printable characters"
                         f"{' except :' if no_colon else ''}, not starting or ending with "
                         f"whitespace")
    return value


def _zone(value: Any) -> str | None:
    return None if value is None else name(value, "availability_zone", no_colon=True)


def _object(body: Any, key: str, allowed: set[str], required: set[str]) -> dict[str, Any]:
    data = body.get(key) if isinstance(body, dict) else None
    if not isinstance(body, dict) or set(body) != {key} or not isinstance(data, dict):
        raise bad(key, f"'{key}' is a required object (and the only key)")
    if set(data) - allowed:
        raise bad(key, f"additional properties are not allowed: {sorted(set(data) - allowed)}")
    if required - set(data):
        raise bad(key, f"{sorted(required - set(data))} required")
    return data


def _host(body: Any, key: str) -> str:
    data = _object(body, key, {"host"}, {"host"})
    host = data["host"]
    if not isinstance(host, str) or not 1 <= len(host) <= 255 or not set(host) <= FQDN_CHARS:
        raise bad(f"{key}/host", "must be a host name of 1 to 255 of [a-zA-Z0-9-._]")
    return host


def _metadata(body: Any) -> dict[str, str | None]:
    data = _object(body, "set_metadata", {"metadata"}, {"metadata"})
    metadata = data["metadata"]
    if not isinstance(metadata, dict):
        raise bad("set_metadata/metadata", "must be an object")
    for key, value in metadata.items():
        if not METADATA_KEY.fullmatch(key):
            raise bad("set_metadata/metadata", f"{key[:60]!r} is not a valid metadata key")
        if value is not None and (not isinstance(value, str) or len(value) > 255):
            raise bad(f"set_metadata/metadata/{key}", "must be a string of at most 255 or null")
        if value is not None:
            encodable(value, f"set_metadata/metadata/{key}")
    return dict(metadata)


def _id(request: Request) -> int:
    """Nova's ``validate_integer(id)``: 400 unless an integer; one too large
    for the column names nothing (404)."""
    raw = request.path_params["aggregate_id"]
    try:
        value = int(raw)
    except ValueError:
        raise bad("id", "id must be an integer") from None
    if not -MAX_INT <= value <= MAX_INT:
        raise AggregateNotFound(aggregate_id=raw[:32])
    return value


# -- handlers ------------------------------------------------------------------------
def _admin(request: Request) -> None:
    policy.enforce(context(request), "compute:aggregates")


def _default_zone(request: Request) -> str:
    return request.app.state.settings.default_availability_zone


async def index(request: Request) -> Response:
    _admin(request)
    found = await request.app.state.db.read(agg_db.list_aggregates)
    version = api_version(request)
    return reply({"aggregates": [view(a, version) for a in found]})


async def create(request: Request) -> Response:
    _admin(request)
    data = _object(await json_body(request), "aggregate", {"name", "availability_zone"}, {"name"})
    agg = await request.app.state.db.run(aggregate_api.create_aggregate, name(data["name"], "name"),
                                         _zone(data.get("availability_zone")))
    return reply({"aggregate": view(agg, api_version(request), full=False)})


async def show(request: Request) -> Response:
    _admin(request)
    agg = await request.app.state.db.read(agg_db.get_aggregate, _id(request))
    return reply({"aggregate": view(agg, api_version(request))})


async def update(request: Request) -> Response:
    _admin(request)
    data = _object(await json_body(request), "aggregate", {"name", "availability_zone"}, set())
    if not data:
        raise bad("aggregate", "name or availability_zone is required")
    new_name = name(data["name"], "name", padded=True) if "name" in data else None
    zone = {agg_db.AZ_KEY: _zone(data["availability_zone"])} if "availability_zone" in data else {}
    agg = await request.app.state.db.run(aggregate_api.update_aggregate, _id(request), new_name,
                                         zone, _default_zone(request))
    return reply({"aggregate": view(agg, api_version(request))})


async def delete(request: Request) -> Response:
    _admin(request)
    await request.app.state.db.run(aggregate_api.delete_aggregate, _id(request))
    return Response(status_code=200)


async def action(request: Request) -> Response:
    """``add_host``, ``remove_host`` or ``set_metadata`` (200, the aggregate)."""
    _admin(request)
    body = await json_body(request)
    verb = next(iter(body), None) if isinstance(body, dict) and len(body) == 1 else None
    db, default = request.app.state.db, _default_zone(request)
    if verb == "add_host":
        agg = await db.run(aggregate_api.add_host, _id(request), _host(body, verb), default)
    elif verb == "remove_host":
        agg = await db.run(aggregate_api.remove_host, _id(request), _host(body, verb), default)
    elif verb == "set_metadata":
        agg = await db.run(aggregate_api.set_metadata, _id(request), _metadata(body), default)
    else:
        raise bad("action", "one of add_host, remove_host, set_metadata")
    return reply({"aggregate": view(agg, api_version(request))})


A = "/v2.1/os-aggregates/{aggregate_id}"
ROUTES = [
    Route("/v2.1/os-aggregates", index, methods=["GET"]),
    Route("/v2.1/os-aggregates", create, methods=["POST"]),
    Route(A, show, methods=["GET"]),
    Route(A, update, methods=["PUT"]),
    Route(f"{A}/action", action, methods=["POST"]),
    Route(A, delete, methods=["DELETE"]),
]
