"""The build path's write units as one statement each, on PostgreSQL.

Each unit here is a guarded save of the instance with what rides on it (the
build event, the action, the mappings' read) in data-modifying CTEs: every
other part happens only if the save matched (``EXISTS (SELECT FROM saved)``),
so a save that matches nothing changes nothing at all, and the unit is one
statement (``cirrus.db.onestatement``): no BEGIN, no COMMIT, one round trip.
SQLite has no INSERT or UPDATE inside WITH; its callers keep their units of
several statements (``Builder._start_checked``, the conductor's
``_record_host``), group-committed.

Parameters: the save's own (``w_uuid``, ``w_ts0``…, ``v_<column>``, see
``instance.save_params``), the event's ``e_<column>``, the action's ``a_…``.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Hashable

import sqlalchemy as sa

from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.instance_actions import SUCCESS, Binds
from cirrus.compute.models import (block_device_mappings, instance_actions as act,
                                   instance_actions_events as ev, instances)
from cirrus.compute.states import TaskState, VmState
from cirrus.db.base import utcnow
from cirrus.db.coalesce import SetUnit
from cirrus.db.engine import Database
from cirrus.db.onestatement import one_statement
from cirrus.db.prepared import Prepared, PreparedCache
from cirrus.db.rows import RowReader, column_types

_bdm = block_device_mappings


def _saved(save_key: tuple[Any, ...], *returning: sa.ColumnElement[Any]) -> sa.CTE:
    """The guarded save of ``save_key``'s shape, as the CTE ``saved``."""
    return inst.save_statement(save_key).returning(*(returning or (instances.c.uuid,))).cte("saved")


def _count(cte: sa.CTE) -> sa.ScalarSelect[int]:
    return sa.select(sa.func.count()).select_from(cte).scalar_subquery()


# -- mark_active: ACTIVE, the build event closed, the action finished ---------------
def _mark_active_statement(save_key: tuple[Any, ...]) -> sa.Select[Any]:
    saved = _saved(save_key)
    done = sa.exists().select_from(saved)
    now = sa.bindparam("e_now", type_=ev.c.finish_time.type)
    closed = ev.update().where(
        ev.c.id == sa.bindparam("e_id", type_=sa.Integer), ev.c.finish_time.is_(None), done
    ).values(finish_time=now, result=sa.bindparam("e_result"), updated_at=now,
             details=sa.bindparam("e_details"), steps=sa.bindparam("e_steps")).cte("closed")
    finished = act.update().where(
        act.c.instance_uuid == sa.bindparam("w_uuid"),
        act.c.request_id == sa.bindparam("a_request"), done
    ).values(finish_time=sa.bindparam("a_now"), message=None,
             updated_at=sa.bindparam("a_now")).cte("finished")
    return sa.select(_count(saved)).add_cte(closed, finished)


_MARK_ACTIVE = PreparedCache(_mark_active_statement)


@one_statement
def mark_active(conn: sa.Connection, uuid: str, request_id: str, values: dict[str, Any],
                event_id: int | None, details: str, steps: str | None) -> dict[str, Any]:
    """``values`` saved if the build is still SPAWNING, with the build event
    (``event_id``) closed as a success unless closed already and the
    request's action finished; the values written. Raises as
    :func:`instance.save` does, with nothing changed."""
    key, params, written = inst.save_params(uuid, values, TaskState.SPAWNING)
    now = utcnow()
    saved = _MARK_ACTIVE[key].execute(
        conn, **params, e_id=event_id, e_now=now, e_result=SUCCESS, e_details=details,
        e_steps=steps, a_request=request_id, a_now=now).fetchone()[0]
    if saved != 1:
        inst.refuse(conn, uuid, TaskState.SPAWNING)
    return written


@dataclass(frozen=True, slots=True)
class ActiveRow:
    """One build's :func:`mark_active`, as its arguments."""

    uuid: str
    request_id: str
    values: dict[str, Any]
    event_id: int | None
    details: str
    steps: str | None


@one_statement
def _mark_active_one(conn: sa.Connection, row: ActiveRow) -> dict[str, Any]:
    return mark_active(conn, row.uuid, row.request_id, row.values, row.event_id, row.details,
                       row.steps)


