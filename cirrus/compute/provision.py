"""The create's records written (Nova's ``compute/api.py`` ``_provision_instances``).

One transaction per request: the instances (built by ``compute/records.py``),
their info caches, block device mappings, tags, group memberships and
``create`` actions, with the project's quota checked before the inserts and
rechecked after them (the usage row locked last, until COMMIT). On PostgreSQL a
create of a fixed count is sent in one round trip (docs/performance.md,
"Distributed (issue 22)").
"""
from __future__ import annotations

import uuid as uuidlib
from typing import Any

import sqlalchemy as sa

from cirrus.compute import instance as inst
from cirrus.compute import instance_actions, quotas, records, tags
from cirrus.compute import exception as exc
from cirrus.compute.models import (block_device_mappings, instance_group_members,
                                   instance_info_caches, instances)
from cirrus.compute.records import CreateRequest
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.prepared import Cursor, Prepared, pipelined


# Every create writes these records: statements built once (cirrus/db/prepared.py).
INSTANCE_COLUMNS = (
    "uuid", "project_id", "user_id", "display_name", "display_description", "hostname",
    "image_ref", "flavor", "vcpus", "memory_mb", "root_gb", "ephemeral_gb", "vm_state",
    "task_state", "power_state", "availability_zone", "key_name", "key_data", "user_data",
    "config_drive", "metadata", "system_metadata", "security_groups", "requested_networks",
    "access_ip_v4", "access_ip_v6", "auto_disk_config", "reservation_id", "launch_index",
    "locked", "progress", "deleted", "created_at")
BDM_COLUMNS = ("instance_uuid", "source_type", "destination_type", "image_id", "boot_index",
               "device_name", "volume_size", "delete_on_termination", "created_at",
               "uuid", "volume_id", "snapshot_id", "guest_format", "disk_bus", "device_type",
               "volume_type", "tag")


def _insert_of(table: sa.Table, columns: tuple[str, ...]) -> sa.Insert:
    """An INSERT of ``columns`` bound to parameters ``v_<column>``."""
    return table.insert().values({c: sa.bindparam(f"v_{c}") for c in columns})


