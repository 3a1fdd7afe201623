"""What a request's server group and host hints say about the hosts (Nova's
``scheduler/utils.py`` ``setup_instance_group`` / ``_get_group_details``),
read once per request into its :class:`~cirrus.scheduler.spec.Spec`.

A member is on the host of its record and, while a move of it is in
flight, on that move's destination too (Nova's late group check on the
compute counts the migrations into a host the same way): a second request
made before the first move lands cannot take the host it is going to.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute.migrations import FINAL
from cirrus.compute.models import instance_group_members, instance_groups, instances, migrations
from cirrus.scheduler.moves import move_of
from cirrus.scheduler.spec import Spec

_FINAL = [s.value for s in FINAL]


def needs_group_and_hints(request_spec: dict[str, Any]) -> bool:
    """Whether :func:`group_and_hints` has anything to read (most requests
    have no group and no hints: no trip to the database for them)."""
    group = request_spec.get("instance_group") or {}
    hints = request_spec.get("scheduler_hints") or {}
    return bool(group.get("uuid") or hints.get("group") or hints.get("same_host")
                or hints.get("different_host"))


def group_and_hints(conn: sa.Connection, request_spec: dict[str, Any], spec: Spec) -> None:
    """Fill the group's policy and member hosts and the same/different host
    sets from the database."""
    group = request_spec.get("instance_group") or {}
    hints = request_spec.get("scheduler_hints") or {}
    group_uuid = group.get("uuid") or hints.get("group")
    if group_uuid:
        _group_details(conn, group_uuid, request_spec, spec)

    def hosts_of(uuids: Any) -> set[str]:
        uuids = uuids if isinstance(uuids, list) else [uuids]
        return set(conn.execute(sa.select(instances.c.host).where(
            instances.c.uuid.in_(uuids), instances.c.host.is_not(None))).scalars())
    if hints.get("same_host"):
        spec.same_host = hosts_of(hints["same_host"])
    if hints.get("different_host"):
        spec.different_host = hosts_of(hints["different_host"])


def _group_details(conn: sa.Connection, group_uuid: str, request_spec: dict[str, Any],
                   spec: Spec) -> None:
    row = conn.execute(sa.select(instance_groups.c.policy, instance_groups.c.rules).where(
        instance_groups.c.uuid == group_uuid)).first()
    if row is None:
        return
    spec.group_policy = row.policy
    spec.max_server_per_host = (row.rules or {}).get("max_server_per_host")
    moving = set(request_spec["instance_uuids"]) if move_of(request_spec) else set()
    for uuid, host in _member_hosts(conn, group_uuid):
        if uuid in moving:
            # As Nova's filters: a moving member's own host is a group host
            # (affinity holds it there) but no other member's (anti-affinity
            # lets it stay, on a resize to that host).
            spec.group_hosts.add(host)
        else:
            spec.chose(host)


def _member_hosts(conn: sa.Connection, group_uuid: str) -> set[tuple[str, str]]:
    """(member, host) for each host a live member is on or moving to."""
    m = instance_group_members
    live = sa.and_(m.c.group_uuid == group_uuid, instances.c.deleted.is_(False))
    placed = conn.execute(sa.select(instances.c.uuid, instances.c.host).join(
        m, m.c.instance_uuid == instances.c.uuid).where(live, instances.c.host.is_not(None)))
    moving = conn.execute(sa.select(migrations.c.instance_uuid, migrations.c.dest_compute).join(
        m, m.c.instance_uuid == migrations.c.instance_uuid).join(
        instances, instances.c.uuid == migrations.c.instance_uuid).where(
        live, migrations.c.dest_compute.is_not(None), migrations.c.status.not_in(_FINAL)))
    return {(uuid, host) for uuid, host in [*placed, *moving]}
