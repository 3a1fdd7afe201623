"""The volume side's periodic sweep: what a killed process left behind.

* A volume ``creating``/``deleting``/``extending``/``retyping`` for longer
  than ``volume_stuck_timeout`` had its worker die: it goes to ``error``
  (``error_deleting`` for a delete, ``error_extending`` for an extend), with
  a user message, so its owner can delete or reset it.
* An attachment whose instance is deleted (or gone) is released and the
  volume settled, as ``attachment_delete`` would have done.
* A compute attach cut short (``reserved``/``attaching`` past the timeout, on
  a server with no action under way): finished when the host had plugged the
  volume (its mapping holds the connection info), else undone — the
  attachment released and the mapping removed, as the attach's own rollback.
* A mapping whose attachment was released (a detach cut short between the
  release and the mapping's removal) is removed.
* A volume left ``reserved``/``attaching``/``detaching`` past the timeout with
  no attach pending gets the status its attachments say (``in-use`` or
  ``available``: a legacy ``os-reserve``/``os-begin_detaching`` never followed up).

Each fix is a guarded save on the state the sweep read, so a worker that
finishes meanwhile wins and the sweep changes nothing.
"""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

import sqlalchemy as sa

from cirrus.compute import bdms as bdm_db
from cirrus.compute.models import block_device_mappings as bdms
from cirrus.compute.models import instances
from cirrus.compute.states import VmState
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all
from cirrus.exception import CirrusException
from cirrus.volume import attach, db, messages
from cirrus.volume.models import volume_attachment, volumes
from cirrus.volume.states import AttachStatus as A
from cirrus.volume.states import VolumeStatus as V

LOG = logging.getLogger(__name__)

STUCK_TO = {V.CREATING.value: V.ERROR, V.DELETING.value: V.ERROR_DELETING,
            V.EXTENDING.value: V.ERROR_EXTENDING, V.RETYPING.value: V.ERROR}


PENDING = (A.RESERVED.value, A.ATTACHING.value)
SETTLED_BY_SWEEP = (V.RESERVED.value, V.ATTACHING.value, V.DETACHING.value)


@dataclass
class SweepResult:
    failed: list[str]  # volumes set to an error state
    released: list[str]  # attachments released
    completed: list[str] = field(default_factory=list)  # attachments marked attached
    unmapped: list[str] = field(default_factory=list)  # mappings (bdm uuids) removed
    settled: list[str] = field(default_factory=list)  # volumes given their status back


def sweep(conn: sa.Connection, timeout: float, now: dt.datetime | None = None) -> SweepResult:
    """One pass (one transaction); what it changed."""
    before = (now or utcnow()) - dt.timedelta(seconds=timeout)
    result = SweepResult(_fail_stuck(conn, before), _release_orphans(conn))
    _finish_interrupted(conn, before, result)
    _drop_dangling_mappings(conn, result)
    result.settled = _settle_stuck(conn, before)
    return result


def _fail_stuck(conn: sa.Connection, before: dt.datetime) -> list[str]:
    changed = sa.func.coalesce(volumes.c.updated_at, volumes.c.created_at)
    rows = fetch_all(conn, sa.select(volumes.c.id, volumes.c.status, volumes.c.project_id)
                     .where(volumes.c.deleted.is_(False), volumes.c.status.in_(sorted(STUCK_TO)),
                            changed < before))
    failed = []
    for row in rows:
        try:
            db.save_volume(conn, row["id"], {"status": STUCK_TO[row["status"]]},
                           [row["status"]], "fail a stuck operation")
        except CirrusException:
            continue  # its worker finished meanwhile
        messages.record(conn, row["project_id"], "VOLUME", row["id"], "VOLUME_000002",
                        f"{row['status']} did not finish in time; the volume was set to "
                        f"{STUCK_TO[row['status']].value}")
        failed.append(row["id"])
    return failed


def _release_orphans(conn: sa.Connection) -> list[str]:
    alive = sa.select(instances.c.uuid).where(instances.c.deleted.is_(False))
    rows = fetch_all(conn, sa.select(volume_attachment.c.id, volume_attachment.c.volume_id)
                     .where(volume_attachment.c.deleted.is_(False),
                            volume_attachment.c.instance_uuid.is_not(None),
                            volume_attachment.c.instance_uuid.not_in(alive)))
    for row in rows:
        attach.detach(conn, row["id"])
    for volume_id in sorted({r["volume_id"] for r in rows}):
        attach.settle(conn, volume_id)
    return [r["id"] for r in rows]


def _idle_instances() -> sa.Select[tuple[str]]:
    """Live servers no action is changing (a build or move owns its volumes)."""
    return sa.select(instances.c.uuid).where(
        instances.c.deleted.is_(False), instances.c.task_state.is_(None),
        instances.c.vm_state != VmState.BUILDING.value)


def _finish_interrupted(conn: sa.Connection, before: dt.datetime, result: SweepResult) -> None:
    att, changed = volume_attachment, sa.func.coalesce(volume_attachment.c.updated_at,
                                                       volume_attachment.c.created_at)
    rows = fetch_all(conn, sa.select(att.c.id, att.c.volume_id, bdms.c.id.label("bdm_id"),
                                     bdms.c.uuid.label("bdm_uuid"), bdms.c.connection_info)
                     .join(bdms, bdms.c.attachment_id == att.c.id)
                     .where(att.c.deleted.is_(False), att.c.attach_status.in_(PENDING),
                            changed < before, att.c.instance_uuid.in_(_idle_instances())))
    for row in rows:
        if row["connection_info"]:  # plugged: only attachment_complete was missing
            conn.execute(att.update().where(att.c.id == row["id"]).values(
                attach_status=A.ATTACHED.value, attach_time=utcnow(), updated_at=utcnow()))
            result.completed.append(row["id"])
        else:
            attach.detach(conn, row["id"])
            bdm_db.destroy(conn, row["bdm_id"])
            result.released.append(row["id"])
            result.unmapped.append(row["bdm_uuid"])
        attach.settle(conn, row["volume_id"])


def _drop_dangling_mappings(conn: sa.Connection, result: SweepResult) -> None:
    att = volume_attachment
    rows = fetch_all(conn, sa.select(bdms.c.id, bdms.c.uuid)
                     .join(att, att.c.id == bdms.c.attachment_id)
                     .where(att.c.deleted.is_(True),
                            bdms.c.instance_uuid.in_(_idle_instances())))
    for row in rows:
        bdm_db.destroy(conn, row["id"])
        result.unmapped.append(row["uuid"])


def _settle_stuck(conn: sa.Connection, before: dt.datetime) -> list[str]:
    changed = sa.func.coalesce(volumes.c.updated_at, volumes.c.created_at)
    pending = sa.select(volume_attachment.c.volume_id).where(
        volume_attachment.c.deleted.is_(False), volume_attachment.c.attach_status.in_(PENDING))
    ids = [r["id"] for r in fetch_all(conn, sa.select(volumes.c.id).where(
        volumes.c.deleted.is_(False), volumes.c.status.in_(SETTLED_BY_SWEEP),
        changed < before, volumes.c.id.not_in(pending)))]
    for volume_id in ids:
        attach.settle(conn, volume_id)
    return ids


class VolumePeriodics:
    """The sweep as the volume service's periodic task."""

    def __init__(self, db_: Database, timeout: float) -> None:
        self.db = db_
        self.timeout = timeout

    async def sweep(self) -> SweepResult:
        result = await self.db.run(sweep, self.timeout)
        if result.failed or result.released or result.completed or result.unmapped or \
                result.settled:
            LOG.warning("volume sweep: %s", result)
        return result
