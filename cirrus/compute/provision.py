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
from cirrus.compute.models import (block_device_mappings, instance_actions as actions_table,
                                   instance_group_members, instance_info_caches, instances)
from cirrus.compute.records import CreateRequest
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.onestatement import one_statement
from cirrus.db.prepared import Cursor, Prepared, pipelined
from cirrus.network import quotas as port_quotas
from cirrus.network import validate
from cirrus.network.exception import PortLimitExceeded


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
    if one_statement_fits(conn.dialect.name == "postgresql", req, group, max_count, prepared):
        assert prepared is not None
        return create_in_one_statement(conn, settings, ctx, req, flavor, image, prepared)
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

# -- PostgreSQL: a create of a fixed count as one statement ------------------------
# The project's usage row locked, the quota checked against its limits, and the
# instances, their info caches, block device mappings and ``create`` actions
# inserted only if it passes: data-modifying CTEs (as cirrus/compute/
# build_folds.py), run in autocommit (cirrus/db/onestatement.py). The row is
# locked for the statement alone, not until a COMMIT one round trip later.
_ACTION_COLUMNS = ("instance_uuid", "action", "request_id", "user_id", "project_id",
                   "start_time", "created_at")


def _rows_of(table: sa.Table, columns: tuple[str, ...], names: list[dict[str, str]],
             gate: sa.CTE) -> sa.Insert:
    """An INSERT … SELECT into ``table`` of one row per entry of ``names``
    (column → parameter name), each joined to ``gate`` (none if it has no
    row). Typed parameters: in a SELECT list PostgreSQL cannot infer their
    types."""
    selects = [sa.select(*(sa.bindparam(row[c], type_=table.c[c].type) for c in columns)
                         ).select_from(gate) for row in names]
    source = selects[0] if len(selects) == 1 else sa.union_all(*selects)
    return table.insert().from_select(list(columns), source)


# Where a record takes the instance's uuid: the instance's own parameter.
def _uuid(i: int) -> str:
    return f"v_uuid_{i}"


def _create_statement(key: tuple[int, int, bool]) -> sa.Select[Any]:
    """``count`` servers with ``bdm_count`` mappings each, if the quota passes
    (with ``ports``, the port quota's first look as well: room for
    ``p_want`` new ports, ``p_default`` the limit where the project has none)."""
    count, bdm_count, ports = key
    quota, gate = quotas.locked_gate(
        port_quotas.port_use_columns(sa.bindparam("v_project", type_=sa.String)),
        lambda q: port_quotas.ports_fit(q, sa.bindparam("p_want", type_=sa.Integer),
                                        sa.bindparam("p_default", type_=sa.Integer))
    ) if ports else quotas.locked_gate()
    made = _rows_of(instances, INSTANCE_COLUMNS,
                    [{c: f"v_{c}_{i}" for c in INSTANCE_COLUMNS} for i in range(count)],
                    gate).returning(instances.c.uuid, instances.c.id).cte("made")
    records = [
        _rows_of(instance_info_caches, ("instance_uuid", "network_info", "created_at"),
                 [{"instance_uuid": _uuid(i), "network_info": "c_network_info",
                   "created_at": "c_now"} for i in range(count)], gate).cte("caches"),
        _rows_of(actions_table, _ACTION_COLUMNS,
                 [{"instance_uuid": _uuid(i), "action": "a_action", "request_id": "a_request",
                   "user_id": "a_user", "project_id": "a_project", "start_time": "a_now",
                   "created_at": "a_now"} for i in range(count)], gate).cte("actions")]
    if bdm_count:
        records.append(_rows_of(
            block_device_mappings, BDM_COLUMNS,
            [{c: _uuid(i) if c == "instance_uuid" else f"b_{c}_{i}_{j}" for c in BDM_COLUMNS}
             for i in range(count) for j in range(bdm_count)], gate).cte("mappings"))
    return sa.select(*quota.c, made.c.uuid, made.c.id).select_from(
        quota.outerjoin(made, sa.true())).add_cte(*records)