def _params(row: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    return {f"v_{c}": row[c] for c in columns}


# RETURNING the id instead of reading the ids back afterwards.
_INSERT_INSTANCE = Prepared(_insert_of(instances, INSTANCE_COLUMNS).returning(instances.c.id))
_INSERT_INFO_CACHE = Prepared(_insert_of(instance_info_caches,
                                         ("instance_uuid", "network_info", "created_at")))
_INSERT_BDM = Prepared(_insert_of(block_device_mappings, BDM_COLUMNS))
_INSERT_GROUP_MEMBER = Prepared(_insert_of(instance_group_members,
                                           ("group_uuid", "instance_uuid")))
_GROUP_MEMBERS_LIVE = Prepared(sa.select(sa.func.count()).select_from(instance_group_members).join(
    instances, instances.c.uuid == instance_group_members.c.instance_uuid).where(
    instance_group_members.c.group_uuid == sa.bindparam("w_group"),
    instances.c.deleted.is_(False)))


def provision_instances(conn: sa.Connection, settings: Settings, ctx: RequestContext,
                        req: CreateRequest,
                         flavor: dict[str, Any], image: dict[str, Any] | None, az: str,
                         key_data: str | None, group: dict[str, Any] | None,
                         reservation_id: str, max_count: int,
                         prepared: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """All records of the request in one transaction, quota checked before
    and after the insert. ``prepared``: the records of ``max_count``
    servers, built beforehand (names depend on how many fit, so they are
    built again if fewer do)."""
    assert ctx.project_id is not None and ctx.user_id is not None
    if (prepared is not None and len(prepared) == max_count == req.min_count
            and group is None and not req.tags and conn.dialect.name == "postgresql"):
        return _provision_in_one_flight(conn, settings, ctx, req, flavor, image, prepared)
    quota = quotas.InstanceQuota(conn, settings, ctx.project_id, flavor)
    count = quota.allowed(req.min_count, max_count)
    rows = prepared if prepared is not None and len(prepared) == count else \
        records.instance_rows(ctx, req, flavor, image, az, key_data, reservation_id, count,
                              utcnow())
    for row in rows:
        row["id"] = _INSERT_INSTANCE.execute(conn, **_params(row, INSTANCE_COLUMNS)
                                             ).fetchone()[0]
    uuids = [r["uuid"] for r in rows]
    tags.instance_tags_create(conn, uuids, req.tags)
    if group is not None:
        _add_group_members(conn, settings, group, uuids)
    # One round trip on PostgreSQL, not three per server
    # (docs/performance.md, "Distributed (issue 22)").
    with pipelined(conn):
        actions = _send_records(conn, ctx, req, flavor, image, rows)
    for action in actions:
        action.fetchone()
    # Last: on PostgreSQL it locks the project's usage row until COMMIT.
    quota.recheck(conn, len(rows))
    return rows

def _provision_in_one_flight(conn: sa.Connection, settings: Settings, ctx: RequestContext,
                             req: CreateRequest, flavor: dict[str, Any],
                             image: dict[str, Any] | None, rows: list[dict[str, Any]]
                             ) -> list[dict[str, Any]]:
    """PostgreSQL, a create of exactly ``len(rows)`` servers: the records
    and the quota's one statement (the project's usage row locked and read
    with its limits) sent in one round trip, and read after. The quota is
    checked then, not before the inserts: if it refuses, they roll back with
    the transaction. The usage read is the committed one (the inserts count
    at COMMIT), so the check of ``len(rows)`` is the recheck too."""
    assert ctx.project_id is not None
    with pipelined(conn):
        ids = [_INSERT_INSTANCE.execute(conn, **_params(row, INSTANCE_COLUMNS))
               for row in rows]
        actions = _send_records(conn, ctx, req, flavor, image, rows)
        # Last: it locks the project's usage row until COMMIT.
        locked = quotas.send_lock_quota(conn, ctx.project_id)
    quotas.InstanceQuota.locked(conn, settings, ctx.project_id, flavor, locked).allowed(
        len(rows), len(rows))
    for row, cursor in zip(rows, ids):
        row["id"] = cursor.fetchone()[0]
    for action in actions:
        action.fetchone()
    return rows


def _send_records(conn: sa.Connection, ctx: RequestContext, req: CreateRequest,
                  flavor: dict[str, Any], image: dict[str, Any] | None,
                  rows: list[dict[str, Any]]) -> list[Cursor]:
    """Each server's info cache, block device mappings and ``create``
    action inserted (results not read: in a pipeline, they go together);
    the actions' cursors."""
    now = rows[0]["created_at"] if rows else utcnow()
    uuids = [r["uuid"] for r in rows]
    for uuid in uuids:
        _INSERT_INFO_CACHE.execute(conn, v_instance_uuid=uuid, v_network_info=[],
                                   v_created_at=now)
    bdms = records.bdm_rows(req, image, flavor, now)
    for uuid in uuids:
        for bdm in bdms:
            _INSERT_BDM.execute(conn, **_params({**bdm, "instance_uuid": uuid,
                                                 "uuid": str(uuidlib.uuid4())},
                                                BDM_COLUMNS))
    return [instance_actions.send_action_start(conn, ctx, uuid, "create")
            for uuid in uuids]

def _add_group_members(conn: sa.Connection, settings: Settings, group: dict[str, Any],
                       uuids: list[str]) -> None:
    limit = quotas.limits(conn, settings, group["project_id"])["server_group_members"]
    current = _GROUP_MEMBERS_LIVE.execute(conn, w_group=group["uuid"]).fetchone()[0]
    if limit >= 0 and current + len(uuids) > limit:
        raise exc.ServerGroupQuotaExceeded(resource="server_group_members")
    for uuid in uuids:
        _INSERT_GROUP_MEMBER.execute(conn, v_group_uuid=group["uuid"], v_instance_uuid=uuid)


def destroy_records(conn: sa.Connection, uuids: list[str]) -> None:
    """Soft-delete records whose build was never cast (nothing will build them)."""
    conn.execute(instance_group_members.delete().where(
        instance_group_members.c.instance_uuid.in_(uuids)))
    for uuid in uuids:
        inst.soft_delete(conn, uuid)
