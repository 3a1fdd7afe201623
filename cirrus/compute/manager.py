"""The compute service's RPC surface (one per host).

The manager only wires: it makes the host's collaborators (the driver, the
instance store, the network API, the claims client, notifications, events,
locks, running builds) and hands each verb (``build.py``, ``power.py``,
``delete.py``, …) the ones it uses; each RPC method delegates to one verb."""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from cirrus.claims import ClaimsClient
from cirrus.compute.action import ActionRunner
from cirrus.compute.assisted_snapshots import AssistedSnapshots
from cirrus.compute.boot_volumes import BootVolumes
from cirrus.compute.build import Builder
from cirrus.compute.build_failure import BuildFailures
from cirrus.compute.build_request import (BuildParams, BuildRequest, FilterProperties,
                                          RequestSpec)
from cirrus.compute.builds import RunningBuilds
from cirrus.compute.consoles import Consoles
from cirrus.compute.diagnostics import ServerDiagnostics
from cirrus.compute.delete import Terminate
from cirrus.compute.events import InstanceEvents
from cirrus.compute.interfaces import Interfaces
from cirrus.compute.virtapi import VirtAPI
from cirrus.compute.volume_attach import VolumeAttachments
from cirrus.compute.move_volumes import MoveVolumes
from cirrus.compute.volume_service import make_volume_api
from cirrus.compute.pause import Pause
from cirrus.compute.admin_password import Password
from cirrus.compute.rescue import Rescue, RescueRequest
from cirrus.compute.soft_delete import SoftDelete
from cirrus.compute.suspend import Suspend
from cirrus.compute.periodic import ComputePeriodics
from cirrus.compute.power import PowerActions
from cirrus.compute.rebuild import Rebuild, RebuildArgs
from cirrus.compute.shelve import Shelving
from cirrus.compute.snapshot import Snapshots
from cirrus.compute.evacuate import Evacuation
from cirrus.compute.live_migration import LiveMigrations
from cirrus.compute.resize import ResizeActions
from cirrus.compute.rpcapi import ComputeAPI
from cirrus.compute.resource_tracker import ResourceTracker
from cirrus.compute.store import InstanceStore
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.config import Settings
from cirrus.context import RequestContext, admin_context
from cirrus.db.engine import Database
from cirrus.image.api import make_image_api
from cirrus.image.client import ImageClient, ServiceCredentials
from cirrus.network.api import make_network_api
from cirrus.notifications import Notifier
from cirrus.rpc import Transport
from cirrus.service import PeriodicTask, Service
from cirrus.utils import KeyedLocks
from cirrus.virt import load_compute_driver
from cirrus.virt.driver import ComputeDriver
from cirrus.volume.cinder import VolumeAPI

if TYPE_CHECKING:
    import httpx  # (imported on first use by cirrus.image.client)

LOG = logging.getLogger(__name__)


