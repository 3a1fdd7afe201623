"""LibvirtDriver: guests as libvirt/QEMU domains (seeds 001 and 003).

spawn → ``_get_disk_info`` → ``_create_image`` (base cached per host, qcow2
overlay, kernel/ramdisk, config drive) → ``_get_guest_xml`` →
``_create_domain_and_network`` (VIFs plugged, domain started paused, wait for
``network-vif-plugged``, resume) → wait until RUNNING. ``power_on`` is seed
003's hard reboot: destroy, regenerate the XML, recreate, wait RUNNING.
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence, cast

from cirrus.compute import exception as cexc
from cirrus.compute.states import PowerState, TaskState
from cirrus.config import Settings
from cirrus.network.model import VIF
from cirrus.virt import exception as vexc
from cirrus.virt.driver import (Capabilities, ComputeDriver, ConsoleSerial, InstanceInfo,
                                NodeResources, UpdateTaskState)
from cirrus.compute.image_service import ImageMeta
from cirrus.virt.diagnostics import Diagnostics, legacy
from cirrus.virt.imagecache import CacheRules, ImageCache, ImageCacheManager
from cirrus.virt.images import active_image
from cirrus.virt.libvirt import diagnostics, imagebackend, migration
from cirrus.virt.libvirt.config import DiskSpec, GuestSpec, guest_xml, serial_port_of
from cirrus.virt.libvirt.serial import free_port
from cirrus.virt.libvirt.configdrive import make_config_drive
from cirrus.virt.libvirt.guest_state import GuestStateOps
from cirrus.virt.libvirt.host import Host
from cirrus.virt.libvirt.virt_type import detect_virt_type
from cirrus.virt.libvirt.volume import LibvirtVolumeOps, layout_with_volumes, volume_disks
from cirrus.virt.libvirt.volume_snapshot import LibvirtVolumeSnapshotOps

LOG = logging.getLogger(__name__)
MAX_CONSOLE_BYTES = 100 * 1024
# libvirt's virDomainState → the power state compute records.
LIBVIRT_POWER_STATE = {0: PowerState.NOSTATE, 1: PowerState.RUNNING, 2: PowerState.RUNNING,
                       3: PowerState.PAUSED, 4: PowerState.SHUTDOWN, 5: PowerState.SHUTDOWN,
                       6: PowerState.CRASHED, 7: PowerState.SUSPENDED}
LAYOUT = "layout.json"  # what hard reboot needs to rebuild the XML
RUNNING_TIMEOUT = 60.0  # a started guest must be RUNNING by then, or the spawn failed


def domain_name(instance: dict[str, Any]) -> str:
    """Nova's ``instance-%08x`` from the integer id."""
    return "instance-%08x" % int(instance["id"])


