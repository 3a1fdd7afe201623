"""Instance records: create, read, guarded save, faults, soft delete.

Every state transition is ``save(..., expected_task_state=…)``: one
``UPDATE … WHERE task_state IN (…)`` plus a rowcount check, so two actors can
never both move the same instance (DESIGN §2.6).
"""
from __future__ import annotations

from typing import Any, Iterable

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import block_device_mappings, instance_faults, instances
from cirrus.compute.states import TaskState, VmState
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.exception import CirrusException

_UNSET: Any = object()


def _states(expected: Any) -> list[str | None]:
    if isinstance(expected, (list, tuple, set, frozenset)):
        return [getattr(s, "value", s) for s in expected]
    return [getattr(expected, "value", expected)]


def get(conn: sa.Connection, uuid: str, *, read_deleted: bool = False) -> dict[str, Any]:
    """The instance row; :class:`InstanceNotFound` if missing (or deleted)."""
    q = sa.select(instances).where(instances.c.uuid == uuid)
    if not read_deleted:
        q = q.where(instances.c.deleted.is_(False))
    row = fetch_one(conn, q)
    if row is None:
        raise exc.InstanceNotFound(instance_id=uuid)
    return row


def get_many(conn: sa.Connection, uuids: Iterable[str]) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(instances).where(instances.c.uuid.in_(list(uuids))))


def save(conn: sa.Connection, uuid: str, values: dict[str, Any], *,
         expected_task_state: Any = _UNSET, expected_vm_state: Any = _UNSET,
         expected_host: Any = _UNSET) -> dict[str, Any]:
    """Apply ``values`` only if the instance is in the expected states (and, with
    ``expected_host``, on that host; None: on none yet).

    Raises InstanceNotFound if it is gone, UnexpectedDeletingTaskStateError if
    a delete got there first, UnexpectedTaskStateError otherwise.
    """
    values = {k: getattr(v, "value", v) for k, v in values.items()}
    values["updated_at"] = utcnow()
    q = instances.update().where(instances.c.uuid == uuid, instances.c.deleted.is_(False))
    if expected_task_state is not _UNSET:
        states = _states(expected_task_state)
        cond = instances.c.task_state.in_([s for s in states if s is not None])
        if None in states:
            cond = sa.or_(cond, instances.c.task_state.is_(None))
        q = q.where(cond)
    if expected_vm_state is not _UNSET:
        q = q.where(instances.c.vm_state.in_(_states(expected_vm_state)))
    if expected_host is not _UNSET:
        q = q.where(instances.c.host.is_(None) if expected_host is None
                    else instances.c.host == expected_host)
    if conn.execute(q.values(**values)).rowcount == 1:
        return values
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


def soft_delete(conn: sa.Connection, uuid: str) -> None:
    """Mark deleted (kept for actions and accounting, hidden from users)."""
    now = utcnow()
    conn.execute(instances.update().where(instances.c.uuid == uuid).values(
        deleted=True, deleted_at=now, terminated_at=now, vm_state=VmState.DELETED.value,
        task_state=None, power_state=0, updated_at=now))


def bdms(conn: sa.Connection, uuid: str) -> list[dict[str, Any]]:
    return fetch_all(conn, sa.select(block_device_mappings).where(
        block_device_mappings.c.instance_uuid == uuid).order_by(block_device_mappings.c.id))
