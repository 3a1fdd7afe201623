"""The small resources: versions, quota sets, limits, availability zones,
services, extensions and user messages."""
from __future__ import annotations

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.compute.parameters import query_boolean
from cirrus.api.wsgi import context, json_body, reply
from cirrus.exception import Forbidden
from cirrus.volume import messages, quotas
from cirrus.volume.api import schemas, views
from cirrus.volume.exception import QuotaBelowUsage
from cirrus.volume.api.microversion import MAX_VERSION, MIN_VERSION, fmt, require

UPDATED = "2026-11-26T00:00:00Z"


def _v3(request: Request) -> dict:
    base = views.base_url(request)
    return {"id": "v3.0", "status": "CURRENT", "version": fmt(MAX_VERSION),
            "min_version": fmt(MIN_VERSION), "updated": UPDATED,
            "links": [{"rel": "describedby", "type": "text/html",
                       "href": "https://docs.openstack.org/"},
                      {"rel": "self", "href": f"{base}/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.volume+json;version=3"}]}


async def versions(request: Request) -> Response:
    return reply({"versions": [_v3(request)]}, status=300)


async def version_v3(request: Request) -> Response:
    return reply({"versions": [_v3(request)]})


# -- quotas ----------------------------------------------------------------------
def _quota_body(limits: dict[str, int], used: dict[str, int] | None, project: str) -> dict:
    if used is None:
        return {"id": project, **limits}
    return {"id": project, **{k: {"limit": v, "in_use": used.get(k, 0), "reserved": 0,
                                  "allocated": 0} for k, v in limits.items()}}


async def quota_show(request: Request) -> Response:
    target = request.path_params["target_project_id"]
    ctx = context(request)
    if not ctx.is_admin and target != ctx.project_id:
        raise Forbidden(action="volume_extension:quotas:show")
    usage = query_boolean(request.query_params.get("usage", "false"), "usage")
    settings = request.app.state.settings

    def read(conn: sa.Connection) -> dict:
        return _quota_body(quotas.limits(conn, settings, target),
                           quotas.usage(conn, target) if usage else None, target)
    return reply({"quota_set": await request.app.state.db.read(read)})


async def quota_defaults(request: Request) -> Response:
    settings = request.app.state.settings
    target = request.path_params["target_project_id"]

    def read(conn: sa.Connection) -> dict:
        return quotas.class_defaults(conn, settings)
    return reply({"quota_set": {"id": target, **await request.app.state.db.read(read)}})


async def quota_update(request: Request) -> Response:
    target = request.path_params["target_project_id"]
    settings = request.app.state.settings
    body = await json_body(request)

    def write(conn: sa.Connection) -> dict:
        limits = quotas.limits(conn, settings, target)
        values = schemas.quota_update(body, set(limits))
        used = quotas.usage(conn, target)
        for key, limit in values.items():
            if limit != -1 and used.get(key, 0) > limit and key != "per_volume_gigabytes":
                raise QuotaBelowUsage(resource=key, used=used.get(key, 0), limit=limit)
        quotas.set_limits(conn, target, values)
        return {**limits, **values}
    return reply({"quota_set": await request.app.state.db.run(write)})


async def quota_delete(request: Request) -> Response:
    await request.app.state.db.run(quotas.clear_limits, request.path_params["target_project_id"])
    return Response(status_code=200)


async def limits(request: Request) -> Response:
    ctx = context(request)
    settings = request.app.state.settings
    project = ctx.project_id or ""

    def read(conn: sa.Connection) -> dict:
        lim, used = quotas.limits(conn, settings, project), quotas.usage(conn, project)
        return {"maxTotalVolumes": lim["volumes"], "maxTotalSnapshots": lim["snapshots"],
                "maxTotalVolumeGigabytes": lim["gigabytes"], "maxTotalBackups": lim["backups"],
                "maxTotalBackupGigabytes": lim["backup_gigabytes"],
                "totalVolumesUsed": used["volumes"], "totalSnapshotsUsed": used["snapshots"],
                "totalGigabytesUsed": used["gigabytes"], "totalBackupsUsed": 0,
                "totalBackupGigabytesUsed": 0}
    return reply({"limits": {"rate": [], "absolute": await request.app.state.db.read(read)}})


# -- zones, services, extensions, messages -------------------------------------------
async def availability_zones(request: Request) -> Response:
    zone = request.app.state.settings.default_availability_zone
    return reply({"availabilityZoneInfo": [{"zoneName": zone, "zoneState": {"available": True}}]})


EXTENSIONS = (("OS-SCH-HNT", "SchedulerHints"), ("os-admin-actions", "AdminActions"),
              ("os-availability-zone", "AvailabilityZones"), ("os-extended-snapshot-attributes",
                                                              "ExtendedSnapshotAttributes"),
              ("os-quota-sets", "Quotas"), ("os-services", "Services"),
              ("os-types-extra-specs", "TypesExtraSpecs"), ("os-types-manage", "TypesManage"),
              ("os-volume-actions", "VolumeActions"), ("os-vol-host-attr", "VolumeHostAttribute"),
              ("os-vol-image-meta", "VolumeImageMetadata"),
              ("os-vol-tenant-attr", "VolumeTenantAttribute"),
              ("os-volume-type-access", "VolumeTypeAccess"), ("os-hosts", "Hosts"),
              ("os-quota-class-sets", "QuotaClasses"), ("scheduler-stats", "Scheduler_stats"),
              ("capabilities", "Capabilities"))


async def extensions(request: Request) -> Response:
    return reply({"extensions": [{"alias": alias, "name": name, "description": f"{name} support.",
                                  "namespace": "", "updated": UPDATED, "links": []}
                                 for alias, name in EXTENSIONS]})


async def message_list(request: Request) -> Response:
    require(request, (3, 3))
    rows = await request.app.state.db.read(messages.list_messages, context(request))
    return reply({"messages": [views.message(r) for r in rows]})


async def message_show(request: Request) -> Response:
    require(request, (3, 3))
    row = await request.app.state.db.read(messages.get, context(request),
                                          request.path_params["message_id"])
    return reply({"message": views.message(row)})


async def message_delete(request: Request) -> Response:
    require(request, (3, 3))
    await request.app.state.db.run(messages.delete, context(request),
                                   request.path_params["message_id"])
    return Response(status_code=204)

