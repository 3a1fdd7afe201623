"""Instance records: create, read, guarded save, faults, soft delete.

Every state transition is ``save(..., expected_task_state=…)``: one
``UPDATE … WHERE task_state IN (…)`` plus a rowcount check, so two actors can
never both move the same instance (DESIGN §2.6).
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Callable, Iterable, NoReturn

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import (allocations, block_device_mappings, instance_faults,
                                   instance_group_members, instances, tags)
from cirrus.compute.states import TaskState, VmState
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.db.onestatement import one_statement
from cirrus.db.prepared import Cursor, Prepared, PreparedCache
from cirrus.db.rows import PreparedRead, RowReader, column_types
from cirrus.exception import CirrusException

_UNSET: Any = object()
# Read on every step of every boot: compiled once, rows read as SQLAlchemy's
# mappings would give them (cirrus/db/rows.py).
_GET = PreparedRead(sa.select(instances).where(instances.c.uuid == sa.bindparam("w_uuid")))
_GET_LIVE = PreparedRead(_GET.statement.stmt.where(instances.c.deleted.is_(False)))
_ROW = RowReader(instances.c)  # the instance row a save RETURNING gives


# Values stored as they are; anything else (the state enums) by its ``value``.
_AS_IS = frozenset({str, int, float, bool, type(None), dt.datetime})


def _plain(value: Any) -> Any:
    return value if type(value) in _AS_IS else getattr(value, "value", value)


def _states(expected: Any) -> list[str | None]:
    if isinstance(expected, (list, tuple, set, frozenset)):
        return [_plain(s) for s in expected]
    return [_plain(expected)]


def get(conn: sa.Connection, uuid: str, *, read_deleted: bool = False) -> dict[str, Any]:
    """The instance row; :class:`InstanceNotFound` if missing (or deleted)."""
    row = (_GET if read_deleted else _GET_LIVE).first(conn, w_uuid=uuid)
    if row is None:
        raise exc.InstanceNotFound(instance_id=uuid)
    return row


def get_many(conn: sa.Connection, uuids: Iterable[str]) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(instances).where(instances.c.uuid.in_(list(uuids))))


def _expectation(expected: Any) -> tuple[tuple[int, bool] | None, list[str]]:
    """The shape of ``expected`` (how many non-NULL states it lists and whether
    it allows NULL; None: no expectation) and its non-NULL states."""
    if expected is _UNSET:
        return None, []
    states = _states(expected)
    listed = [s for s in states if s is not None]
    return (len(listed), len(listed) < len(states)), listed


def _one_of(column: sa.Column[Any], prefix: str, count: int) -> sa.ColumnElement[bool]:
    """``column IN (:prefix0, …)``; false for none (no expanding parameter)."""
    if not count:
        return sa.false()
    return column.in_([sa.bindparam(f"{prefix}{n}") for n in range(count)])


# What a save guarded by the instance's claim (``claimed_on``) returns beside
# the row: the claim's amounts on that node.
_CLAIMED = allocations.alias("claimed")
CLAIM_COLUMNS = tuple(
    sa.select(_CLAIMED.c[column]).where(_CLAIMED.c.consumer_uuid == instances.c.uuid)
    .scalar_subquery().label(f"claim_{column}") for column in ("vcpus", "memory_mb", "disk_gb"))
_ROW_CLAIMED = RowReader([*instances.c, *CLAIM_COLUMNS])


def save_statement(key: tuple[Any, ...]) -> sa.Update:
    """The guarded UPDATE of one shape of :func:`save` (see ``save_params``);
    with ``returning``, the updated row comes back (with ``claimed``, and the
    claim's amounts)."""
    columns, task_states, vm_states, host, returning, claimed = key
    i = instances
    where = [i.c.uuid == sa.bindparam("w_uuid"), i.c.deleted.is_(False)]
    if task_states is not None:
        count, with_null = task_states
        listed = _one_of(i.c.task_state, "w_ts", count)
        where.append(sa.or_(listed, i.c.task_state.is_(None)) if with_null and count
                     else i.c.task_state.is_(None) if with_null else listed)
    if vm_states is not None:
        where.append(_one_of(i.c.vm_state, "w_vm", vm_states[0]))
    if host == "none":
        where.append(i.c.host.is_(None))
    elif host == "equal":
        where.append(i.c.host == sa.bindparam("w_host"))
    if claimed:
        where.append(sa.exists().where(_CLAIMED.c.consumer_uuid == i.c.uuid,
                                       _CLAIMED.c.node_id == sa.bindparam("w_claim_node")))
    update = i.update().where(*where).values({c: sa.bindparam(f"v_{c}") for c in columns})
    if not returning:
        return update
    return update.returning(*i.c, *(CLAIM_COLUMNS if claimed else ()))


# One statement per shape (columns set, how many states expected), built and
# compiled once: a boot makes six guarded saves on the single writer thread.
_SAVES = PreparedCache(save_statement)
# Their parameter names, made once rather than formatted on every save (an
# expectation lists at most every state of its enum).
_VALUE_PARAMS = {c: f"v_{c}" for c in instances.c.keys()}
_TASK_PARAMS = tuple(f"w_ts{n}" for n in range(len(TaskState) + 1))
_VM_PARAMS = tuple(f"w_vm{n}" for n in range(len(VmState) + 1))


def save_params(uuid: str, values: dict[str, Any], expected_task_state: Any = _UNSET,
                expected_vm_state: Any = _UNSET, expected_host: Any = _UNSET,
                returning: bool = False, claimed_on: int | None = None
                 ) -> tuple[tuple[Any, ...], dict[str, Any], dict[str, Any]]:
    """The statement key, its parameters and the values a save writes."""
    values = {k: _plain(v) for k, v in values.items()}
    values["updated_at"] = utcnow()
    host = "any" if expected_host is _UNSET else "none" if expected_host is None else "equal"
    task_shape, task_states = _expectation(expected_task_state)
    vm_shape, vm_states = _expectation(expected_vm_state)
    key = (tuple(sorted(values)), task_shape, vm_shape, host, returning, claimed_on is not None)
    params = {_VALUE_PARAMS.get(k) or f"v_{k}": v for k, v in values.items()}
    params["w_uuid"] = uuid
    if task_states:
        params.update(zip(_TASK_PARAMS, task_states))
    if vm_states:
        params.update(zip(_VM_PARAMS, vm_states))
    if host == "equal":
        params["w_host"] = expected_host
    if claimed_on is not None:
        params["w_claim_node"] = claimed_on
    return key, params, values


class SentSave:
    """A guarded save sent, its outcome read later (:func:`send_save`).

    Inside ``prepared.pipelined`` a statement's result arrives only when the
    pipeline is read, at the block's end: a unit sends its save with the
    statements after it (one round trip on PostgreSQL) and reads the outcome
    after the block. Should the save have matched no row, the statements sent
    with it ran too, and the unit must raise (so its transaction rolls back):
    :meth:`check` and :meth:`row` do.
    """

    def __init__(self, conn: sa.Connection, uuid: str, values: dict[str, Any],
                 expected: tuple[Any, Any, Any], cursor: Cursor,
                 reader: RowReader = _ROW) -> None:
        self._conn = conn
        self._uuid = uuid
        self._values = values
        self._expected = expected
        self._cursor = cursor
        self._reader = reader

    def check(self) -> dict[str, Any]:
        """The values written; raises as :func:`save` does."""
        if self._cursor.rowcount == 1:
            return self._values
        refuse(self._conn, self._uuid, *self._expected)

    def row(self) -> dict[str, Any]:
        """The instance as :func:`get` gives it after the save (sent with
        ``returning``); raises as :func:`save` does."""
        row = self.row_or_none()
        if row is not None:
            return row
        refuse(self._conn, self._uuid, *self._expected)

    def row_or_none(self) -> dict[str, Any] | None:
        """:meth:`row`, or None where it raises (the save matched no row)."""
        cursor = self._cursor
        try:
            rows = self._reader.dicts(self._conn.dialect, column_types(cursor),
                                      cursor.fetchall())
        finally:
            cursor.close()
        return rows[0] if rows else None


def send_save(conn: sa.Connection, uuid: str, values: dict[str, Any], *,
              expected_task_state: Any = _UNSET, expected_vm_state: Any = _UNSET,
              expected_host: Any = _UNSET, returning: bool = False,
              claimed_on: int | None = None) -> SentSave:
    """:func:`save` (with ``returning``: :func:`save_and_get`) sent; its
    outcome read by the :class:`SentSave`'s ``check`` (``row``).

    ``claimed_on``: only if the instance also holds a claim on that compute
    node; the row returned carries the claim's amounts (``claim_vcpus``,
    ``claim_memory_mb``, ``claim_disk_gb``). A save that matches nothing
    does not say which guard failed (:func:`refuse` reads the states only).
    """
    key, params, values = save_params(uuid, values, expected_task_state, expected_vm_state,
                                       expected_host, returning, claimed_on)
    cursor = _SAVES[key].execute(conn, **params)
    return SentSave(conn, uuid, values, (expected_task_state, expected_vm_state, expected_host),
                    cursor, _ROW_CLAIMED if claimed_on is not None else _ROW)


@one_statement  # a guarded UPDATE; when it matches nothing, a read says why
def save(conn: sa.Connection, uuid: str, values: dict[str, Any], *,
         expected_task_state: Any = _UNSET, expected_vm_state: Any = _UNSET,
         expected_host: Any = _UNSET) -> dict[str, Any]:
    """Apply ``values`` only if the instance is in the expected states (and, with
    ``expected_host``, on that host; None: on none yet).

    Raises InstanceNotFound if it is gone, UnexpectedDeletingTaskStateError if
    a delete got there first, UnexpectedTaskStateError otherwise.
    """
    return send_save(conn, uuid, values, expected_task_state=expected_task_state,
                     expected_vm_state=expected_vm_state, expected_host=expected_host).check()


def save_and_get(conn: sa.Connection, uuid: str, values: dict[str, Any], *,
                 expected_task_state: Any = _UNSET, expected_vm_state: Any = _UNSET,
                 expected_host: Any = _UNSET) -> dict[str, Any]:
    """:func:`save`, then the instance as :func:`get` gives it after the save —
    returned by the UPDATE itself (one statement instead of two)."""
    return send_save(conn, uuid, values, expected_task_state=expected_task_state,
                     expected_vm_state=expected_vm_state, expected_host=expected_host,
                     returning=True).row()


def refuse(conn: sa.Connection, uuid: str, expected_task_state: Any = _UNSET,
           expected_vm_state: Any = _UNSET, expected_host: Any = _UNSET) -> NoReturn:
    """Why a guarded save changed nothing, as the exception :func:`save` raises."""
    current = get(conn, uuid)  # raises InstanceNotFound
    actual = current["task_state"]
    if actual == TaskState.DELETING.value:
        raise exc.UnexpectedDeletingTaskStateError(
            instance_uuid=uuid, expected=_states(expected_task_state), actual=actual)
    expected = {"task_state": _states(expected_task_state) if expected_task_state is not _UNSET else "any",
                "vm_state": _states(expected_vm_state) if expected_vm_state is not _UNSET else "any"}
    if expected_host is not _UNSET:
        expected["host"] = expected_host
    raise exc.UnexpectedTaskStateError(
        instance_uuid=uuid, expected=expected,
        actual={"task_state": actual, "vm_state": current["vm_state"], "host": current["host"]})


def add_fault(conn: sa.Connection, uuid: str, error: BaseException, host: str | None,
              message: str | None = None, details: str | None = None) -> None:
    """Record why the instance failed (shown as ``fault`` on the server)."""
    code = error.code if isinstance(error, CirrusException) else 500
    text = message or (error.format_message() if isinstance(error, CirrusException) else str(error))
    now = utcnow()
    conn.execute(instance_faults.insert().values(
        instance_uuid=uuid, code=code, message=(text or type(error).__name__)[:255],
        details=details or (text if len(text or "") > 255 else None), host=host, created_at=now))


def set_error(conn: sa.Connection, uuid: str, error: BaseException, host: str | None,
              message: str | None = None) -> None:
    """ERROR, task_state None, plus a fault; quietly nothing if it is gone."""
    try:
        save(conn, uuid, {"vm_state": VmState.ERROR, "task_state": None})
    except exc.InstanceNotFound:
        return
    add_fault(conn, uuid, error, host, message)


# A delete's statements, compiled once (round ten: built per call, they were
# ~7 % of the all-in-one engine's samples over a run with its deletes).
_SOFT_DELETE = Prepared(instances.update().where(instances.c.uuid == sa.bindparam("w_uuid")).values(
    deleted=True, deleted_at=sa.bindparam("v_now"), terminated_at=sa.bindparam("v_now"),
    vm_state=VmState.DELETED.value, task_state=None, power_state=0,
    updated_at=sa.bindparam("v_now")))
_DROP_TAGS = Prepared(tags.delete().where(tags.c.resource_id == sa.bindparam("w_uuid")))
_LEAVE_GROUPS = Prepared(instance_group_members.delete().where(
    instance_group_members.c.instance_uuid == sa.bindparam("w_uuid")))


def soft_delete(conn: sa.Connection, uuid: str) -> None:
    """Mark deleted (kept for actions and accounting, hidden from users); its
    tags go, as Nova's ``instance_destroy`` deletes them."""
    _SOFT_DELETE.execute(conn, w_uuid=uuid, v_now=utcnow())
    _DROP_TAGS.execute(conn, w_uuid=uuid)


def leave_groups(conn: sa.Connection, uuid: str) -> None:
    """The instance taken out of its server groups (a delete's)."""
    _LEAVE_GROUPS.execute(conn, w_uuid=uuid)


_BDMS = PreparedRead(sa.select(block_device_mappings).where(
    block_device_mappings.c.instance_uuid == sa.bindparam("w_uuid")).order_by(block_device_mappings.c.id))


def bdms(conn: sa.Connection, uuid: str) -> list[dict[str, Any]]:
    """The instance's block device mappings, in the order they were made."""
    return _BDMS.all(conn, w_uuid=uuid)


def send_bdms(conn: sa.Connection, uuid: str) -> Callable[[], list[dict[str, Any]]]:
    """:func:`bdms` sent (e.g. inside ``prepared.pipelined``); the function
    returned reads them."""
    cursor = _BDMS.statement.execute(conn, w_uuid=uuid)

    def read() -> list[dict[str, Any]]:
        try:
            return _BDMS.reader.dicts(conn.dialect, column_types(cursor), cursor.fetchall())
        finally:
            cursor.close()
    return read