class ComputeManager:
    """Everything one compute host does, reached over the bus."""

    RPC_API = frozenset({"build_and_run_instance", "terminate_instance",
                         "external_instance_event", "start_instance", "stop_instance",
                         "reboot_instance", "get_console_output", "get_serial_console",
                         "attach_interface", "detach_interface", "get_host_uptime",
                         "get_diagnostics", "get_instance_diagnostics",
                         # issue #19: pause, suspend, rescue, password, soft delete
                         "pause_instance", "unpause_instance", "suspend_instance",
                         "resume_instance", "rescue_instance", "unrescue_instance",
                         "set_admin_password", "soft_delete_instance", "restore_instance",
                         # images (rebuild.py, snapshot.py, shelve.py)
                         "rebuild_instance", "snapshot_instance", "backup_instance",
                         "shelve_instance", "shelve_offload_instance", "unshelve_instance",
                         # moves (resize.py, live_migration.py, evacuate.py)
                         "prep_resize", "resize_instance", "finish_resize", "confirm_resize",
                         "revert_resize", "finish_revert_resize", "cleanup_resize",
                         "live_migration", "pre_live_migration",
                         "post_live_migration_at_destination",
                         "rollback_live_migration_at_destination", "live_migration_abort",
                         "live_migration_force_complete", "evacuate_instance",
                         # volumes (volume_attach.py)
                         "attach_volume", "detach_volume", "swap_volume",
                         # assisted volume snapshots (assisted_snapshots.py)
                         "volume_snapshot_create", "volume_snapshot_delete"})

    def __init__(self, settings: Settings, db: Database, transport: Transport, host: str,
                 driver: ComputeDriver, image_service: ImageClient,
                 volume_api: VolumeAPI | None = None) -> None:
        self.settings = settings
        self.db = db
        self.host = host
        self.driver = driver
        # The collaborators each verb is handed (explicitly, only those it uses).
        self.store = InstanceStore(db, host)
        self.claims = ClaimsClient(db)
        self.events = InstanceEvents()
        self.locks = KeyedLocks()
        self.builds = RunningBuilds()
        self.images = make_image_api(settings, db, transport)
        self.image_service = image_service
        # Drivers wait for network-vif-plugged and reach the image service's
        # API through it (seed 003).
        driver.virtapi = VirtAPI(self.events, settings.vif_plugging_timeout,
                                 settings.vif_plugging_is_fatal, image_service)
        self.notifier = Notifier(f"compute.{host}")
        self.rt = ResourceTracker(settings, db, host, driver)
        self.network_api = make_network_api(settings, db, host,
                                             self.events.external_instance_event)
        self.volume_api = volume_api or make_volume_api(settings, db)
        self.boot_volumes = BootVolumes(self.store, driver, self.volume_api,
                                        settings.block_device_allocate_retries,
                                        settings.block_device_allocate_retries_interval)
        failures = BuildFailures(self.store, driver, self.network_api, self.claims,
                                 ComputeTaskAPI(transport), self.notifier, self.boot_volumes)
        self.builder = Builder(
            store=self.store, locks=self.locks, builds=self.builds,
            semaphore=asyncio.Semaphore(settings.max_concurrent_builds), tracker=self.rt,
            driver=driver, network=self.network_api, images=self.images, notifier=self.notifier,
            failures=failures, network_allocate_retries=settings.network_allocate_retries,
            default_access_ip_network_name=settings.default_access_ip_network_name,
            volumes=self.boot_volumes)
        runner = ActionRunner(self.store, self.locks, self.notifier)
        self.power = PowerActions(runner, self.store, driver, self.network_api,
                                  settings.shutdown_timeout)
        self.terminate = Terminate(self.store, self.locks, driver, self.network_api, self.builds,
                                   self.events, self.notifier, self.boot_volumes)
        self.interfaces = Interfaces(self.store, self.locks, driver, self.network_api)
        self.consoles = Consoles(self.store, driver, settings.serial_console_enabled,
                                 settings.host_netns)
        self.diagnostics = ServerDiagnostics(self.store, driver)
        self.periodics = ComputePeriodics(
            store=self.store, locks=self.locks, builds=self.builds, driver=driver,
            network=self.network_api, build_timeout=settings.instance_build_timeout)
        # issue #19: the guest-state verbs
        self.pause = Pause(runner, self.store, driver)
        self.suspend = Suspend(runner, self.store, driver, self.network_api)
        self.rescue = Rescue(runner, self.store, driver, self.network_api, self.images,
                             settings.shutdown_timeout)
        self.password = Password(runner, self.store, driver)
        self.soft_delete = SoftDelete(runner, self.store, driver, self.network_api,
                                      self.terminate, settings.reclaim_instance_interval)
        # images (rebuild.py, snapshot.py, shelve.py)
        self.rebuild = Rebuild(runner, self.store, driver, self.network_api, self.images,
                               self.claims, settings.shutdown_timeout)
        self.snapshots = Snapshots(runner, self.store, driver, self.images)
        self.shelving = Shelving(runner, self.store, driver, self.network_api, self.images,
                                 self.claims, self.notifier, settings.shutdown_timeout,
                                 settings.shelved_offload_time, self.boot_volumes)

        # Moves: each end of a resize, live migration or evacuation.
        to_hosts = ComputeAPI(transport)
        move_volumes = MoveVolumes(self.store, driver, self.volume_api)
        self.resizes = ResizeActions(runner, self.store, driver, self.network_api, to_hosts,
                                     move_volumes)
        self.live_migrations = LiveMigrations(runner, self.store, driver, self.network_api,
                                              to_hosts, move_volumes)
        self.volume_attachments = VolumeAttachments(runner, self.store, driver,
                                                    self.volume_api)
        self.assisted_snapshots = AssistedSnapshots(self.store, driver, self.volume_api)
        self.evacuation = Evacuation(runner, self.store, driver, self.network_api,
                                     self.images.get)

    async def start(self) -> None:
        await self.driver.init_host(self.host)
        await self.network_api.start()
        await self.rt.update_available_resource()
        await self.evacuation.destroy_evacuated_instances(admin_context())
        await self.periodics.init_instances()

    async def stop(self) -> None:
        await self.builds.cancel_all()
        await self.network_api.stop()
        await self.driver.cleanup_host(self.host)
        await self.image_service.close()

    # -- RPC API -------------------------------------------------------------------
    async def build_and_run_instance(self, ctx: RequestContext, instance_uuid: str, node: str,
                                     request_spec: RequestSpec,
                                     filter_properties: FilterProperties,
                                     build_params: BuildParams) -> None:
        self.builder.build_and_run_instance(ctx, BuildRequest.from_cast(
            instance_uuid, node, request_spec, filter_properties, build_params))

    async def terminate_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.terminate(ctx, instance_uuid)

    async def start_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.power.start_instance(ctx, instance_uuid)

    async def stop_instance(self, ctx: RequestContext, instance_uuid: str,
                            clean_shutdown: bool = True) -> None:
        await self.power.stop_instance(ctx, instance_uuid, clean_shutdown)

    async def reboot_instance(self, ctx: RequestContext, instance_uuid: str,
                              reboot_type: str) -> None:
        await self.power.reboot_instance(ctx, instance_uuid, reboot_type)

    async def get_console_output(self, ctx: RequestContext, instance_uuid: str,
                                 tail_length: int | None = None) -> str:
        return await self.power.get_console_output(ctx, instance_uuid, tail_length)

    async def get_serial_console(self, ctx: RequestContext, instance_uuid: str) -> dict[str, Any]:
        return await self.consoles.get_serial_console(ctx, instance_uuid)

    async def get_diagnostics(self, ctx: RequestContext, instance_uuid: str) -> dict[str, int]:
        return await self.diagnostics.get_diagnostics(ctx, instance_uuid)

    async def get_instance_diagnostics(self, ctx: RequestContext,
                                       instance_uuid: str) -> dict[str, Any]:
        return await self.diagnostics.get_instance_diagnostics(ctx, instance_uuid)

    # -- volumes (issue 20) ----------------------------------------------------------
    async def attach_volume(self, ctx: RequestContext, instance_uuid: str,
                            volume_id: str) -> None:
        await self.volume_attachments.attach_volume(ctx, instance_uuid, volume_id)

    async def detach_volume(self, ctx: RequestContext, instance_uuid: str,
                            volume_id: str) -> None:
        await self.volume_attachments.detach_volume(ctx, instance_uuid, volume_id)

    async def swap_volume(self, ctx: RequestContext, instance_uuid: str, old_volume_id: str,
                          new_volume_id: str, new_attachment_id: str) -> None:
        await self.volume_attachments.swap_volume(ctx, instance_uuid, old_volume_id,
                                                  new_volume_id, new_attachment_id)

    async def volume_snapshot_create(self, ctx: RequestContext, instance_uuid: str,
                                     volume_id: str, create_info: dict[str, Any]) -> None:
        await self.assisted_snapshots.volume_snapshot_create(ctx, instance_uuid, volume_id,
                                                             create_info)

    async def volume_snapshot_delete(self, ctx: RequestContext, instance_uuid: str,
                                     volume_id: str, snapshot_id: str,
                                     delete_info: dict[str, Any]) -> None:
        await self.assisted_snapshots.volume_snapshot_delete(ctx, instance_uuid, volume_id,
                                                             snapshot_id, delete_info)

    async def get_host_uptime(self, ctx: RequestContext) -> str:
        """This host's ``uptime`` line, from the driver."""
        return await self.driver.get_host_uptime()

    async def attach_interface(self, ctx: RequestContext, instance_uuid: str,
                               request: dict[str, Any]) -> str:
        return await self.interfaces.attach_interface(ctx, instance_uuid, request)

    async def detach_interface(self, ctx: RequestContext, instance_uuid: str, port_id: str) -> None:
        await self.interfaces.detach_interface(ctx, instance_uuid, port_id)

    # -- issue #19: pause, suspend, rescue, password, soft delete --------------------
    async def pause_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.pause.pause_instance(ctx, instance_uuid)

    async def unpause_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.pause.unpause_instance(ctx, instance_uuid)

    async def suspend_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.suspend.suspend_instance(ctx, instance_uuid)

    async def resume_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.suspend.resume_instance(ctx, instance_uuid)

    async def rescue_instance(self, ctx: RequestContext, instance_uuid: str,
                              rescue_password: str, rescue_image_ref: str | None = None,
                              clean_shutdown: bool = True) -> None:
        await self.rescue.rescue_instance(ctx, instance_uuid, RescueRequest(
            rescue_password, rescue_image_ref, clean_shutdown))

    async def unrescue_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.rescue.unrescue_instance(ctx, instance_uuid)

    async def set_admin_password(self, ctx: RequestContext, instance_uuid: str,
                                 new_pass: str) -> None:
        await self.password.set_admin_password(ctx, instance_uuid, new_pass)

    async def soft_delete_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.soft_delete.soft_delete_instance(ctx, instance_uuid)

    async def restore_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.soft_delete.restore_instance(ctx, instance_uuid)

    # images (rebuild.py, snapshot.py, shelve.py)
    async def rebuild_instance(self, ctx: RequestContext, instance_uuid: str, image_ref: str,
                               orig_image_ref: str | None, admin_password: str | None,
                               injected_files: list[list[str]],
                               preserve_ephemeral: bool = False) -> None:
        await self.rebuild.rebuild_instance(ctx, instance_uuid, RebuildArgs(
            image_ref, orig_image_ref, admin_password, injected_files, preserve_ephemeral))

    async def snapshot_instance(self, ctx: RequestContext, instance_uuid: str,
                                image_id: str) -> None:
        await self.snapshots.snapshot_instance(ctx, instance_uuid, image_id)

    async def backup_instance(self, ctx: RequestContext, instance_uuid: str, image_id: str,
                              backup_type: str, rotation: int) -> None:
        await self.snapshots.backup_instance(ctx, instance_uuid, image_id, backup_type, rotation)

    async def shelve_instance(self, ctx: RequestContext, instance_uuid: str, image_id: str,
                              clean_shutdown: bool = True) -> None:
        await self.shelving.shelve_instance(ctx, instance_uuid, image_id, clean_shutdown)

    async def shelve_offload_instance(self, ctx: RequestContext, instance_uuid: str,
                                      clean_shutdown: bool = True) -> None:
        await self.shelving.shelve_offload_instance(ctx, instance_uuid, clean_shutdown)

    async def unshelve_instance(self, ctx: RequestContext, instance_uuid: str,
                                image_id: str | None, node: str | None = None) -> None:
        await self.shelving.unshelve_instance(ctx, instance_uuid, image_id, node)

    async def external_instance_event(self, ctx: RequestContext,
                                      events: list[dict[str, Any]]) -> None:
        await self.events.external_instance_event(ctx, events)

    # -- moves ---------------------------------------------------------------------
    async def prep_resize(self, ctx: RequestContext, instance_uuid: str,
                          migration_uuid: str) -> None:
        await self.resizes.prep_resize(ctx, instance_uuid, migration_uuid)

    async def resize_instance(self, ctx: RequestContext, instance_uuid: str,
                              migration_uuid: str) -> None:
        await self.resizes.resize_instance(ctx, instance_uuid, migration_uuid)

    async def finish_resize(self, ctx: RequestContext, instance_uuid: str,
                            migration_uuid: str) -> None:
        await self.resizes.finish_resize(ctx, instance_uuid, migration_uuid)

    async def confirm_resize(self, ctx: RequestContext, instance_uuid: str,
                             migration_uuid: str) -> None:
        await self.resizes.confirm_resize(ctx, instance_uuid, migration_uuid)

    async def cleanup_resize(self, ctx: RequestContext, instance_uuid: str) -> None:
        await self.resizes.cleanup_resize(ctx, instance_uuid)

    async def revert_resize(self, ctx: RequestContext, instance_uuid: str,
                            migration_uuid: str) -> None:
        await self.resizes.revert_resize(ctx, instance_uuid, migration_uuid)

    async def finish_revert_resize(self, ctx: RequestContext, instance_uuid: str,
                                   migration_uuid: str) -> None:
        await self.resizes.finish_revert_resize(ctx, instance_uuid, migration_uuid)

    async def live_migration(self, ctx: RequestContext, instance_uuid: str, migration_uuid: str,
                             block_migration: bool | None) -> None:
        await self.live_migrations.live_migration(ctx, instance_uuid, migration_uuid,
                                                  block_migration)

    async def pre_live_migration(self, ctx: RequestContext, instance_uuid: str,
                                 migration_uuid: str,
                                 block_migration: bool | None) -> dict[str, Any]:
        return await self.live_migrations.pre_live_migration(ctx, instance_uuid, migration_uuid,
                                                             block_migration)

    async def post_live_migration_at_destination(self, ctx: RequestContext, instance_uuid: str,
                                                 migration_uuid: str, power_state: int) -> None:
        await self.live_migrations.post_live_migration_at_destination(
            ctx, instance_uuid, migration_uuid, power_state)

    async def rollback_live_migration_at_destination(self, ctx: RequestContext,
                                                     instance_uuid: str) -> None:
        await self.live_migrations.rollback_live_migration_at_destination(ctx, instance_uuid)

    async def live_migration_abort(self, ctx: RequestContext, instance_uuid: str,
                                   migration_uuid: str) -> None:
        await self.live_migrations.live_migration_abort(ctx, instance_uuid, migration_uuid)

    async def live_migration_force_complete(self, ctx: RequestContext,
                                            instance_uuid: str) -> None:
        await self.live_migrations.live_migration_force_complete(ctx, instance_uuid)

    async def evacuate_instance(self, ctx: RequestContext, instance_uuid: str,
                                migration_uuid: str, admin_password: str | None) -> None:
        await self.evacuation.evacuate_instance(ctx, instance_uuid, migration_uuid,
                                                admin_password)

    async def _confirm_resizes(self) -> None:
        await self.resizes.confirm_resizes(admin_context(), self.settings.resize_confirm_window)

    # -- periodic ------------------------------------------------------------------
    def periodic_tasks(self) -> list[PeriodicTask]:
        return self._periodic_tasks() + self._reclaim_task()

    def _reclaim_task(self) -> list[PeriodicTask]:
        """Nova's ``_reclaim_queued_deletes``, every interval, when soft delete is on."""
        interval = self.settings.reclaim_instance_interval
        if interval <= 0:
            return []
        return [PeriodicTask("reclaim_queued_deletes", interval,
                             self.soft_delete.reclaim_queued_deletes)]

    def _periodic_tasks(self) -> list[PeriodicTask]:
        s = self.settings
        return [
            PeriodicTask("update_available_resource", 60.0, self.rt.update_available_resource),
            PeriodicTask("sync_power_states", s.sync_power_state_interval,
                         self.periodics.sync_power_states),
            PeriodicTask("heal_instance_info_cache", s.heal_instance_info_cache_interval,
                         self.periodics.heal_instance_info_cache),
            PeriodicTask("check_instance_build_time", max(1.0, min(60.0, s.instance_build_timeout / 4)),
                         self.periodics.check_instance_build_time),
            *([PeriodicTask("poll_shelved_instances", max(1.0, min(60.0, s.shelved_offload_time / 4)),
                            self.shelving.poll_shelved_instances)]
              if s.shelved_offload_time > 0 else []),
        ] + self._move_periodic_tasks() + self._image_cache_task()

    def _image_cache_task(self) -> list[PeriodicTask]:
        """Nova's ``_run_image_cache_manager_pass``, for a driver that caches
        images; ``image_cache_manager_interval`` 0 is every 60 s, -1 never."""
        interval = self.settings.image_cache_manager_interval
        if interval < 0 or not self.driver.capabilities.has_imagecache:
            return []
        return [PeriodicTask("_run_image_cache_manager_pass", interval or 60.0,
                             self.periodics.run_image_cache_manager_pass)]

    def _move_periodic_tasks(self) -> list[PeriodicTask]:
        """Nova's ``_poll_unconfirmed_resizes``, when a confirm window is set."""
        window = self.settings.resize_confirm_window
        if window <= 0:
            return []
        return [PeriodicTask("_poll_unconfirmed_resizes", max(1.0, min(60.0, window)),
                             self._confirm_resizes)]


def compute_hosts(settings: Settings) -> list[str]:
    """The host names this process serves."""
    if settings.compute_host:
        return [settings.compute_host]
    return [f"compute{i}" for i in range(1, settings.computes + 1)]


def make_services(settings: Settings, db: Database, transport: Transport,
                  http_transport: httpx.AsyncBaseTransport | None = None,
                  volume_api: VolumeAPI | None = None) -> list[Service]:
    """One compute service per (simulated) host. ``http_transport``: how the
    image client reaches the API (None: over the network; tests pass the
    in-process app); ``volume_api``: block storage (None: the configured one)."""
    out = []
    for host in compute_hosts(settings):
        image_service = ImageClient(ServiceCredentials.from_settings(settings), http_transport)
        manager = ComputeManager(settings, db, transport, host,
                                 load_compute_driver(settings, host), image_service,
                                 volume_api)
        out.append(Service(binary="cirrus-compute", topic="compute", host=host, db=db,
                           transport=transport, endpoint=manager,
                           report_interval=settings.report_interval,
                           periodic_tasks=manager.periodic_tasks(),
                           availability_zone=settings.default_availability_zone))
    return out
