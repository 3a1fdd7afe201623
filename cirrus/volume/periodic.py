"""The volume side's periodic sweep: what a killed process left behind.

* A volume ``creating``/``deleting``/``extending``/``retyping`` for longer
  than ``volume_stuck_timeout`` had its worker die: it goes to ``error``
  (``error_deleting`` for a delete, ``error_extending`` for an extend), with
  a user message, so its owner can delete or reset it.
* An attachment whose instance is deleted (or gone) is released and the
  volume settled, as ``attachment_delete`` would have done.

Each fix is a guarded save on the state the sweep read, so a worker that
finishes meanwhile wins and the sweep changes nothing.
"""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass

import sqlalchemy as sa

from cirrus.compute.models import instances
from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all
from cirrus.exception import CirrusException
from cirrus.volume import attach, db, messages
from cirrus.volume.models import volume_attachment, volumes
from cirrus.volume.states import VolumeStatus as V

LOG = logging.getLogger(__name__)

STUCK_TO = {V.CREATING.value: V.ERROR, V.DELETING.value: V.ERROR_DELETING,
            V.EXTENDING.value: V.ERROR_EXTENDING, V.RETYPING.value: V.ERROR}


@dataclass
class SweepResult:
    failed: list[str]
    released: list[str]


def sweep(conn: sa.Connection, timeout: float, now: dt.datetime | None = None) -> SweepResult:
    """One pass (one transaction); what it changed."""
    now = now or utcnow()
    return SweepResult(_fail_stuck(conn, now - dt.timedelta(seconds=timeout)),
                       _release_orphans(conn))


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


class VolumePeriodics:
    """The sweep as the volume service's periodic task."""

    def __init__(self, db_: Database, timeout: float) -> None:
        self.db = db_
        self.timeout = timeout

    async def sweep(self) -> SweepResult:
        result = await self.db.run(sweep, self.timeout)
        if result.failed or result.released:
            LOG.warning("volume sweep: failed stuck volumes %s, released attachments %s",
                        result.failed, result.released)
        return result