def _rows_cte(fields: list[tuple[str, sa.Column[Any]]]) -> str:
    """``d``, a set statement's first CTE: the batch's rows from one JSON
    parameter (``:rows``, :func:`_rows_json`), each field typed as its
    ``column``. One JSON text costs psycopg a fraction of an array parameter
    per column, whose elements it dumps one by one in Python (~1 ms of
    client CPU for 8 rows of 12 columns, against ~0.2; docs/performance.md,
    round nine)."""
    from sqlalchemy.dialects import postgresql

    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    typed = ", ".join(f"{name} {column.type.compile(dialect)}" for name, column in fields)
    return f"WITH d AS (SELECT * FROM json_to_recordset(CAST(:rows AS JSON)) AS d({typed})), "


def _json_field(value: Any) -> Any:
    """A field JSON cannot hold as it is: a timestamp as ISO text, naive UTC
    as the columns store it."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    raise TypeError(f"a set statement's field cannot be {type(value).__name__}")


def _rows_json(rows: list[dict[str, Any]]) -> str:
    """The ``:rows`` parameter of :func:`_rows_cte`: the rows' fields by name."""
    return json.dumps(rows, default=_json_field)


def _events_of_saved(event_columns: tuple[str, ...], returning: str = "") -> str:
    """The CTEs that open each saved row's event (columns ``d.e_<name>``)
    under its request's latest action (``d.request``): ``acts`` joined to
    ``saved``, so nothing for a row whose save matched nothing; ``event``
    the insert (``returning`` its RETURNING clause, if any)."""
    ev_columns = ", ".join(event_columns)
    ev_values = ", ".join(f"acts.e_{name}" for name in event_columns)
    return ("acts AS (SELECT d.*, (SELECT a.id FROM instance_actions AS a "
            "WHERE a.instance_uuid = d.uuid AND a.request_id = d.request "
            "ORDER BY a.id DESC LIMIT 1) AS action_id FROM d JOIN saved ON saved.uuid = d.uuid), "
            f"event AS (INSERT INTO instance_actions_events (action_id, {ev_columns}) "
            f"SELECT acts.action_id, {ev_values} FROM acts WHERE acts.action_id IS NOT NULL"
            f"{returning}) ")


# The set statement's per-row fields beside the saved columns' (``v_<column>``).
_ROW_FIELDS = (("uuid", instances.c.uuid), ("e_id", ev.c.id), ("e_now", ev.c.finish_time),
               ("a_request", act.c.request_id), ("e_details", ev.c.details),
               ("e_steps", ev.c.steps))


def _mark_active_set_sql(columns: tuple[str, ...]) -> sa.TextClause:
    """:func:`mark_active` for many rows: the rows from one JSON parameter; each
    row's event and action closed only if its own save matched (joined to
    ``saved``); the uuids saved come back."""
    fields = [*_ROW_FIELDS, *((f"v_{name}", instances.c[name]) for name in columns)]
    sets = ", ".join(f"{name} = d.v_{name}" for name in columns)
    return sa.text(
        _rows_cte(fields)
        + f"saved AS (UPDATE instances AS i SET {sets} FROM d WHERE i.uuid = d.uuid "
        # The uuids again, as the primary key's index condition.
        "AND i.uuid = ANY(CAST(:uuid AS VARCHAR(36)[])) "
        "AND i.deleted IS false AND i.task_state = :spawning RETURNING i.uuid), "
        "closed AS (UPDATE instance_actions_events AS e SET finish_time = d.e_now, "
        "result = :e_result, updated_at = d.e_now, details = d.e_details, steps = d.e_steps "
        "FROM d JOIN saved ON saved.uuid = d.uuid "
        "WHERE e.id = d.e_id AND e.finish_time IS NULL), "
        "finished AS (UPDATE instance_actions AS a SET finish_time = d.e_now, message = NULL, "
        "updated_at = d.e_now FROM d JOIN saved ON saved.uuid = d.uuid "
        "WHERE a.instance_uuid = d.uuid AND a.request_id = d.a_request) "
        "SELECT uuid FROM saved")