class _Creates:
    """:func:`_create_statement` of each shape, built once as a
    :class:`Prepared` statement. It is 4.5–8 KB with 56 parameters and more,
    over psycopg's cache of converted placeholders (4 KB, 50 parameters), so
    it relies on ``Prepared`` converting it once and running it on psycopg's
    ``RawCursor`` (``cirrus/db/prepared.py``): converted at every call, it cost
    ~1 ms of CPU a create, more than the one statement saved."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[int, int, bool], Prepared[Any]] = {}

    def execute(self, conn: sa.Connection, key: tuple[int, int, bool], params: dict[str, Any]
                ) -> Cursor:
        """The statement of shape ``key`` run with ``params``: its cursor."""
        statement = self._by_key.get(key)
        if statement is None:
            statement = self._by_key[key] = Prepared(_create_statement(key))
        return statement.execute(conn, **params)


_CREATE = _Creates()


def one_statement_fits(postgresql: bool, req: CreateRequest, group: dict[str, Any] | None,
                       max_count: int, prepared: list[dict[str, Any]] | None) -> bool:
    """Whether the create goes as :func:`create_in_one_statement`: PostgreSQL,
    a fixed count (``min_count`` = ``max_count``, its records built), no
    server group, no tags. Anything else takes :func:`provision_instances`'
    transaction (a count that may shrink, the group's member quota, tags)."""
    return (one_statement_shape(postgresql, req, group) and prepared is not None
            and len(prepared) == max_count == req.min_count)


def one_statement_shape(postgresql: bool, req: CreateRequest,
                        group: dict[str, Any] | None) -> bool:
    """What :func:`one_statement_fits` asks of the request itself, known
    before the count is settled: PostgreSQL, ``min_count`` = ``max_count``,
    no server group, no tags."""
    return postgresql and req.min_count == req.max_count and group is None and not req.tags


@one_statement
def create_in_one_statement(conn: sa.Connection, settings: Settings, ctx: RequestContext,
                            req: CreateRequest, flavor: dict[str, Any],
                            image: dict[str, Any] | None, rows: list[dict[str, Any]],
                            ports_each: int = 0) -> list[dict[str, Any]]:
    """PostgreSQL, a create of exactly ``len(rows)`` servers (no group, no
    tags): the quota and the records in one statement, in autocommit. Over
    quota, nothing is written and TooManyInstances says so as
    :meth:`quotas.InstanceQuota.allowed` of the count does. ``ports_each``:
    the new ports each server needs, the port quota's first look made here
    (the network API's ``validate_networks`` left it to this statement):
    PortLimitExceeded where not one server's ports fit, as
    ``validate.ports_fit`` says it, before the instances' quota (the
    networks are checked first, as in Nova)."""
    assert ctx.project_id is not None
    count = len(rows)
    now = rows[0]["created_at"]
    bdms = records.bdm_rows(req, image, flavor, now)
    params = quotas.gate_params(settings, ctx.project_id, flavor, count)
    for i, row in enumerate(rows):
        params.update({f"v_{c}_{i}": row[c] for c in INSTANCE_COLUMNS})
        for j, bdm in enumerate(bdms):
            params.update({f"b_{c}_{i}_{j}": bdm[c] for c in BDM_COLUMNS
                           if c not in ("instance_uuid", "uuid")})
            params[f"b_uuid_{i}_{j}"] = str(uuidlib.uuid4())
    params.update(c_network_info=[], c_now=now, a_now=utcnow(), a_action="create",
                  a_request=ctx.request_id, a_user=ctx.user_id, a_project=ctx.project_id)
    if ports_each:  # room for one server's ports, as validate_networks asks
        params.update(p_want=ports_each, p_default=int(settings.quota_ports))
    result = _CREATE.execute(conn, (count, len(bdms), bool(ports_each)), params).fetchall()
    ids = {uuid: id_ for *_, uuid, id_ in result if id_ is not None}
    if len(ids) != count:  # refused: nothing was written
        if ports_each:  # the quota's columns, then the ports' two
            own, used = result[0][2 * len(quotas.INSTANCE_RESOURCES):][:2]
            if not validate.ports_fit_in(port_quotas.limit_of_own(settings, own), int(used),
                                         ports_each, count):
                raise PortLimitExceeded()
        quota = quotas.InstanceQuota(None, settings, ctx.project_id, flavor, row=result[0])
        quota.allowed(count, count)  # raises TooManyInstances
        raise AssertionError("the quota statement refused a create its check allows")
    for row in rows:
        row["id"] = ids[row["uuid"]]
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
