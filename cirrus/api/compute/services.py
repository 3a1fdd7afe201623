"""``os-services`` (admin): list, enable/disable (so the scheduler skips a host), force down."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus import policy
from cirrus.api.compute.microversion import api_version
from cirrus.api.wsgi import context, json_body, no_content, reply
from cirrus.compute import aggregate_api, hosts
from cirrus.db.base import isotime
from cirrus.exception import ValidationError


def _text(body: dict[str, Any], key: str, required: bool = False) -> str | None:
    """``body[key]`` as Nova's schema takes it: a string of 1–255 characters
    (or absent, unless ``required``); 400 otherwise."""
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= 255:
        raise ValidationError(field=key, reason="must be a string of 1 to 255 characters")
    return value


def view(row: dict[str, Any], version: tuple[int, int], down_time: float) -> dict[str, Any]:
    out = {"id": row["uuid"] if version >= (2, 53) else row["id"],
           "binary": hosts.PUBLIC_BINARY.get(row["binary"], row["binary"]), "host": row["host"],
           "zone": hosts.zone_of(row),
           "status": "disabled" if row["disabled"] else "enabled",
           "state": "up" if hosts.is_up(row, down_time) else "down",
           "updated_at": isotime(row["updated_at"] or row["last_seen_up"]),
           "disabled_reason": row["disabled_reason"]}
    if version >= (2, 11):
        out["forced_down"] = bool(row["forced_down"])
    return out


async def index(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:services")
    rows = await request.app.state.db.read(hosts.list_services, request.query_params.get("host"),
                                           request.query_params.get("binary"))
    down = request.app.state.settings.service_down_time
    version = api_version(request)
    return reply({"services": [view(r, version, down) for r in rows]})


async def update(request: Request) -> Response:
    """2.53+: ``PUT /os-services/{uuid}`` with status / disabled_reason / forced_down."""
    ctx = context(request)
    policy.enforce(ctx, "compute:services")
    body = await json_body(request)
    if not isinstance(body, dict) or not body or set(body) - {"status", "disabled_reason", "forced_down"}:
        raise ValidationError(field="body", reason="only status, disabled_reason, forced_down")
    values: dict[str, Any] = {}
    if "status" in body:
        if body["status"] not in ("enabled", "disabled"):
            raise ValidationError(field="status", reason="must be enabled or disabled")
        values["disabled"] = body["status"] == "disabled"
        values["disabled_reason"] = _text(body, "disabled_reason") if values["disabled"] else None
    if "disabled_reason" in body and values.get("disabled") is not True:
        # Nova: a reason only with the status it explains
        raise ValidationError(field="disabled_reason", reason="only with status disabled")
    if "forced_down" in body:
        if not isinstance(body["forced_down"], bool):
            raise ValidationError(field="forced_down", reason="must be a boolean")
        values["forced_down"] = body["forced_down"]
    db = request.app.state.db
    row = await db.read(hosts.get_service, request.path_params["service_id"])
    await db.run(hosts.update_service, row["id"], values)
    row = await db.read(hosts.get_service, request.path_params["service_id"])
    return reply({"service": view(row, api_version(request), request.app.state.settings.service_down_time)})


async def legacy_action(request: Request) -> Response:
    """< 2.53: ``PUT /os-services/enable|disable|disable-log-reason|force-down`` with host+binary."""
    ctx = context(request)
    policy.enforce(ctx, "compute:services")
    body = await json_body(request)
    action = request.path_params["action"]
    if not isinstance(body, dict):
        raise ValidationError(field="body", reason="must be an object")
    host, binary = _text(body, "host", required=True), _text(body, "binary")
    reason = _text(body, "disabled_reason")
    if "forced_down" in body and not isinstance(body["forced_down"], bool):
        raise ValidationError(field="forced_down", reason="must be a boolean")
    db = request.app.state.db
    rows = await db.read(hosts.list_services, host, binary)
    if not rows:
        raise hosts.ServiceNotFound(service_id=body["host"])
    by_action: dict[str, dict[str, Any]] = {
        "enable": {"disabled": False, "disabled_reason": None},
        "disable": {"disabled": True},
        "disable-log-reason": {"disabled": True, "disabled_reason": reason},
        "force-down": {"forced_down": bool(body.get("forced_down"))}}
    values = by_action.get(action, {})
    if not values:
        raise ValidationError(field="action", reason=f"unknown action {action}")
    for row in rows:
        await db.run(hosts.update_service, row["id"], values)
    out = {"host": body["host"], "binary": body.get("binary")}
    if "disabled" in values:
        out["status"] = "disabled" if values["disabled"] else "enabled"
    if values.get("disabled_reason"):
        out["disabled_reason"] = values["disabled_reason"]
    return reply({"service": out})


async def delete(request: Request) -> Response:
    ctx = context(request)
    policy.enforce(ctx, "compute:services")
    from cirrus.service_models import services as table

    db = request.app.state.db
    row = await db.read(hosts.get_service, request.path_params["service_id"])

    def remove(conn: Any) -> None:
        conn.execute(table.delete().where(table.c.id == row["id"]))
        if row["binary"] == "cirrus-compute":  # its host leaves its aggregates (Nova)
            aggregate_api.forget_host(conn, row["host"])
    await db.run(remove)
    return no_content()


LEGACY_ACTIONS = {"enable", "disable", "disable-log-reason", "force-down"}


async def put(request: Request) -> Response:
    if request.path_params["service_id"] in LEGACY_ACTIONS:
        request.path_params["action"] = request.path_params["service_id"]
        return await legacy_action(request)
    return await update(request)


ROUTES = [
    Route("/v2.1/os-services", index, methods=["GET"]),
    Route("/v2.1/os-services/{service_id}", put, methods=["PUT"]),
    Route("/v2.1/os-services/{service_id}", delete, methods=["DELETE"]),
]
