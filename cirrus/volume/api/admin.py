"""The admin's views of the volume service: ``os-services`` (list and
enable/disable/freeze/thaw), ``os-hosts``, ``scheduler-stats/get_pools``,
``capabilities/{host}`` and ``os-quota-class-sets``."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import bad, query_boolean, text
from cirrus.api.wsgi import json_body, reply
from cirrus.compute.hosts import is_up
from cirrus.db.base import isotime, utcnow
from cirrus.db.engine import fetch_all
from cirrus.exception import NotFound
from cirrus.service_models import services
from cirrus.volume import quotas
from cirrus.volume.api import schemas
from cirrus.volume.api.common import bs
from cirrus.volume.models import volumes, snapshots

Row = dict[str, Any]


class HostNotFound(NotFound):
    msg_fmt = "Host %(host)s could not be found."


class ServiceNotFound(NotFound):
    msg_fmt = "Service %(service)s could not be found."


def _host_of(host: str) -> str:
    return host.partition("@")[0]


async def _services(request: Request) -> list[Row]:
    return await request.app.state.db.read(fetch_all, sa.select(services).where(
        services.c.binary.like("cinder-%")).order_by(services.c.id))


def _service_view(request: Request, row: Row) -> Row:
    settings = request.app.state.settings
    item = {"binary": row["binary"], "host": row["host"], "zone": row["availability_zone"],
            "status": "disabled" if row["disabled"] else "enabled",
            "state": "up" if is_up(row, settings.service_down_time) else "down",
            "updated_at": isotime(row["updated_at"] or row["last_seen_up"] or row["created_at"]),
            "disabled_reason": row["disabled_reason"]}
    if row["binary"] == "cinder-volume":
        item.update({"frozen": False, "replication_status": "disabled",
                     "active_backend_id": None})
    return item


async def service_list(request: Request) -> Response:
    """Filters: ``host`` (a backend's ``host@backend`` matches its host too), ``binary``."""
    host, binary = request.query_params.get("host"), request.query_params.get("binary")
    rows = [r for r in await _services(request)
            if host in (None, r["host"], _host_of(r["host"])) and binary in (None, r["binary"])]
    return reply({"services": [_service_view(request, r) for r in rows]})


async def service_update(request: Request) -> Response:
    """``PUT os-services/{enable|disable|disable-log-reason|freeze|thaw}``."""
    action = request.path_params["action"]
    body = await json_body(request)
    if not isinstance(body, dict):
        raise bad("body", "must be an object")
    host = text(body.get("host"), "host", min_len=1) if "host" in body else None
    rows = [r for r in await _services(request) if host in (r["host"], _host_of(r["host"]))]
    if action in ("freeze", "thaw"):
        if host is None or not rows:
            raise bad("host", f"Invalid host: {str(host)[:64]}")
        return reply({})
    if action not in ("enable", "disable", "disable-log-reason"):
        raise NotFound()
    binary = body.get("binary")
    rows = [r for r in rows if r["binary"] == binary]
    if host is None or not rows:
        raise ServiceNotFound(service=f"{str(host)[:64]}/{str(binary)[:64]}")
    reason = None
    if action == "disable-log-reason":
        reason = body.get("disabled_reason")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 255:
            raise bad("disabled_reason", "Disabled reason contains invalid characters or "
                                         "is too long")
    disabled = action != "enable"

    def write(conn: sa.Connection) -> None:
        conn.execute(services.update().where(services.c.id == rows[0]["id"]).values(
            disabled=disabled, disabled_reason=reason, updated_at=utcnow()))
    await request.app.state.db.run(write)
    out = {"host": rows[0]["host"], "binary": rows[0]["binary"], "disabled": disabled,
           "status": "disabled" if disabled else "enabled"}
    if reason:
        out["disabled_reason"] = reason
    return reply(out)


async def host_list(request: Request) -> Response:
    out = []
    for row in await _services(request):
        view = _service_view(request, row)
        out.append({"service-status": "available" if view["state"] == "up" else "unavailable",
                    "service": row["binary"], "zone": row["availability_zone"],
                    "service-state": view["status"], "host_name": row["host"],
                    "last-update": view["updated_at"]})
    return reply({"hosts": out})


async def host_show(request: Request) -> Response:
    host = request.path_params["host_name"]
    if host not in {r["host"] for r in await _services(request)}:
        raise HostNotFound(host=host[:255])

    def read(conn: sa.Connection) -> list[Row]:
        vols = conn.execute(sa.select(volumes.c.project_id, sa.func.count(), sa.func.sum(volumes.c.size))
                            .where(volumes.c.deleted.is_(False)).group_by(volumes.c.project_id)).all()
        snaps = dict((p, (c, s)) for p, c, s in conn.execute(
            sa.select(snapshots.c.project_id, sa.func.count(), sa.func.sum(snapshots.c.size))
            .where(snapshots.c.deleted.is_(False)).group_by(snapshots.c.project_id)))
        return [{"resource": {"project": p, "host": host, "volume_count": str(c),
                              "total_volume_gb": str(s or 0),
                              "snapshot_count": str(snaps.get(p, (0, 0))[0]),
                              "total_snapshot_gb": str(snaps.get(p, (0, 0))[1] or 0)}}
                for p, c, s in vols]
    resources = await request.app.state.db.read(read)
    total = {"resource": {"project": "(total)", "host": host,
                          "volume_count": str(sum(int(r["resource"]["volume_count"]) for r in resources)),
                          "total_volume_gb": str(sum(int(r["resource"]["total_volume_gb"]) for r in resources)),
                          "snapshot_count": str(sum(int(r["resource"]["snapshot_count"]) for r in resources)),
                          "total_snapshot_gb": str(sum(int(r["resource"]["total_snapshot_gb"]) for r in resources))}}
    return reply({"host": [total, *resources]})


async def pools(request: Request) -> Response:
    caps = bs(request).storage.driver.capabilities
    rows = [r for r in await _services(request) if r["binary"] == "cinder-volume"]
    detail = query_boolean(request.query_params.get("detail", "false"), "detail")
    out = []
    for row in rows:
        pool: Row = {"name": f"{row['host']}#{caps.volume_backend_name}"}
        if detail:
            pool["capabilities"] = {
                "volume_backend_name": caps.volume_backend_name,
                "storage_protocol": caps.storage_protocol, "vendor_name": caps.vendor_name,
                "driver_version": "1.0", "QoS_support": False, "reserved_percentage": 0,
                "total_capacity_gb": "infinite", "free_capacity_gb": "infinite",
                "timestamp": isotime(row["last_seen_up"])}
        out.append(pool)
    return reply({"pools": out})


async def capabilities(request: Request) -> Response:
    host = request.path_params["host"].partition("#")[0]
    if host not in {r["host"] for r in await _services(request) if r["binary"] == "cinder-volume"}:
        raise HostNotFound(host=host[:255])
    caps = bs(request).storage.driver.capabilities
    return reply({"namespace": f"OS::Storage::Capabilities::{host}", "vendor_name": caps.vendor_name,
                  "volume_backend_name": caps.volume_backend_name, "pool_name": None,
                  "driver_version": "1.0", "storage_protocol": caps.storage_protocol,
                  "display_name": None, "description": None, "visibility": None,
                  "replication_targets": [], "properties": {}})


async def quota_class_show(request: Request) -> Response:
    name = request.path_params["class_name"]
    settings = request.app.state.settings

    def read(conn: sa.Connection) -> Row:
        return quotas.class_defaults(conn, settings)
    return reply({"quota_class_set": {"id": name, **await request.app.state.db.read(read)}})


async def quota_class_update(request: Request) -> Response:
    name = text(request.path_params["class_name"], "class_name", min_len=1, max_len=255)
    settings = request.app.state.settings
    body = await json_body(request)
    if not isinstance(body, dict) or not isinstance(body.get("quota_class_set"), dict):
        raise bad("quota_class_set", "'quota_class_set' is a required property")

    def write(conn: sa.Connection) -> Row:
        current = quotas.class_defaults(conn, settings)
        values = schemas.quota_update({"quota_set": body["quota_class_set"]}, set(current))
        quotas.set_class_limits(conn, name, values)
        return {**current, **values}
    return reply({"quota_class_set": await request.app.state.db.run(write)})