class LibvirtDriver(GuestStateOps, LibvirtVolumeOps,  # guest_state.py: pause, rescue, …
                    LibvirtVolumeSnapshotOps,  # volume.py: attach_volume, detach_volume
                    ComputeDriver):  # volume_snapshot.py: assisted volume snapshots
    capabilities = Capabilities(supports_console_output=True, supports_vif_plugging_events=True,
                                has_imagecache=True)

    def __init__(self, settings: Settings, host: str) -> None:
        self.settings = settings
        self.hostname = host
        self.instances_path = Path(settings.instances_path)
        self._image_cache: ImageCache | None = None
        self.virt_type = "qemu"
        self.running_timeout = RUNNING_TIMEOUT
        self._host: Host | None = None

    @property
    def host(self) -> Host:
        if self._host is None:
            self._host = Host(self.settings.libvirt_uri, self.hostname)
        return self._host

    @property
    def image_cache(self) -> ImageCache:
        """Bases in ``<instances_path>/_base``, downloaded through the image
        service compute handed over in ``virtapi``."""
        if self._image_cache is None:
            self._image_cache = ImageCache(self.instances_path / "_base",
                                           self.virtapi.image_service, imagebackend.check_base)
        return self._image_cache

    # -- host ----------------------------------------------------------------------
    async def init_host(self, host: str) -> None:
        await self.host.connect()
        self.instances_path.mkdir(parents=True, exist_ok=True)
        self.virt_type = await asyncio.to_thread(
            detect_virt_type, self.settings.libvirt_virt_type, Path(self.settings.state_dir))
        LOG.info("libvirt driver on %s: %s, domain type %s", host, self.settings.libvirt_uri,
                 self.virt_type)

    async def cleanup_host(self, host: str) -> None:
        if self._host is not None:
            await self._host.close()

    def get_available_nodes(self) -> list[str]:
        return [self.hostname]

    async def get_available_resource(self, nodename: str) -> NodeResources:
        info, version = await self.host.call(lambda c: (c.getInfo(), c.getVersion()))
        disk = shutil.disk_usage(self.instances_path)
        return NodeResources(hypervisor_hostname=nodename, vcpus=int(info[2]),
                             memory_mb=int(info[1]), local_gb=int(disk.total // (1 << 30)),
                             hypervisor_type="QEMU", hypervisor_version=int(version),
                             cpu_arch=str(info[0]),
                             host_ip=self.settings.live_migration_inbound_addr or "127.0.0.1",
                             extra={"virt_type": self.virt_type})

    async def list_instance_uuids(self) -> list[str]:
        def listing(conn: Any) -> list[str]:
            return [d.UUIDString() for d in conn.listAllDomains()
                    if d.name().startswith("instance-")]
        return await self.host.call(listing)

    # -- spawn (seed 001/003) -------------------------------------------------------
    def _instance_dir(self, instance: dict[str, Any]) -> Path:
        uuid: str = instance["uuid"]
        return self.instances_path / uuid

    def _get_disk_info(self, instance: dict[str, Any],
                       volumes: Sequence[DiskSpec] = ()) -> dict[str, str]:
        """Which guest device each disk gets (blockinfo.get_disk_info); the
        config drive takes the last device no volume has.

        The API names an attached volume by the first device its mappings
        leave free (``next_device_name``) and knows nothing of the config
        drive: from the top of the alphabet the two never meet in the domain's
        targets. (The guest names virtio disks in bus order whatever the
        target: a device name is a hint, as in Nova.)"""
        info = {"disk": "vda"}
        if instance.get("config_drive") or self.settings.force_config_drive:
            taken = {"vda", *(v.target for v in volumes)}
            info["disk.config"] = next(f"vd{c}" for c in reversed("bcdefghijklmnopqrstuvwxyz")
                                       if f"vd{c}" not in taken)
        return info

    @contextlib.asynccontextmanager
    async def _base(self, context: Any, image_id: str) -> AsyncIterator[tuple[ImageMeta, Path]]:
        """The image's record and its base on this host, downloaded if need be;
        kept from the image cache manager until the block ends."""
        meta = await active_image(self.virtapi.image_service, image_id)
        async with self.image_cache.base(meta) as base:
            yield meta, base

    async def manage_image_cache(self, context: Any, all_instances: list[dict[str, Any]]) -> None:
        """Bases that neither this host's instances nor any disk on this
        storage uses age out (Nova's libvirt ImageCacheManager)."""
        cache = self.image_cache
        rules = CacheRules(self.settings.remove_unused_base_images,
                           self.settings.remove_unused_original_minimum_age_seconds)
        backing = await asyncio.to_thread(imagebackend.bases_in_use, self.instances_path,
                                          cache.base_dir)
        in_use = backing | {i["image_ref"] for i in all_instances if i.get("image_ref")}
        await ImageCacheManager(cache, rules).update(in_use)

    async def _create_image(self, context: Any, instance: dict[str, Any],
                            image_meta: dict[str, Any], disk_info: dict[str, str],
                            injected_files: list[tuple[str, bytes]], admin_password: str | None,
                            network_info: Sequence[VIF] | None,
                            volumes: Sequence[DiskSpec] = ()) -> dict[str, Any]:
        """Disks, kernel, ramdisk and config drive in the instance directory;
        ``volumes``: the guest's volumes (one at vda is its root: no local disk)."""
        inst_dir = self._instance_dir(instance)
        inst_dir.mkdir(parents=True, exist_ok=True)
        layout: dict[str, Any] = {"disks": []}
        if not any(v.target == "vda" for v in volumes):
            await self._create_root_disk(context, instance, image_meta, inst_dir)
            layout["disks"].append({"path": str(inst_dir / "disk"), "target": "vda",
                                    "fmt": "qcow2"})
        layout["disks"].extend(dataclasses.asdict(v) for v in volumes)
        props = image_meta.get("properties") or {}
        for key, name in (("kernel_id", "kernel"), ("ramdisk_id", "ramdisk")):
            if props.get(key):
                async with self._base(context, props[key]) as (_, path):
                    await asyncio.to_thread(shutil.copyfile, path, inst_dir / name)
                layout[name] = str(inst_dir / name)
        if layout.get("kernel"):
            layout["cmdline"] = props.get("os_command_line") or "console=ttyS0 root=/dev/vda"
        if "disk.config" in disk_info:
            await asyncio.to_thread(make_config_drive, inst_dir / "disk.config", instance,
                                    network_info, injected_files, admin_password)
            layout["disks"].append({"path": str(inst_dir / "disk.config"),
                                    "target": disk_info["disk.config"], "fmt": "raw",
                                    "readonly": True})
        (inst_dir / LAYOUT).write_text(json.dumps(layout))
        return layout

    async def _create_root_disk(self, context: Any, instance: dict[str, Any],
                                image_meta: dict[str, Any], inst_dir: Path) -> None:
        """The local root disk: a qcow2 overlay of the image's base."""
        if not image_meta.get("id"):
            raise cexc.ImageUnacceptable(image_id="-", reason="no image and no root volume")
        fmt = imagebackend.FORMATS.get(image_meta.get("disk_format") or "raw")
        if fmt is None:
            raise cexc.ImageUnacceptable(image_id=image_meta["id"],
                                         reason=f"disk_format {image_meta.get('disk_format')} "
                                                "cannot be booted")
        async with self._base(context, image_meta["id"]) as (_, base):
            await imagebackend.create_root_disk(base, fmt, inst_dir / "disk",
                                                int(instance.get("root_gb") or 0),
                                                instance["uuid"])

    def _get_guest_xml(self, instance: dict[str, Any], layout: dict[str, Any],
                       network_info: Sequence[VIF] | None) -> str:
        flavor = instance.get("flavor") or {}
        return guest_xml(GuestSpec(
            name=domain_name(instance), uuid=instance["uuid"],
            display_name=instance.get("display_name", ""), flavor_name=flavor.get("name", ""),
            virt_type=self.virt_type, memory_mb=int(instance["memory_mb"]),
            vcpus=int(instance["vcpus"]),
            console_log=str(self._instance_dir(instance) / "console.log"),
            disks=[DiskSpec(**d) for d in layout["disks"]], vifs=list(network_info or []),
            kernel=layout.get("kernel"), ramdisk=layout.get("ramdisk"),
            cmdline=layout.get("cmdline"),
            serial_port=free_port() if self.settings.serial_console_enabled else None))

    async def spawn(self, context: Any, instance: dict[str, Any], image_meta: dict[str, Any],
                    injected_files: list[tuple[str, bytes]], admin_password: str | None,
                    allocations: Mapping[str, Any] | None, network_info: Sequence[VIF] | None,
                    block_device_info: Mapping[str, Any] | None = None) -> None:
        volumes = volume_disks(block_device_info)
        disk_info = self._get_disk_info(instance, volumes)
        layout = await self._create_image(context, instance, image_meta, disk_info,
                                          injected_files, admin_password, network_info, volumes)
        xml = self._get_guest_xml(instance, layout, network_info)
        await self._spawn_domain(context, instance, xml, network_info)
        LOG.info("instance %s spawned as %s", instance["uuid"], domain_name(instance))

    async def _spawn_domain(self, context: Any, instance: dict[str, Any], xml: str,
                            network_info: Any) -> None:
        """``_create_domain_and_network``; a guest that did not come up is
        destroyed (domain, VIFs, disks) before the error goes on to compute,
        which reschedules an InstanceSpawnError."""
        try:
            await self._create_domain_and_network(instance, xml, network_info)
        except vexc.InstanceSpawnError:
            with contextlib.suppress(Exception):
                await self.destroy(context, instance, network_info)
            raise

    async def _create_domain(self, xml: str, pause: bool, uuid: str) -> None:
        libvirt = self.host.libvirt

        def create(conn: Any) -> None:
            dom = conn.defineXML(xml)
            dom.createWithFlags(libvirt.VIR_DOMAIN_START_PAUSED if pause else 0)
        try:
            await self.host.call(create)
        except libvirt.libvirtError as e:
            raise vexc.InstanceSpawnError(instance_uuid=uuid, reason=e.get_error_message()) from e

    async def _create_domain_and_network(self, instance: dict[str, Any], xml: str,
                                         network_info: Sequence[VIF] | None,
                                         vifs_already_plugged: bool = False) -> None:
        """Plug VIFs, start paused, wait for network-vif-plugged, resume."""
        uuid = instance["uuid"]
        wait = (not vifs_already_plugged and self.virtapi is not None and network_info)
        waiter = (self.virtapi.wait_for_vif_plugged(instance, network_info) if wait
                  else contextlib.nullcontext())
        async with waiter:
            await self.plug_vifs(instance, network_info)
            # The host backend applied the port's firewall when the port was bound.
            await self._create_domain(xml, pause=bool(wait), uuid=uuid)
        if wait:
            await self._domain_op(instance, "resume")
        if not await self._wait_for_state(instance, PowerState.RUNNING,
                                          timeout=self.running_timeout):
            raise vexc.InstanceSpawnError(
                instance_uuid=uuid,
                reason=f"the guest is not running {self.running_timeout:g}s after it started")

    async def _domain_op(self, instance: dict[str, Any], op: str, *args: Any) -> None:
        libvirt = self.host.libvirt

        def run(conn: Any) -> None:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is None:
                raise vexc.InstanceNotFound(instance_id=instance["uuid"])
            getattr(dom, op)(*args)
        try:
            await self.host.call(run)
        except libvirt.libvirtError as e:
            raise vexc.InstanceSpawnError(instance_uuid=instance["uuid"],
                                          reason=f"{op}: {e.get_error_message()}") from e

    async def _wait_for_state(self, instance: dict[str, Any], state: PowerState,
                              timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if (await self.get_info(instance)).state == state:
                    return True
            except vexc.InstanceNotFound:
                if state == PowerState.SHUTDOWN:
                    return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.1)

    # -- VIFs --------------------------------------------------------------------------
    async def plug_vifs(self, instance: dict[str, Any], network_info: Sequence[VIF] | None) -> None:
        """Make sure each VIF's bridge exists; libvirt creates and enslaves the tap."""
        if not network_info:
            return
        from cirrus.network.linux.ip import ensure_bridge

        for vif in network_info:
            await ensure_bridge(self.settings, vif["network"]["bridge"],
                                (vif["network"].get("meta") or {}).get("mtu"))

    async def unplug_vifs(self, instance: dict[str, Any], network_info: Sequence[VIF] | None) -> None:
        """Nothing to do: the tap goes with the domain; the bridge is the network's."""

    # -- power -----------------------------------------------------------------------
    async def get_info(self, instance: dict[str, Any]) -> InstanceInfo:
        def info(conn: Any) -> tuple[int, str] | None:
            dom = self.host.find_domain(conn, instance["uuid"])
            return None if dom is None else (dom.info()[0], dom.name())
        found = await self.host.call(info)
        if found is None:
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        return InstanceInfo(state=LIBVIRT_POWER_STATE.get(found[0], PowerState.NOSTATE),
                            internal_id=found[1])

    async def _destroy_domain(self, instance: dict[str, Any]) -> None:
        """Stop the domain at once (it stays defined)."""
        libvirt = self.host.libvirt

        def destroy(conn: Any) -> None:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is not None and dom.isActive():
                try:
                    dom.destroy()
                except libvirt.libvirtError as e:
                    if dom.isActive():
                        raise vexc.InstancePowerOffFailure(reason=e.get_error_message()) from e
        await self.host.call(destroy)

    async def _clean_shutdown(self, instance: dict[str, Any], timeout: float,
                              retry_interval: float) -> bool:
        """ACPI power-off, resent every ``retry_interval``; True once it is off."""
        libvirt = self.host.libvirt
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            def shutdown(conn: Any) -> bool:
                dom = self.host.find_domain(conn, instance["uuid"])
                if dom is None or not dom.isActive():
                    return True
                with contextlib.suppress(libvirt.libvirtError):
                    dom.shutdown()
                return False
            if await self.host.call(shutdown):
                return True
            wait = min(max(retry_interval, 1.0), max(0.0, deadline - time.monotonic()))
            if await self._wait_for_state(instance, PowerState.SHUTDOWN, timeout=wait):
                return True
        return False

    async def power_off(self, instance: dict[str, Any], timeout: float = 0,
                        retry_interval: float = 0) -> None:
        if timeout > 0 and await self._clean_shutdown(instance, timeout, retry_interval):
            return
        await self._destroy_domain(instance)

    async def _hard_reboot(self, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                           block_device_info: Mapping[str, Any] | None = None) -> None:
        """Seed 003: destroy, regenerate the XML, recreate, wait until RUNNING
        (with the volumes attached now, when compute gives them)."""
        await self._destroy_domain(instance)
        layout_file = self._instance_dir(instance) / LAYOUT
        if not layout_file.exists():
            raise vexc.InstanceRebootFailure(reason=f"the disks of {instance['uuid']} are gone")
        layout = layout_with_volumes(json.loads(layout_file.read_text()), block_device_info)
        xml = self._get_guest_xml(instance, layout, network_info)
        await self._create_domain_and_network(instance, xml, network_info,
                                              vifs_already_plugged=True)

    async def power_on(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                       block_device_info: Mapping[str, Any] | None = None) -> None:
        await self._hard_reboot(instance, network_info, block_device_info)

    async def reboot(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                     reboot_type: str, block_device_info: Mapping[str, Any] | None = None) -> None:
        if reboot_type == "SOFT":
            timeout = self.settings.shutdown_timeout
            if await self._clean_shutdown(instance, timeout, retry_interval=10):
                with contextlib.suppress(vexc.InstanceSpawnError):
                    await self._domain_op(instance, "create")
                    if await self._wait_for_state(instance, PowerState.RUNNING, timeout=60):
                        return
            LOG.warning("soft reboot of %s did not complete; rebooting hard", instance["uuid"])
        await self._hard_reboot(instance, network_info, block_device_info)

    # -- destroy -----------------------------------------------------------------------
    async def destroy(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                      block_device_info: Mapping[str, Any] | None = None,
                      destroy_disks: bool = True) -> None:
        libvirt = self.host.libvirt
        await self._destroy_domain(instance)

        def undefine(conn: Any) -> None:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is not None:
                with contextlib.suppress(libvirt.libvirtError):
                    dom.undefineFlags(libvirt.VIR_DOMAIN_UNDEFINE_MANAGED_SAVE
                                      | libvirt.VIR_DOMAIN_UNDEFINE_NVRAM)
        await self.host.call(undefine)
        await self.unplug_vifs(instance, network_info)
        if destroy_disks:
            await asyncio.to_thread(shutil.rmtree, self._instance_dir(instance), True)

    # -- snapshot (snapshot.py, shelve.py) ------------------------------------------
    async def snapshot(self, context: Any, instance: dict[str, Any], image_id: str,
                       update_task_state: UpdateTaskState) -> None:
        """``qemu-img convert`` of the root disk (overlay and base flattened) to
        a standalone qcow2, the guest paused meanwhile so that the copy is
        consistent, then uploaded to the image."""
        disk = self._instance_dir(instance) / "disk"
        if not disk.exists():
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        await update_task_state(TaskState.IMAGE_PENDING_UPLOAD, TaskState.IMAGE_SNAPSHOT)
        target = self._instance_dir(instance) / f"snapshot-{image_id}.qcow2"
        running = (await self.get_info(instance)).state == PowerState.RUNNING
        if running:
            await self._domain_op(instance, "suspend")
        try:
            # -U: the running QEMU holds the disk's write lock; it is paused.
            await imagebackend.qemu_img("convert", "-U", "-f", "qcow2", "-O", "qcow2",
                                        str(disk), str(target))
        except imagebackend.ProcessError as e:
            target.unlink(missing_ok=True)
            raise vexc.SnapshotFailed(instance_uuid=instance["uuid"], reason=str(e)) from e
        finally:
            if running:
                await self._domain_op(instance, "resume")
        try:
            await update_task_state(TaskState.IMAGE_UPLOADING, TaskState.IMAGE_PENDING_UPLOAD)
            await self.virtapi.upload_image(context, image_id, target, "qcow2")
        finally:
            target.unlink(missing_ok=True)

    # -- console -----------------------------------------------------------------------
    async def get_serial_console(self, instance: dict[str, Any]) -> ConsoleSerial:
        def port(conn: Any) -> int | None:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is None:
                raise vexc.InstanceNotFound(instance_id=instance["uuid"])
            return serial_port_of(dom.XMLDesc(0))
        found = await self.host.call(port)
        if found is None:
            raise vexc.ConsoleTypeUnavailable(console_type="serial")
        return ConsoleSerial(host="127.0.0.1", port=found)

    async def get_console_output(self, context: Any, instance: dict[str, Any]) -> str:
        path = self._instance_dir(instance) / "console.log"

        def tail() -> str:
            if not path.exists():
                return ""
            with path.open("rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - MAX_CONSOLE_BYTES))
                return f.read().decode(errors="replace")
        return await asyncio.to_thread(tail)

    # -- diagnostics (cirrus/virt/libvirt/diagnostics.py) -----------------------------
    async def _diagnostics(self, instance: dict[str, Any]) -> diagnostics.GuestDiagnostics:
        def read(conn: Any) -> diagnostics.GuestDiagnostics:
            dom = self.host.find_domain(conn, instance["uuid"])
            if dom is None:
                raise vexc.InstanceNotFound(instance_id=instance["uuid"])
            state = LIBVIRT_POWER_STATE.get(dom.info()[0], PowerState.NOSTATE)
            return diagnostics.read(dom, self.host.libvirt.libvirtError, state, instance,
                                    self.virt_type)
        return await self.host.call(read)

    async def get_instance_diagnostics(self, instance: dict[str, Any]) -> Diagnostics:
        return (await self._diagnostics(instance)).diagnostics

    async def get_diagnostics(self, instance: dict[str, Any]) -> dict[str, int]:
        """Nova's libvirt counters, named after the domain's devices."""
        found = await self._diagnostics(instance)
        return legacy(found.diagnostics, found.disk_names, found.nic_names)

    # -- moves (cirrus/virt/libvirt/migration.py) -------------------------------------
    async def migrate_disk_and_power_off(self, context: Any, instance: dict[str, Any],
                                         dest: str, network_info: Any) -> dict[str, Any]:
        return await migration.migrate_disk_and_power_off(self, instance, dest)

    async def finish_migration(self, context: Any, instance: dict[str, Any],
                               disk_info: dict[str, Any], network_info: Any,
                               power_on: bool,
                               block_device_info: Mapping[str, Any] | None = None) -> None:
        await migration.finish_migration(self, instance, network_info, power_on,
                                         block_device_info)

    async def confirm_migration(self, context: Any, instance: dict[str, Any],
                                network_info: Any) -> None:
        await migration.confirm_migration(self, instance, network_info)

    async def finish_revert_migration(self, context: Any, instance: dict[str, Any],
                                      network_info: Any, power_on: bool,
                                      block_device_info: Mapping[str, Any] | None = None) -> None:
        await migration.finish_revert_migration(self, instance, network_info, power_on,
                                                block_device_info)

    async def pre_live_migration(self, context: Any, instance: dict[str, Any],
                                 network_info: Any, block_migration: bool,
                                 block_device_info: Mapping[str, Any] | None = None
                                 ) -> dict[str, Any]:
        return dict(await migration.pre_live_migration(self, instance, network_info,
                                                       block_migration, block_device_info))

    async def live_migration(self, context: Any, instance: dict[str, Any], dest: str,
                             block_migration: bool, migrate_data: dict[str, Any]) -> None:
        await migration.live_migration(self, instance, dest, block_migration,
                                       cast(migration.LiveMigrateData, migrate_data))

    async def live_migration_abort(self, instance: dict[str, Any]) -> None:
        await migration.job_op(self, instance, "abortJob")

    async def live_migration_force_complete(self, instance: dict[str, Any]) -> None:
        await migration.job_op(self, instance, "suspend")

    async def post_live_migration_at_destination(self, context: Any, instance: dict[str, Any],
                                                 network_info: Any, power_state: int,
                                                 block_device_info: Mapping[str, Any] | None
                                                 = None) -> None:
        await migration.post_live_migration_at_destination(self, instance)

    async def rollback_live_migration_at_destination(self, context: Any,
                                                     instance: dict[str, Any],
                                                     network_info: Any) -> None:
        """Nothing was made here but the bridges, which other guests may use."""