# Run as prepared statements (``$n`` placeholders, psycopg's raw cursor):
# through ``conn.execute`` psycopg parsed the long text at every execute.
_MARK_ACTIVE_SET = PreparedCache(_mark_active_set_sql)


def _mark_active_set(conn: sa.Connection, rows: list[ActiveRow]) -> dict[Hashable, Any]:
    """Every row's :func:`mark_active` (one shape, distinct uuids) in one
    statement: the values written of each row saved, by uuid."""
    written = [inst.save_params(row.uuid, row.values, TaskState.SPAWNING)[2] for row in rows]
    columns = tuple(sorted(written[0]))
    now = utcnow()
    params: dict[str, Any] = {
        "uuid": [row.uuid for row in rows], "spawning": TaskState.SPAWNING.value,
        "e_result": SUCCESS,
        "rows": _rows_json([{"uuid": row.uuid, "e_id": row.event_id, "e_now": now,
                             "a_request": row.request_id, "e_details": row.details,
                             "e_steps": row.steps,
                             **{f"v_{name}": values[name] for name in columns}}
                            for row, values in zip(rows, written)])}
    saved = {uuid for uuid, in _MARK_ACTIVE_SET[columns].execute(conn, **params).fetchall()}
    return {row.uuid: values for row, values in zip(rows, written) if row.uuid in saved}


MARK_ACTIVE = SetUnit[ActiveRow, dict[str, Any]](
    "mark_active", key=lambda row: row.uuid, run_set=_mark_active_set, run_one=_mark_active_one)


async def mark_active_together(db: Database, uuid: str, request_id: str, values: dict[str, Any],
                               event_id: int | None, details: str,
                               steps: str | None) -> dict[str, Any]:
    """:func:`mark_active` as a unit of its own (PostgreSQL), written in one
    statement with the other builds' marked at the same moment
    (``cirrus.db.coalesce``); the same outcome as alone."""
    row = ActiveRow(uuid, request_id, values, event_id, details, steps)
    return await db.run_row(MARK_ACTIVE, tuple(sorted({*values, "updated_at"})), row)


# -- spawning: the build's save before the guest is spawned ------------------------
_SPAWNING = {"vm_state": VmState.BUILDING, "task_state": TaskState.SPAWNING}


@one_statement
def _spawning_one(conn: sa.Connection, uuid: str) -> dict[str, Any]:
    return inst.save(conn, uuid, dict(_SPAWNING),
                     expected_task_state=TaskState.BLOCK_DEVICE_MAPPING)


_SPAWNING_SET = Prepared(sa.text(
    "UPDATE instances SET vm_state = :vm, task_state = :spawning, updated_at = :now "
    "WHERE uuid = ANY(CAST(:uuid AS VARCHAR(36)[])) AND deleted IS false "
    "AND task_state = :expected RETURNING uuid"))


def _spawning_set(conn: sa.Connection, uuids: list[str]) -> dict[Hashable, Any]:
    """Every build's SPAWNING save in one statement: the values written, by
    the uuids saved (one ``updated_at`` for all)."""
    written = inst.save_params(uuids[0], dict(_SPAWNING))[2]
    saved = _SPAWNING_SET.execute(
        conn, uuid=uuids, vm=written["vm_state"], spawning=written["task_state"],
        now=written["updated_at"], expected=TaskState.BLOCK_DEVICE_MAPPING.value).fetchall()
    return {uuid: dict(written) for uuid, in saved}


SPAWNING = SetUnit[str, dict[str, Any]](
    "spawning", key=lambda uuid: uuid, run_set=_spawning_set, run_one=_spawning_one)


async def spawning_together(db: Database, uuid: str) -> dict[str, Any]:
    """The build's save from BLOCK_DEVICE_MAPPING to SPAWNING, the values
    written; on PostgreSQL in one statement with the other builds' saved at
    the same moment (``cirrus.db.coalesce``), elsewhere alone. The same
    outcome either way: raises as :func:`instance.save` does."""
    return await db.run_row(SPAWNING, (), uuid)


# -- record_host: the conductor's placement and its scheduling event ----------------
def _record_host_statement(key: tuple[tuple[Any, ...], Binds]) -> sa.Select[Any]:
    save_key, event_binds = key
    saved = _saved(save_key)
    event = instance_actions.event_insert(event_binds, sa.exists().select_from(saved)).cte("event")
    return sa.select(_count(saved)).add_cte(event)


