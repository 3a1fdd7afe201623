"""Server groups: records and membership."""
from __future__ import annotations

import uuid as uuidlib
from typing import Any, TypedDict

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute import quotas
from cirrus.compute.exception import InstanceGroupMissing
from cirrus.compute.models import instance_group_members, instance_groups, instances
from cirrus.compute.scope import require_project
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import QuotaExceeded

POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")


class GroupRef(TypedDict):
    """A server group as a request spec names it (``instance_group``)."""

    uuid: str
    policy: str


def group_of_instance(conn: sa.Connection, instance_uuid: str) -> GroupRef | None:
    """The group ``instance_uuid`` is a member of (Nova's
    ``InstanceGroup.get_by_instance_uuid``); None if it is in none."""
    row = conn.execute(sa.select(instance_groups.c.uuid, instance_groups.c.policy).join(
        instance_group_members, instance_group_members.c.group_uuid == instance_groups.c.uuid
    ).where(instance_group_members.c.instance_uuid == instance_uuid)).first()
    return GroupRef(uuid=row.uuid, policy=row.policy) if row is not None else None


def members(conn: sa.Connection, group_uuids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {g: [] for g in group_uuids}
    if group_uuids:
        rows = conn.execute(sa.select(instance_group_members.c.group_uuid,
                                      instance_group_members.c.instance_uuid).join(
            instances, instances.c.uuid == instance_group_members.c.instance_uuid).where(
            instance_group_members.c.group_uuid.in_(group_uuids), instances.c.deleted.is_(False)))
        for row in rows:
            out[row.group_uuid].append(row.instance_uuid)
    return out


def get_group(conn: sa.Connection, ctx: RequestContext, group_uuid: str) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(instance_groups).where(instance_groups.c.uuid == group_uuid))
    if row is None or not (ctx.is_admin or row["project_id"] == ctx.project_id):
        raise InstanceGroupMissing(group_uuid=group_uuid)
    return row


def list_groups(conn: sa.Connection, project_id: str | None, *,
                all_projects: bool = False) -> list[dict[str, Any]]:
    """The groups of ``project_id``; every project's only with ``all_projects``
    (no project without it is no groups, never everyone's)."""
    if project_id is None and not all_projects:
        return []
    q = sa.select(instance_groups).order_by(instance_groups.c.created_at, instance_groups.c.uuid)
    if not all_projects:
        q = q.where(instance_groups.c.project_id == project_id)
    return fetch_all(conn, q)


def create_group(conn: sa.Connection, settings: Any, ctx: RequestContext, name: str,
                 group_policy: str, rules: dict[str, Any]) -> dict[str, Any]:
    """A new group of the caller's project (403 for a reader, for a token
    without a project, or when the project's ``server_groups`` quota is used up)."""
    project_id = require_project(ctx)
    policy.enforce(ctx, "compute:server_groups:create", {"project_id": project_id})
    limit = quotas.limits(conn, settings, project_id)["server_groups"]
    used = conn.execute(sa.select(sa.func.count()).select_from(instance_groups).where(
        instance_groups.c.project_id == project_id)).scalar_one()
    if limit >= 0 and used >= limit:
        raise QuotaExceeded(resource="server_groups", requested=1, used=used, allowed=limit)
    row = {"uuid": str(uuidlib.uuid4()), "name": name, "policy": group_policy, "rules": rules,
           "project_id": ctx.project_id, "user_id": ctx.user_id or "", "created_at": utcnow()}
    conn.execute(instance_groups.insert().values(**row))
    return row


def delete_group(conn: sa.Connection, ctx: RequestContext, group_uuid: str) -> None:
    """Delete one of the caller's project's groups (404 for another's, 403 for a reader)."""
    policy.enforce(ctx, "compute:server_groups:delete", get_group(conn, ctx, group_uuid))
    conn.execute(instance_group_members.delete().where(
        instance_group_members.c.group_uuid == group_uuid))
    conn.execute(instance_groups.delete().where(instance_groups.c.uuid == group_uuid))
