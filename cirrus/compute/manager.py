"""The compute service's RPC surface (one per host). The work lives in
``build.py``, ``delete.py`` and (for power actions) ``power.py``."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from cirrus.compute.build import Builder
from cirrus.compute.events import InstanceEvents
from cirrus.compute.virtapi import VirtAPI
from cirrus.compute.periodic import ComputePeriodics
from cirrus.compute.power import PowerActions
from cirrus.compute.resource_tracker import ResourceTracker
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.notifications import Notifier
from cirrus.rpc import Transport
from cirrus.service import PeriodicTask, Service
from cirrus.utils import KeyedLocks
from cirrus.virt import load_compute_driver
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)


class ComputeManager:
    """Everything one compute host does, reached over the bus."""

    RPC_API = frozenset({"build_and_run_instance", "terminate_instance",
                         "external_instance_event", "start_instance", "stop_instance",
                         "reboot_instance", "get_console_output", "attach_interface",
                         "detach_interface", "get_host_uptime"})

    def __init__(self, settings: Settings, db: Database, transport: Transport, host: str,
                 driver: ComputeDriver) -> None:
        from cirrus.image.api import make_image_api
        from cirrus.network.api import make_network_api

        self.settings = settings
        self.db = db
        self.host = host
        self.driver = driver
        self.events = InstanceEvents()
        self.images = make_image_api(settings, db, transport)
        # Drivers wait for network-vif-plugged and read images through it (seed 003).
        driver.virtapi = VirtAPI(self.events, settings.vif_plugging_timeout,
                                 settings.vif_plugging_is_fatal, self.images)
        self.notifier = Notifier(f"compute.{host}")
        self.rt = ResourceTracker(settings, db, host, driver)
        self.network_api = make_network_api(settings, db, host, self._deliver_events)
        self.compute_task_api = ComputeTaskAPI(transport)
        self.build_semaphore = asyncio.Semaphore(settings.max_concurrent_builds)
        self.builds: dict[str, asyncio.Task[Any]] = {}
        self._locks = KeyedLocks()
        self.builder = Builder(self)
        self.power = PowerActions(self)
        self.periodics = ComputePeriodics(self)

    def instance_lock(self, uuid: str) -> Any:
        """The per-instance lock every operation on ``uuid`` holds (``async with``)."""
        return self._locks(uuid)

    async def start(self) -> None:
        await self.driver.init_host(self.host)
        await self.network_api.start()
        await self.rt.update_available_resource()
        await self.periodics.init_instances()

    async def stop(self) -> None:
        for task in list(self.builds.values()):
            task.cancel()
        await self.network_api.stop()
        await self.driver.cleanup_host(self.host)

    async def release_claim(self, instance_uuid: str) -> None:
        from cirrus.scheduler.claims import release

        await self.db.run(release, instance_uuid)

    # -- RPC API -------------------------------------------------------------------
    async def build_and_run_instance(self, ctx: RequestContext, instance_uuid: str, node: str,
                                     request_spec: dict[str, Any],
                                     filter_properties: dict[str, Any],
                                     build_params: dict[str, Any]) -> None:
        self.builder.build_and_run_instance(ctx, instance_uuid, node, request_spec,
                                            filter_properties, build_params)

    async def terminate_instance(self, ctx: RequestContext, instance_uuid: str) -> None:
        from cirrus.compute.delete import terminate_instance

        await terminate_instance(self, ctx, instance_uuid)

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

    async def get_host_uptime(self, ctx: RequestContext) -> str:
        """This host's ``uptime`` line, from the driver."""
        return await self.driver.get_host_uptime()

    async def attach_interface(self, ctx: RequestContext, instance_uuid: str,
                               request: dict[str, Any]) -> str:
        """Allocate and plug one more VIF; the new port's id."""
        from cirrus.compute import instance as inst

        async with self.instance_lock(instance_uuid):
            instance = await self.db.read(inst.get, instance_uuid)
            before = {vif["id"] for vif in await self.network_api.get_instance_nw_info(ctx, instance)}
            info = await self.network_api.allocate_for_instance(
                ctx, instance, requested_networks=[request], bind_host_id=self.host)
            new = [vif for vif in info if vif["id"] not in before]
            await self.driver.plug_vifs(instance, new)
            return new[0]["id"] if new else (request.get("port_id") or "")

    async def detach_interface(self, ctx: RequestContext, instance_uuid: str, port_id: str) -> None:
        from cirrus.compute import instance as inst

        async with self.instance_lock(instance_uuid):
            instance = await self.db.read(inst.get, instance_uuid)
            cache = await self.network_api.get_instance_nw_info(ctx, instance)
            await self.driver.unplug_vifs(instance, [v for v in cache if v["id"] == port_id])
            await self.network_api.deallocate_port_for_instance(ctx, instance, port_id)

    async def external_instance_event(self, ctx: RequestContext,
                                      events: list[dict[str, Any]]) -> None:
        await self._deliver_events(ctx, events)

    async def _deliver_events(self, ctx: RequestContext, events: list[dict[str, Any]]) -> None:
        for event in events:
            if event.get("name") in ("network-vif-plugged", "network-vif-unplugged"):
                self.events.deliver(event)

    # -- periodic ------------------------------------------------------------------
    def periodic_tasks(self) -> list[PeriodicTask]:
        s = self.settings
        return [
            PeriodicTask("update_available_resource", 60.0, self.rt.update_available_resource),
            PeriodicTask("sync_power_states", s.sync_power_state_interval,
                         self.periodics.sync_power_states),
            PeriodicTask("heal_instance_info_cache", s.heal_instance_info_cache_interval,
                         self.periodics.heal_instance_info_cache),
            PeriodicTask("check_instance_build_time", max(1.0, min(60.0, s.instance_build_timeout / 4)),
                         self.periodics.check_instance_build_time),
        ]


def compute_hosts(settings: Settings) -> list[str]:
    """The host names this process serves."""
    if settings.compute_host:
        return [settings.compute_host]
    return [f"compute{i}" for i in range(1, settings.computes + 1)]


def make_services(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    """One compute service per (simulated) host."""
    out = []
    for host in compute_hosts(settings):
        manager = ComputeManager(settings, db, transport, host,
                                 load_compute_driver(settings, host))
        out.append(Service(binary="cirrus-compute", topic="compute", host=host, db=db,
                           transport=transport, endpoint=manager,
                           report_interval=settings.report_interval,
                           periodic_tasks=manager.periodic_tasks(),
                           availability_zone=settings.default_availability_zone))
    return out