_RECORD_HOST = PreparedCache(_record_host_statement)


@one_statement
def record_host(conn: sa.Connection, uuid: str, request_id: str, values: dict[str, Any],
                event: dict[str, Any]) -> bool:
    """``values`` (the host) saved if the instance still waits for one
    (SCHEDULING, BUILDING, no host), with the finished ``event`` (its
    columns) recorded under the request's action; False, with nothing
    changed, if it no longer waits."""
    key, params, _ = inst.save_params(uuid, values, [TaskState.SCHEDULING], [VmState.BUILDING],
                                      None)
    event_binds, event_params = instance_actions.event_binds(event, prefix="e_")
    saved = _RECORD_HOST[key, event_binds].execute(
        conn, **params, **event_params, w_request=request_id).fetchone()[0]
    return bool(saved == 1)


@dataclass(frozen=True, slots=True)
class HostRow:
    """One instance's :func:`record_host`, as its arguments."""

    uuid: str
    request_id: str
    values: dict[str, Any]
    event: dict[str, Any]


@one_statement
def _record_host_one(conn: sa.Connection, row: HostRow) -> bool:
    return record_host(conn, row.uuid, row.request_id, row.values, row.event)


def _record_host_set_sql(key: tuple[tuple[str, ...], tuple[str, ...]]) -> sa.TextClause:
    """:func:`record_host` for many rows: the rows from one JSON parameter; each
    row's save guarded as alone; each saved row's event inserted under its
    own request's latest action (``acts``, joined to ``saved``: nothing for
    a row whose save matched nothing); the uuids saved come back."""
    columns, event_columns = key
    fields = [("uuid", instances.c.uuid), ("request", act.c.request_id),
              *((f"v_{name}", instances.c[name]) for name in columns),
              *((f"e_{name}", ev.c[name]) for name in event_columns)]
    sets = ", ".join(f"{name} = d.v_{name}" for name in columns)
    return sa.text(
        _rows_cte(fields)
        + f"saved AS (UPDATE instances AS i SET {sets} FROM d WHERE i.uuid = d.uuid "
        "AND i.uuid = ANY(CAST(:uuid AS VARCHAR(36)[])) AND i.deleted IS false "
        "AND i.task_state = :w_task_state AND i.vm_state = :w_vm_state AND i.host IS NULL "
        "RETURNING i.uuid), "
        + _events_of_saved(event_columns)
        + "SELECT uuid FROM saved")


_RECORD_HOST_SET = PreparedCache(_record_host_set_sql)


def _record_host_set(conn: sa.Connection, rows: list[HostRow]) -> dict[Hashable, bool]:
    """Every row's :func:`record_host` (one shape, distinct uuids) in one
    statement, by uuid: True if saved, False (nothing of it written) if not."""
    written = [inst.save_params(row.uuid, row.values)[2] for row in rows]
    columns = tuple(sorted(written[0]))
    event_columns = tuple(sorted(rows[0].event))
    params: dict[str, Any] = {
        "uuid": [row.uuid for row in rows],
        "w_task_state": TaskState.SCHEDULING.value, "w_vm_state": VmState.BUILDING.value,
        "rows": _rows_json([{"uuid": row.uuid, "request": row.request_id,
                             **{f"v_{name}": values[name] for name in columns},
                             **{f"e_{name}": row.event[name] for name in event_columns}}
                            for row, values in zip(rows, written)])}
    saved = {uuid for uuid, in
             _RECORD_HOST_SET[columns, event_columns].execute(conn, **params).fetchall()}
    return {row.uuid: row.uuid in saved for row in rows}


RECORD_HOST = SetUnit[HostRow, bool](
    "record_host", key=lambda row: row.uuid, run_set=_record_host_set, run_one=_record_host_one)


