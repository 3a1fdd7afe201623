"""Wiring of the volume service: the object the API handlers and compute
use (:class:`BlockStorage`, in ``app.state.volume``) and the
``cinder-volume`` service that runs the sweep and shows in ``os-services``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cirrus.config import Settings
from cirrus.db.engine import Database
from cirrus.image.api import ImageAPI
from cirrus.service import PeriodicTask, Service
from cirrus.volume.attach import Attachments
from cirrus.volume.backends import backend_host, load_driver
from cirrus.volume.encryption import TypeEncryption
from cirrus.volume.backends.nbd import NbdDriver
from cirrus.volume.exports import ExportSupervisor
from cirrus.volume.group_types import GroupTypes
from cirrus.volume.periodic import VolumePeriodics
from cirrus.volume.qos import QoSSpecs
from cirrus.volume.service import Storage, VolumeService
from cirrus.volume.snapshots import Snapshots
from cirrus.volume.transfers import Transfers
from cirrus.volume.upload import Uploads
from cirrus.volume.types import VolumeTypes

BINARY = "cinder-volume"


@dataclass(frozen=True)
class BlockStorage:
    """The volume service's parts, sharing one :class:`Storage`."""

    storage: Storage
    volumes: VolumeService
    snapshots: Snapshots
    attachments: Attachments
    types: VolumeTypes
    transfers: Transfers
    uploads: Uploads
    qos: QoSSpecs
    group_types: GroupTypes
    encryption: TypeEncryption


def make_block_storage(settings: Settings, db: Database, transport: Any = None) -> BlockStorage:
    storage = Storage(settings, db, load_driver(settings), ImageAPI(settings, db))
    return BlockStorage(storage, VolumeService(storage), Snapshots(storage),
                        Attachments(storage), VolumeTypes(db), Transfers(storage),
                        Uploads(storage), QoSSpecs(db), GroupTypes(db), TypeEncryption(db))


class _Endpoint:
    """The volume service takes no RPC calls: the API does the work."""


def _periodic_tasks(settings: Settings, db: Database) -> list[PeriodicTask]:
    tasks = [PeriodicTask("volume_sweep", settings.volume_sweep_interval,
                          VolumePeriodics(db, settings.volume_stuck_timeout).sweep)]
    driver = load_driver(settings)
    if isinstance(driver, NbdDriver):
        # First at start: a restarted service brings back what the database wants.
        tasks.append(PeriodicTask("nbd_exports", settings.volume_export_check_interval,
                                  ExportSupervisor(db, driver).check, initial_delay=0))
    return tasks


def make_services(settings: Settings, db: Database, transport: Any) -> list[Service]:
    # cinder-scheduler: the API places volumes on the one backend itself, but
    # clients (os-hosts, os-services) expect Cinder's pair of services.
    scheduler = Service(binary="cinder-scheduler", topic="cinder-scheduler",
                        host=settings.compute_host or "cirrus", db=db, transport=transport,
                        endpoint=_Endpoint(), report_interval=settings.report_interval,
                        availability_zone=settings.default_availability_zone)
    return [scheduler, Service(binary=BINARY, topic="cinder-volume", host=backend_host(settings), db=db,
                    transport=transport, endpoint=_Endpoint(),
                    report_interval=settings.report_interval,
                    availability_zone=settings.default_availability_zone,
                    periodic_tasks=_periodic_tasks(settings, db))]
