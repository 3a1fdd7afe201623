"""The volume service's supervisor of NBD exports.

The database says which exports should exist: every live attachment whose
connection info is ``nbd`` (with the port its host was given). At the
service's start and then every ``volume_export_check_interval`` seconds the
supervisor makes the daemons match it: a wanted export whose daemon died (a
crash, a ``kill -9``, a reboot of the volume host) is started again on its
port, so the guests' QEMU reconnects to the same address; a daemon no
attachment wants (its detach was cut short) is stopped. An export that
cannot come back marks its attachments ``error_attaching`` with a user
message, so the failure shows instead of a guest's I/O errors alone.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

import sqlalchemy as sa

from cirrus.db.base import utcnow
from cirrus.db.engine import Database, fetch_all
from cirrus.volume import messages
from cirrus.volume.backends.nbd import NbdDriver
from cirrus.volume.exception import BackendError
from cirrus.volume.models import volume_attachment, volumes
from cirrus.volume.states import AttachStatus as A

LOG = logging.getLogger(__name__)

# An export this young may belong to an attachment update whose transaction
# has not committed yet: it is not an orphan yet.
ORPHAN_AGE = 60.0


@dataclass
class ExportSync:
    """What one check changed."""

    restarted: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # volume id: reason


def wanted_exports(conn: sa.Connection) -> dict[str, int]:
    """Volume id → NBD port, for every live attachment exported over NBD."""
    rows = fetch_all(conn, sa.select(volume_attachment.c.volume_id,
                                     volume_attachment.c.connection_info)
                     .where(volume_attachment.c.deleted.is_(False),
                            volume_attachment.c.connection_info.is_not(None)))
    wanted = {}
    for row in rows:
        info = row["connection_info"] or {}
        if info.get("driver_volume_type") == "nbd":
            wanted[row["volume_id"]] = int(info["data"]["port"])
    return wanted


def sync(driver: NbdDriver, wanted: dict[str, int],
         orphan_age: float = ORPHAN_AGE) -> ExportSync:
    """Make the daemons match ``wanted`` (blocking: run it in a thread)."""
    result = ExportSync()
    for volume_id, port in sorted(wanted.items()):
        if driver.running(volume_id) is not None:
            continue
        try:
            driver.ensure_export(volume_id, port)
            result.restarted.append(volume_id)
        except BackendError as e:
            result.failed[volume_id] = str(e)
    for volume_id in driver.exported():
        if volume_id not in wanted and driver.export_age(volume_id) >= orphan_age:
            driver.remove_export(volume_id)
            result.removed.append(volume_id)
    return result


def mark_failed(conn: sa.Connection, failed: dict[str, str]) -> None:
    """Each failed export's attachments to ``error_attaching``, with a message."""
    for volume_id, reason in failed.items():
        conn.execute(volume_attachment.update().where(
            volume_attachment.c.volume_id == volume_id, volume_attachment.c.deleted.is_(False))
            .values(attach_status=A.ERROR_ATTACHING.value, updated_at=utcnow()))
        project = conn.execute(sa.select(volumes.c.project_id)
                               .where(volumes.c.id == volume_id)).scalar()
        if project:
            messages.record(conn, project, "VOLUME", volume_id, "VOLUME_000003",
                            f"the NBD export of the attached volume stopped and could not "
                            f"be restarted: {reason}")


class ExportSupervisor:
    """The check as the volume service's periodic task."""

    def __init__(self, db: Database, driver: NbdDriver) -> None:
        self.db = db
        self.driver = driver

    async def check(self) -> ExportSync:
        started = time.monotonic()
        wanted = await self.db.read(wanted_exports)
        result = await asyncio.to_thread(sync, self.driver, wanted)
        if result.failed:
            await self.db.run(mark_failed, result.failed)
        if result.restarted or result.removed or result.failed:
            LOG.warning("nbd exports: restarted %s, removed %s, failed %s (%.1fs)",
                        result.restarted, result.removed, result.failed,
                        time.monotonic() - started)
        return result