async def record_host_together(db: Database, uuid: str, request_id: str,
                               values: dict[str, Any], event: dict[str, Any]) -> bool:
    """:func:`record_host` as a unit of its own (PostgreSQL), written in one
    statement with the other instances' placed at the same moment
    (``cirrus.db.coalesce``); the same outcome as alone."""
    row = HostRow(uuid, request_id, values, event)
    return await db.run_row(RECORD_HOST, (tuple(sorted(values)), tuple(sorted(event))), row)


# -- start: the guarded start with its claim check, the build event, the mappings -----
_BDM_LABELS = tuple(f"bdm_{column.key}" for column in _bdm.c)


def _start_statement(key: tuple[tuple[Any, ...], Binds]) -> sa.Select[Any]:
    save_key, event_binds = key
    saved = _saved(save_key, *instances.c, *inst.CLAIM_COLUMNS)
    event = instance_actions.event_insert(event_binds, sa.exists().select_from(saved)).cte("event")
    mappings = [column.label(label) for column, label in zip(_bdm.c, _BDM_LABELS)]
    return sa.select(
        *saved.c, sa.select(event.c.id).scalar_subquery().label("event_id"), *mappings
    ).select_from(saved.outerjoin(_bdm, _bdm.c.instance_uuid == saved.c.uuid)).order_by(_bdm.c.id)


_START = PreparedCache(_start_statement)
_START_KEYS = (*(c.key for c in instances.c), *(c.key for c in inst.CLAIM_COLUMNS))
_START_ROW = RowReader([*instances.c, *inst.CLAIM_COLUMNS,
                        sa.literal_column("event_id", sa.Integer).label("event_id"),
                        *(c.label(label) for c, label in zip(_bdm.c, _BDM_LABELS))])


@one_statement
def start(conn: sa.Connection, uuid: str, request_id: str, host: str, node_id: int,
          event: dict[str, Any]) -> tuple[dict[str, Any], int | None, list[dict[str, Any]]] | None:
    """The build's start, if the instance waits on ``host`` (SCHEDULING,
    BUILDING) and holds a claim on ``node_id``: saved in
    BLOCK_DEVICE_MAPPING, ``event`` (the build event's columns) opened under
    the request's action, and the mappings read. The instance (with the
    claim's amounts, ``claim_vcpus``…), the event's id (None: no action),
    the mappings in the order they were made; None, with nothing changed, if
    the save matched nothing (the caller finds out why)."""
    key, params, _ = inst.save_params(
        uuid, {"vm_state": VmState.BUILDING, "task_state": TaskState.BLOCK_DEVICE_MAPPING},
        [TaskState.SCHEDULING], [VmState.BUILDING], host, claimed_on=node_id)
    event_binds, event_params = instance_actions.event_binds(event, prefix="e_")
    cursor = _START[key, event_binds].execute(conn, **params, **event_params,
                                                   w_request=request_id)
    try:
        rows = _START_ROW.dicts(conn.dialect, column_types(cursor), cursor.fetchall())
    finally:
        cursor.close()
    return _found(rows) if rows else None


def build_event(name: str, host: str, start_time: dt.datetime) -> dict[str, Any]:
    """The columns of an opened event (as ``instance_actions.event_start``)."""
    return {"event": name, "start_time": start_time, "host": host, "created_at": start_time}


