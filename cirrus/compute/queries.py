"""Reading instances for the server views: listings with the filters clients
use, and one server — each in one query (the info cache joined in), plus one for
the faults of failed servers; no N+1.

Rows hold :data:`VIEW_COLUMNS` only (no key data, requested networks…) and are
read through :mod:`cirrus.db.rows`, which costs a fraction of SQLAlchemy's
per-row work: listings of a thousand servers are these paths' whole cost.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, cast

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import aggregate_order_by

from cirrus.compute import exception as exc
from cirrus.compute import tags
from cirrus.compute.models import (block_device_mappings, instance_faults,
                                   instance_group_members, instance_info_caches, instances)
from cirrus.compute.models import tags as tag_rows
from cirrus.compute.regex import Matcher, compile_filter
from cirrus.compute.states import TaskState, VmState
from cirrus.db.engine import fetch_all
from cirrus.db.rows import PreparedRead, RowReader, fetch_dicts, json_loads
from cirrus.network.model import VIF

# API status → vm_state (and task_state where the status depends on it).
STATUS_FILTERS: dict[str, tuple[list[str], list[str] | None]] = {
    "ACTIVE": ([VmState.ACTIVE.value], None),
    "BUILD": ([VmState.BUILDING.value], None),
    "SHUTOFF": ([VmState.STOPPED.value], None),
    "ERROR": ([VmState.ERROR.value], None),
    "PAUSED": ([VmState.PAUSED.value], None),
    "SUSPENDED": ([VmState.SUSPENDED.value], None),
    "DELETED": ([VmState.DELETED.value], None),
    "RESCUE": ([VmState.RESCUED.value], None),
    "SOFT_DELETED": ([VmState.SOFT_DELETED.value], None),
    "PASSWORD": ([VmState.ACTIVE.value], [TaskState.UPDATING_PASSWORD.value]),
    "REBOOT": ([VmState.ACTIVE.value], [TaskState.REBOOTING.value, TaskState.REBOOT_PENDING.value,
                                         TaskState.REBOOT_STARTED.value]),
    "HARD_REBOOT": ([VmState.ACTIVE.value], [TaskState.REBOOTING_HARD.value,
                                             TaskState.REBOOT_PENDING_HARD.value,
                                             TaskState.REBOOT_STARTED_HARD.value]),
}
# What the server views read (cirrus/api/compute/views.py); filters and
# pagination use a subset.
VIEW_COLUMNS = ("id", "uuid", "project_id", "user_id", "display_name", "display_description",
                "hostname", "image_ref", "flavor", "vm_state", "task_state", "power_state",
                "host", "node", "availability_zone", "key_name", "user_data", "config_drive",
                "metadata", "system_metadata", "security_groups", "access_ip_v4",
                "access_ip_v6", "auto_disk_config", "reservation_id", "launch_index", "locked", "locked_reason", "progress",
                "launched_at", "terminated_at", "created_at", "updated_at")
# Read as the database gives them (RowReader's raw): the views need the info
# cache's addresses and the timestamps' ISO text, and get both cheaper from
# SQLite's text than from parsed values (see cirrus/api/compute/views.py).
AS_STORED = ("network_info", "created_at", "updated_at", "launched_at", "terminated_at")
# What GET /servers (id, name, links) and its filters and next link need.
BASIC_COLUMNS = ("id", "uuid", "display_name")

SORT_KEYS = {"created_at", "updated_at", "display_name", "uuid", "vm_state", "task_state",
             "host", "launched_at", "project_id", "user_id", "hostname", "availability_zone"}


@dataclass
class ListQuery:
    """What a server listing asks for. Every project's servers only with
    ``all_projects`` (an admin's ``all_tenants``); a query for project None
    without it finds nothing, so an unscoped caller can never see them all."""

    project_id: str | None  # with all_projects: None for every project
    all_projects: bool = False
    name: str | None = None
    status: list[str] = field(default_factory=list)
    image: str | None = None
    flavor: str | None = None
    host: str | None = None
    changes_since: datetime | None = None
    deleted: bool = False
    ip: str | None = None  # a regex on the servers' IPv4 addresses (re.match, as Nova)
    ip6: str | None = None  # the same on their IPv6 addresses
    # 2.26's tag filters: every tag of ``tags``, any of ``tags_any``, not every
    # one of ``not_tags``, none of ``not_tags_any`` (in the database, see tags.py).
    tags: list[str] = field(default_factory=list)
    tags_any: list[str] = field(default_factory=list)
    not_tags: list[str] = field(default_factory=list)
    not_tags_any: list[str] = field(default_factory=list)
    reservation_id: str | None = None
    locked: bool | None = None  # 2.73: only locked (True) or unlocked (False) servers
    limit: int | None = None
    marker: str | None = None
    sort: list[tuple[str, str]] = field(default_factory=lambda: [("created_at", "desc")])


def list_instances(conn: sa.Connection, q: ListQuery, *, columns: tuple[str, ...] = VIEW_COLUMNS,
                   network_info: bool = False) -> list[dict[str, Any]]:
    """Instances matching ``q`` in the requested order, one page, as dicts of
    ``columns`` (and ``uuid``); with ``network_info``, also the info cache's
    ``network_info`` (None without a cache row). The :data:`AS_STORED`
    columns are as the database gives them: see :func:`network_info_of` and
    ``iso_of`` in the views. Nothing for a query of no project that does not
    ask for all of them; the name and address patterns compiled first
    (:class:`ValidationError` if one is invalid)."""
    if q.project_id is None and not q.all_projects:
        return []
    name_match = compile_filter("name", q.name) if q.name else None
    ip_match = _ip_matcher(q)
    if not (name_match or ip_match):
        # The database stops at the page (and reads no more rows).
        return _read(conn, q, columns, network_info, limit=q.limit)
    # The name and address filters run here, so they must see every row:
    # they read only what they test, and the page's rows are read after — a
    # filter that keeps few of a thousand servers costs a fraction of reading
    # them all in full.
    rows = _read(conn, q, FILTER_COLUMNS, bool(ip_match))
    if name_match:
        rows = [r for r in rows if name_match(r["display_name"] or "")]
    if ip_match:
        rows = [r for r in rows if ip_match(network_info_of(r["network_info"]))]
    if q.limit is not None:
        rows = rows[:q.limit]
    if not rows or (set(columns) <= set(FILTER_COLUMNS) and not network_info):
        return rows
    return _read(conn, q, columns, network_info, uuids=[r["uuid"] for r in rows])


# What the Python-side filters read of every candidate row.
FILTER_COLUMNS = ("id", "uuid", "display_name")


def _read(conn: sa.Connection, q: ListQuery, columns: tuple[str, ...], network_info: bool, *,
          limit: int | None = None, uuids: list[str] | None = None) -> list[dict[str, Any]]:
    """The rows the database's filters of ``q`` select, in ``q``'s order:
    ``columns`` (and ``uuid``), with ``network_info``; at most ``limit``, only
    ``uuids`` if given."""
    shape = _plain_shape(q, columns, network_info, limit, uuids)
    if shape is not None:
        prepared = _prepared_listing(shape)
        if prepared is not None:
            return prepared.all(conn, w_project=q.project_id, w_since=q.changes_since,
                                w_limit=limit)
    return fetch_dicts(conn, *_listing(conn, q, columns, network_info, limit=limit, uuids=uuids))


def _listing(conn: sa.Connection | None, q: ListQuery, columns: tuple[str, ...],
             network_info: bool, *, limit: Any = None, uuids: list[str] | None = None
             ) -> tuple[sa.Select[Any], RowReader]:
    """The SELECT of :func:`_read` and its row reader (``conn``: its dialect,
    None for a plain listing's statement, which never depends on it)."""
    names = list(columns) if "uuid" in columns else [*columns, "uuid"]
    cols: list[Any] = [instances.c[n] for n in names]
    source: Any = instances
    if network_info:
        cols.append(instance_info_caches.c.network_info)
        source = instances.outerjoin(instance_info_caches,
                                     instance_info_caches.c.instance_uuid == instances.c.uuid)
    stmt = _where(conn, sa.select(*cols).select_from(source), q)
    if uuids is not None:
        stmt = stmt.where(instances.c.uuid.in_(uuids))
    order = []
    for key, direction in q.sort:
        col = instances.c[key]
        order.append(col.desc() if direction == "desc" else col.asc())
    order.append(instances.c.id.desc() if q.sort[0][1] == "desc" else instances.c.id.asc())
    stmt = stmt.order_by(*order)
    if q.marker:
        assert conn is not None, "a marker is read from the database"
        stmt = _after_marker(conn, stmt, q)
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt, RowReader(stmt.selected_columns, raw=AS_STORED)


# The listing shapes that are one fixed statement with three parameters (the
# project, changes-since and the page size): boot.py's and clients' polls
# (``?status=ACTIVE&changes-since=…``), plain listings. Each is built and
# compiled once and run as a Prepared statement; building the Core statement
# anew cost about as much CPU as the rest of the request (docs/performance.md,
# round five). At most PLAIN_SHAPES of them, as the statuses and sort keys come
# from the request; any other listing is built as before.
PLAIN_SHAPES = 128
_PLAIN: dict[tuple[Any, ...], PreparedRead] = {}
_PLAIN_PROJECT = sa.bindparam("w_project", type_=instances.c.project_id.type)
_PLAIN_SINCE = sa.bindparam("w_since", type_=instances.c.created_at.type)
_PLAIN_LIMIT = sa.bindparam("w_limit", type_=sa.Integer())


def _plain_shape(q: ListQuery, columns: tuple[str, ...], network_info: bool,
                 limit: int | None, uuids: list[str] | None) -> tuple[Any, ...] | None:
    """What decides a plain listing's statement; None if ``q`` is not one
    (it filters on more than the project, changes-since and statuses of one
    state each, sorts by more than one key or pages from a marker)."""
    if (uuids is not None or q.all_projects or q.project_id is None or q.marker
            or q.image or q.flavor or q.host or q.reservation_id or q.locked is not None
            or q.tags or q.tags_any or q.not_tags or q.not_tags_any
            or len(q.sort) != 1 or len(q.status) > 2):
        return None
    # Statuses as _where reads them, unknown ones alike (the key's size is bounded).
    status = tuple(s if s.upper() in STATUS_FILTERS else "__none__" for s in q.status)
    if any(s.upper() == "DELETED" and s != "DELETED" for s in status):
        return None  # _where tells this one apart by its case
    states = [_states_of(s) for s in status]
    if any(len(vm) != 1 or len(task or ()) > 1 for vm, task in states):
        return None  # an IN of several: not one fixed statement
    return (columns, network_info, q.changes_since is not None, q.deleted, status,
            q.sort[0], limit is not None)


def _prepared_listing(shape: tuple[Any, ...]) -> PreparedRead | None:
    """The statement of a plain listing's ``shape`` (built on first use); None
    once :data:`PLAIN_SHAPES` are kept and this is another."""
    found = _PLAIN.get(shape)
    if found is not None or len(_PLAIN) >= PLAIN_SHAPES:
        return found
    columns, network_info, since, deleted, status, sort, limited = shape
    template = ListQuery(project_id=_PLAIN_PROJECT,  # type: ignore[arg-type]
                         changes_since=_PLAIN_SINCE if since else None,  # type: ignore[arg-type]
                         deleted=deleted, status=list(status), sort=[sort])
    stmt, _ = _listing(None, template, columns, network_info,
                       limit=_PLAIN_LIMIT if limited else None)
    found = _PLAIN[shape] = PreparedRead(stmt, raw=AS_STORED)
    return found


def _states_of(status: str) -> tuple[list[str], list[str] | None]:
    """(vm states, task states or None) of an API status; an unknown one matches nothing."""
    return STATUS_FILTERS.get(status.upper(), (["__none__"], None))


def _one_of(column: sa.ColumnElement[Any], values: list[str]) -> sa.ColumnElement[bool]:
    """``column = value`` for one value (a fixed parameter), else ``IN``."""
    return column == values[0] if len(values) == 1 else column.in_(values)


def _where(conn: sa.Connection | None, stmt: Any, q: ListQuery) -> Any:
    """``stmt`` restricted by the filters of ``q`` the database applies."""
    if not q.all_projects or q.project_id is not None:
        stmt = stmt.where(instances.c.project_id == q.project_id)
    if q.changes_since is not None:
        stmt = stmt.where(sa.func.coalesce(instances.c.updated_at, instances.c.created_at) >= q.changes_since)
    elif not q.deleted and "DELETED" not in q.status:
        stmt = stmt.where(instances.c.deleted.is_(False))
    if q.status:
        conds: list[sa.ColumnElement[bool]] = []
        for status in q.status:
            vm_states, task_states = _states_of(status)
            cond: sa.ColumnElement[bool] = _one_of(instances.c.vm_state, vm_states)
            if task_states:
                cond = sa.and_(cond, _one_of(instances.c.task_state, task_states))
            conds.append(cond)
        stmt = stmt.where(sa.or_(*conds))
    if q.image:
        stmt = stmt.where(instances.c.image_ref == q.image)
    if q.flavor:
        assert conn is not None, "the flavor filter is written per dialect"
        stmt = stmt.where(sa.func.json_extract(instances.c.flavor, "$.flavorid") == q.flavor
                          if conn.dialect.name == "sqlite" else
                          instances.c.flavor["flavorid"].as_string() == q.flavor)
    if q.host:
        stmt = stmt.where(instances.c.host == q.host)
    if q.reservation_id:
        stmt = stmt.where(instances.c.reservation_id == q.reservation_id)
    if q.locked is not None:
        stmt = stmt.where(instances.c.locked.is_(q.locked))
    return stmt.where(*tags.filters(q.tags, q.tags_any, q.not_tags, q.not_tags_any))


def _ip_matcher(q: ListQuery) -> Callable[[list[dict[str, Any]]], bool] | None:
    """Whether a server's network info has an address matching ``q.ip`` (its
    IPv4 addresses) or ``q.ip6`` (its IPv6 ones), as Nova's ``_ip_filter``."""
    by_version: dict[int, Matcher] = {}
    if q.ip:
        by_version[4] = compile_filter("ip", q.ip, anchored=True)
    if q.ip6:
        by_version[6] = compile_filter("ip6", q.ip6, anchored=True)
    if not by_version:
        return None

    def matches(network_info: list[dict[str, Any]]) -> bool:
        for vif in network_info:
            for subnet in (vif.get("network") or {}).get("subnets", []):
                for ip in subnet.get("ips", []):
                    address = ip.get("address") or ""
                    version = ip.get("version") or (6 if ":" in address else 4)
                    match = by_version.get(version)
                    if match is not None and match(address):
                        return True
        return False
    return matches


def network_info_of(stored: Any) -> list[dict[str, Any]]:
    """An info cache's network info from its column as read: the views keep
    the JSON text of SQLite (their addresses are remembered by text, see
    cirrus/api/compute/views.py), PostgreSQL's driver parses it."""
    if isinstance(stored, (str, bytes)):
        return cast(list[dict[str, Any]], json_loads(stored))
    return cast(list[dict[str, Any]], stored or [])


def _after_marker(conn: sa.Connection, stmt: Any, q: ListQuery) -> Any:
    marker = conn.execute(sa.select(instances).where(instances.c.uuid == q.marker)).mappings().first()
    if marker is None:
        raise exc.InvalidRequest(reason=f"marker [{q.marker}] not found")
    key, direction = q.sort[0]
    col, value = instances.c[key], marker[key]
    tie = instances.c.id < marker["id"] if direction == "desc" else instances.c.id > marker["id"]
    if value is None:
        return stmt.where(sa.and_(col.is_(None), tie))
    after = col < value if direction == "desc" else col > value
    return stmt.where(sa.or_(after, sa.and_(col == value, tie)))


# One server's volume mappings, tags and groups (GET /servers/{id}, polled by
# clients): Prepared statements, which cost a fraction of building and compiling
# the Core statements with an IN of one uuid (docs/performance.md, round five).
_VOLUMES_OF = PreparedRead(
    sa.select(block_device_mappings.c.volume_id, block_device_mappings.c.delete_on_termination)
    .where(block_device_mappings.c.instance_uuid == sa.bindparam("uuid"),
           block_device_mappings.c.volume_id.is_not(None))
    .order_by(sa.func.coalesce(block_device_mappings.c.boot_index, 1 << 30),
              block_device_mappings.c.id))
_TAGS_OF = PreparedRead(sa.select(tag_rows.c.tag).where(
    tag_rows.c.resource_id == sa.bindparam("uuid")).order_by(tag_rows.c.tag))
_GROUPS_OF = PreparedRead(sa.select(instance_group_members.c.group_uuid).where(
    instance_group_members.c.instance_uuid == sa.bindparam("uuid")))


def with_volumes(conn: sa.Connection, rows: list[dict[str, Any]]) -> None:
    """Set each row's ``volumes_attached`` (the server view's
    ``os-extended-volumes:volumes_attached``): (volume id, delete on
    termination) of its volume mappings, boot volume first; one query."""
    if len(rows) == 1:  # one server's view: the statement compiled once
        rows[0]["volumes_attached"] = [(r["volume_id"], bool(r["delete_on_termination"]))
                                       for r in _VOLUMES_OF.all(conn, uuid=rows[0]["uuid"])]
        return
    for row in rows:
        row["volumes_attached"] = []
    if not rows:
        return
    by_uuid = {r["uuid"]: r for r in rows}
    bdm = block_device_mappings
    found = conn.execute(sa.select(bdm.c.instance_uuid, bdm.c.volume_id,
                                   bdm.c.delete_on_termination).where(
        bdm.c.instance_uuid.in_(list(by_uuid)), bdm.c.volume_id.is_not(None))
        .order_by(bdm.c.instance_uuid, sa.func.coalesce(bdm.c.boot_index, 1 << 30), bdm.c.id))
    for uuid, volume_id, delete_on_termination in found:
        by_uuid[uuid]["volumes_attached"].append((volume_id, bool(delete_on_termination)))


# A host's delete, the metadata service and GET /servers/{id}/ips read one
# server's cache: compiled once (round ten).
_CACHE_OF = PreparedRead(sa.select(instance_info_caches.c.network_info).where(
    instance_info_caches.c.instance_uuid == sa.bindparam("uuid")))


def cached_network_info(conn: sa.Connection, uuid: str) -> list[VIF]:
    """The server's network info cache ([] if it has none)."""
    row = _CACHE_OF.first(conn, uuid=uuid)
    return (row["network_info"] or []) if row else []


_SHOW_STATEMENT = (
    sa.select(*(instances.c[n] for n in VIEW_COLUMNS), instance_info_caches.c.network_info)
    .select_from(instances.outerjoin(instance_info_caches,
                                     instance_info_caches.c.instance_uuid == instances.c.uuid))
    .where(instances.c.uuid == sa.bindparam("uuid"), instances.c.deleted.is_(False)))
_SHOW = PreparedRead(_SHOW_STATEMENT, raw=AS_STORED)


def get_for_view(conn: sa.Connection, uuid: str) -> dict[str, Any]:
    """One server for GET /servers/{id}: :data:`VIEW_COLUMNS` and its info cache's
    ``network_info``, the :data:`AS_STORED` ones as the database gives them;
    :class:`InstanceNotFound` if missing or deleted (as :func:`cirrus.compute.instance.get`)."""
    row = _SHOW.first(conn, uuid=uuid)
    if row is None:
        raise exc.InstanceNotFound(instance_id=uuid)
    return row


def _show_in_one(groups: bool) -> PreparedRead:
    """PostgreSQL: :data:`_SHOW` with the server's tags, volume mappings and
    (``groups``) server groups as JSON arrays of scalar subqueries, in the
    orders of :data:`_TAGS_OF`, :data:`_VOLUMES_OF` and :data:`_GROUPS_OF`:
    one round trip instead of three or four."""
    bdm = block_device_mappings
    uuid = instances.c.uuid

    def agg(value: Any, *order: Any) -> Any:  # [] when there is no row
        return sa.func.coalesce(sa.func.json_agg(aggregate_order_by(value, *order))
                                if order else sa.func.json_agg(value),
                                sa.literal_column("'[]'::json"))
    tags_of = sa.select(agg(tag_rows.c.tag, tag_rows.c.tag)).where(
        tag_rows.c.resource_id == uuid).scalar_subquery()
    volumes_of = sa.select(agg(
        sa.func.json_build_array(bdm.c.volume_id, bdm.c.delete_on_termination),
        sa.func.coalesce(bdm.c.boot_index, 1 << 30), bdm.c.id)).where(
        bdm.c.instance_uuid == uuid, bdm.c.volume_id.is_not(None)).scalar_subquery()
    extra = [sa.type_coerce(tags_of, sa.JSON).label("tags"),
             sa.type_coerce(volumes_of, sa.JSON).label("volumes_attached")]
    if groups:
        members = instance_group_members
        extra.append(sa.type_coerce(sa.select(agg(members.c.group_uuid)).where(
            members.c.instance_uuid == uuid).scalar_subquery(), sa.JSON).label("server_groups"))
    return PreparedRead(_SHOW_STATEMENT.add_columns(*extra), raw=AS_STORED)


# Built on first use (PostgreSQL only): without and with the server groups.
_SHOW_IN_ONE: dict[bool, PreparedRead] = {}


def get_for_view_in_one(conn: sa.Connection, uuid: str, *, groups: bool) -> dict[str, Any]:
    """PostgreSQL: :func:`get_for_view`, :func:`with_tags`, :func:`with_volumes`
    and (``groups``) :func:`server_groups_of` of one server in one statement;
    the row as those give it, its groups under ``server_groups``."""
    read = _SHOW_IN_ONE.get(groups)
    if read is None:
        read = _SHOW_IN_ONE[groups] = _show_in_one(groups)
    row = read.first(conn, uuid=uuid)
    if row is None:
        raise exc.InstanceNotFound(instance_id=uuid)
    row["volumes_attached"] = [(v[0], bool(v[1])) for v in row["volumes_attached"]]
    return row


def with_tags(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with each one's ``tags`` (the views show them from 2.26): one
    query for all of them."""
    if len(rows) == 1:
        rows[0]["tags"] = [r["tag"] for r in _TAGS_OF.all(conn, uuid=rows[0]["uuid"])]
        return rows
    found = tags.instance_tag_get_by_instance_uuids(conn, [r["uuid"] for r in rows])
    for row in rows:
        row["tags"] = found.get(row["uuid"], [])
    return rows


def server_groups_of(conn: sa.Connection, uuid: str) -> list[str]:
    """The uuids of the server groups the server is in (2.71's ``server_groups``)."""
    return [r["group_uuid"] for r in _GROUPS_OF.all(conn, uuid=uuid)]


def faults(conn: sa.Connection, uuids: list[str]) -> dict[str, dict[str, Any]]:
    """The latest fault of each of ``uuids`` that has one."""
    if not uuids:
        return {}
    rows = fetch_all(conn, sa.select(instance_faults).where(
        instance_faults.c.instance_uuid.in_(uuids)).order_by(instance_faults.c.id))
    return {r["instance_uuid"]: r for r in rows}


_FAULTS_OF = PreparedRead(sa.select(instance_faults).where(
    instance_faults.c.instance_uuid == sa.bindparam("uuid")).order_by(instance_faults.c.id))


def latest_fault(conn: sa.Connection, row: dict[str, Any]) -> dict[str, Any] | None:
    """:func:`latest_faults` of one server."""
    if row["vm_state"] not in (VmState.ERROR.value, VmState.DELETED.value):
        return None
    found = _FAULTS_OF.all(conn, uuid=row["uuid"])
    return found[-1] if found else None


def latest_faults(conn: sa.Connection, rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The latest fault of each of ``rows`` that failed (the views show no other's);
    no query when none did."""
    return faults(conn, [r["uuid"] for r in rows
                         if r["vm_state"] in (VmState.ERROR.value, VmState.DELETED.value)])