# -- start, together: concurrent builds' starts in one statement (PostgreSQL) -------
Found = tuple[dict[str, Any], int | None, list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class StartRow:
    """One build's :func:`start`, as its arguments."""

    uuid: str
    request_id: str
    host: str
    node_id: int
    event: dict[str, Any]


@one_statement
def _start_one(conn: sa.Connection, row: StartRow) -> Found | None:
    return start(conn, row.uuid, row.request_id, row.host, row.node_id, row.event)


def _found(rows: list[dict[str, Any]]) -> Found:
    """One instance's rows of the start (one per mapping, or one without) as
    :func:`start` returns them."""
    first = rows[0]
    instance = {name: first[name] for name in _START_KEYS}
    mappings = [{column.key: row[label] for column, label in zip(_bdm.c, _BDM_LABELS)}
                for row in rows if row["bdm_id"] is not None]
    return instance, first["event_id"], mappings


def _start_set_sql(event_columns: tuple[str, ...]) -> sa.TextClause:
    """:func:`start` for many rows: the rows from one JSON parameter; each row's
    save guarded as alone (its own host and claim's node); each saved row's
    event inserted under its own request's latest action (``acts``, read
    once, joined to ``saved``: nothing for a row whose save matched
    nothing); the same columns out as :func:`start`'s, by instance then
    mapping."""
    fields = [("uuid", instances.c.uuid), ("request", act.c.request_id),
              ("host", instances.c.host), ("node", sa.Column("node", sa.Integer)),
              *((f"e_{name}", ev.c[name]) for name in event_columns)]
    returning = ", ".join(
        [f"i.{column.key}" for column in instances.c]
        + [f"(SELECT c.{name} FROM allocations AS c WHERE c.consumer_uuid = i.uuid) "
           f"AS claim_{name}" for name in ("vcpus", "memory_mb", "disk_gb")])
    out = ", ".join([f"saved.{key}" for key in _START_KEYS] + ["event.id AS event_id"]
                    + [f"b.{column.key} AS {label}" for column, label in zip(_bdm.c, _BDM_LABELS)])
    return sa.text(
        _rows_cte(fields)
        + "saved AS (UPDATE instances AS i SET vm_state = :v_vm_state, "
        "task_state = :v_task_state, updated_at = :v_updated_at FROM d "
        "WHERE i.uuid = d.uuid AND i.uuid = ANY(CAST(:uuid AS VARCHAR(36)[])) "
        "AND i.deleted IS false AND i.task_state = :w_task_state "
        "AND i.vm_state = :w_vm_state AND i.host = d.host "
        "AND EXISTS (SELECT FROM allocations AS c "
        "WHERE c.consumer_uuid = i.uuid AND c.node_id = d.node) "
        f"RETURNING {returning}), "
        + _events_of_saved(event_columns, " RETURNING instance_actions_events.id, "
                           "instance_actions_events.action_id")
        + f"SELECT {out} FROM saved JOIN acts ON acts.uuid = saved.uuid "
        "LEFT JOIN event ON event.action_id = acts.action_id "
        "LEFT JOIN block_device_mappings AS b ON b.instance_uuid = saved.uuid "
        "ORDER BY saved.uuid, b.id")


_START_SET = PreparedCache(_start_set_sql)


def _start_set(conn: sa.Connection, rows: list[StartRow]) -> dict[Hashable, Found | None]:
    """Every row's :func:`start` (one shape, distinct uuids) in one statement,
    by uuid: what :func:`start` returns, None for a row whose save matched
    nothing (as :func:`start` alone: nothing of it written)."""
    columns = tuple(sorted(rows[0].event))
    params: dict[str, Any] = {
        "uuid": [row.uuid for row in rows],
        "v_vm_state": VmState.BUILDING.value,
        "v_task_state": TaskState.BLOCK_DEVICE_MAPPING.value, "v_updated_at": utcnow(),
        "w_task_state": TaskState.SCHEDULING.value, "w_vm_state": VmState.BUILDING.value,
        "rows": _rows_json([{"uuid": row.uuid, "request": row.request_id, "host": row.host,
                             "node": row.node_id,
                             **{f"e_{name}": row.event[name] for name in columns}}
                            for row in rows])}
    cursor = _START_SET[columns].execute(conn, **params)
    try:
        read = _START_ROW.dicts(conn.dialect, column_types(cursor), cursor.fetchall())
    finally:
        cursor.close()
    by_uuid: dict[Hashable, list[dict[str, Any]]] = {}
    for one in read:
        by_uuid.setdefault(one["uuid"], []).append(one)
    return {row.uuid: _found(by_uuid[row.uuid]) if row.uuid in by_uuid else None
            for row in rows}


START = SetUnit[StartRow, Found | None](
    "start", key=lambda row: row.uuid, run_set=_start_set, run_one=_start_one)


async def start_together(db: Database, uuid: str, request_id: str, host: str, node_id: int,
                         event: dict[str, Any]) -> Found | None:
    """:func:`start` as a unit of its own (PostgreSQL), written in one
    statement with the other builds' started at the same moment
    (``cirrus.db.coalesce``); the same outcome as alone."""
    row = StartRow(uuid, request_id, host, node_id, event)
    return await db.run_row(START, tuple(sorted(event)), row)
