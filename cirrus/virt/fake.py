"""The fake hypervisor: real in-memory state, instant or delayed, faults as data.

Tests inject failures with rules, e.g.::

    driver.faults["spawn"].append(fail_on_host("compute1"))
    driver.faults["spawn"].append(hang(instance_name="slow"))
"""
from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from cirrus.compute.states import PowerState, TaskState
from cirrus.config import Settings
from cirrus.network.model import VIF
from cirrus.virt import exception as vexc
from cirrus.virt.diagnostics import (STATE_NAMES, CpuDiagnostics, Diagnostics, DiskDiagnostics,
                                     MemoryDiagnostics, NicDiagnostics)
from cirrus.virt.driver import (Capabilities, ComputeDriver, ConsoleSerial, InstanceInfo,
                                NodeResources, UpdateTaskState)
from cirrus.virt.fake_guests import FakeInstance, GuestTable
from cirrus.virt.fakeconsole import FakeSerialPort, close_all
from cirrus.virt.imagecache import ImageCache
from cirrus.virt.images import active_image


@dataclass
class FaultRule:
    """Raise ``error()`` (or hang) when an operation matches host/instance."""

    error: Callable[[dict[str, Any]], BaseException] | None
    host: str | None = None
    instance_name: str | None = None
    times: int | None = None  # None: always
    hang: bool = False
    release: asyncio.Event | None = None  # a hang that ends when set; then the op goes on

    def matches(self, host: str, instance: dict[str, Any]) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.host is not None and self.host != host:
            return False
        name = instance.get("display_name")
        return self.instance_name is None or self.instance_name == name


def _spawn_error(instance: dict[str, Any]) -> BaseException:
    return vexc.InstanceSpawnError(instance_uuid=instance["uuid"], reason="injected fault")


def fail_on_host(host: str, error: Callable[[dict[str, Any]], BaseException] = _spawn_error,
                 times: int | None = None) -> FaultRule:
    return FaultRule(error=error, host=host, times=times)


def fail_for_instance(name: str, error: Callable[[dict[str, Any]], BaseException] = _spawn_error,
                      times: int | None = None) -> FaultRule:
    return FaultRule(error=error, instance_name=name, times=times)


def hang(host: str | None = None, instance_name: str | None = None) -> FaultRule:
    return FaultRule(error=None, host=host, instance_name=instance_name, hang=True)


def hold(release: asyncio.Event, host: str | None = None) -> FaultRule:
    """The operation waits until ``release`` is set, then goes on as usual: a
    test decides when a spawn ends instead of guessing with a delay."""
    return FaultRule(error=None, host=host, hang=True, release=release)


class FakeDriver(ComputeDriver):
    """An in-memory hypervisor with one node named after the host."""

    capabilities = Capabilities(supports_console_output=True, supports_vif_plugging_events=False)

    def __init__(self, settings: Settings, host: str) -> None:
        self.host = host
        self.vcpus = settings.fake_host_vcpus
        self.memory_mb = settings.fake_host_memory_mb
        self.local_gb = settings.fake_host_disk_gb
        self.spawn_delay = float(getattr(settings, "fake_spawn_delay", 0.0))
        self.snapshot_delay = float(getattr(settings, "fake_snapshot_delay", 0.0))
        # Kept in the state dir, as a hypervisor keeps its guests across a
        # restart of the compute service (fake_guests.py).
        state_dir = getattr(settings, "state_dir", None)
        self.instances = GuestTable(
            Path(state_dir) / "fake-hypervisor" / f"{host}.jsonl" if state_dir else None)
        self.faults: dict[str, list[FaultRule]] = defaultdict(list)
        self.plugged: dict[str, list[str]] = {}
        self.macs: dict[str, list[str]] = {}  # of the plugged VIFs, for diagnostics
        self.serial_ports: dict[str, FakeSerialPort] = {}
        self.snapshots: dict[str, bytes] = {}  # image id → the disk it uploaded
        # Moves: guests kept on a resize's source for a revert, guests about to
        # arrive by live migration, and an abort switch per running migration.
        self.resize_sources: dict[str, FakeInstance] = {}
        self.incoming: set[str] = set()
        # Assisted volume snapshots: (instance, volume) → its file chain,
        # base first, the file the guest writes to last.
        self.volume_chains: dict[tuple[str, str], list[str]] = {}
        self.migrating: dict[str, asyncio.Event] = {}
        # Set by a test to make spawns download their image through the image
        # service into a real per-host cache, as the libvirt driver does;
        # None (the default) skips downloads altogether.
        self.image_cache: ImageCache | None = None

    async def _check_fault(self, op: str, instance: dict[str, Any]) -> None:
        for rule in self.faults.get(op, ()):
            if rule.matches(self.host, instance):
                if rule.times is not None:
                    rule.times -= 1
                if rule.hang:
                    await (rule.release or asyncio.Event()).wait()  # set, or cancelled
                    if rule.release is not None:
                        continue
                assert rule.error is not None
                raise rule.error(instance)

    def _get(self, instance: dict[str, Any]) -> FakeInstance:
        found = self.instances.get(instance["uuid"])
        if found is None:
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        return found

    async def init_host(self, host: str) -> None:
        """The guests this host had when its previous process stopped."""
        self.instances.load()

    def _set_state(self, instance: dict[str, Any], state: PowerState) -> FakeInstance:
        fake = self._get(instance)
        fake.state = state
        self.instances.saved(fake)
        return fake

    def get_available_nodes(self) -> list[str]:
        return [self.host]

    async def get_available_resource(self, nodename: str) -> NodeResources:
        return NodeResources(hypervisor_hostname=nodename, vcpus=self.vcpus,
                             memory_mb=self.memory_mb, local_gb=self.local_gb,
                             hypervisor_type="fake", hypervisor_version=1000, cpu_arch="x86_64",
                             host_ip="127.0.0.1")

    async def spawn(self, context: Any, instance: dict[str, Any], image_meta: dict[str, Any],
                    injected_files: list[tuple[str, bytes]], admin_password: str | None,
                    allocations: Mapping[str, Any] | None, network_info: Sequence[VIF] | None,
                    block_device_info: Mapping[str, Any] | None = None) -> None:
        await self._check_fault("spawn", instance)
        if self.image_cache is not None and image_meta.get("id"):
            meta = await active_image(self.virtapi.image_service, image_meta["id"])
            async with self.image_cache.base(meta):
                pass
        if self.capabilities.supports_vif_plugging_events and self.virtapi is not None:
            async with self.virtapi.wait_for_vif_plugged(instance, network_info):
                await self.plug_vifs(instance, network_info)
        if self.spawn_delay:
            await asyncio.sleep(self.spawn_delay)
        ips = [ip["address"] for vif in (network_info or []) for sub in vif["network"]["subnets"]
               for ip in sub.get("ips", [])]
        fake = FakeInstance(instance["uuid"], instance.get("display_name", ""), PowerState.RUNNING,
                            image_ref=image_meta.get("id") or instance.get("image_ref") or "")
        # What a guest would print about itself, so the console shows what it got.
        fake.console.append(f"fake console of {instance['uuid']}")
        fake.console.append(f"fake: {instance.get('vcpus')} vcpus, {instance.get('memory_mb')} MiB, "
                            f"image {instance.get('image_ref') or 'none'}")
        fake.console.append(f"fake: hostname {instance.get('hostname') or ''}")
        fake.console.append(f"CIRRUS-BOOT-OK ip={','.join(ips)}")
        fake.volumes = _volumes_at_spawn(block_device_info)
        self.instances[instance["uuid"]] = fake
        self._plug(instance, network_info)

    async def destroy(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                      block_device_info: Mapping[str, Any] | None = None,
                      destroy_disks: bool = True) -> None:
        await self._check_fault("destroy", instance)
        self.instances.pop(instance["uuid"], None)
        self.plugged.pop(instance["uuid"], None)
        self.macs.pop(instance["uuid"], None)
        serial = self.serial_ports.pop(instance["uuid"], None)
        if serial is not None:
            await serial.close()

    async def power_on(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                       block_device_info: Mapping[str, Any] | None = None) -> None:
        await self._check_fault("power_on", instance)
        self._set_state(instance, PowerState.RUNNING)

    async def power_off(self, instance: dict[str, Any], timeout: float = 0,
                        retry_interval: float = 0) -> None:
        await self._check_fault("power_off", instance)
        self._set_state(instance, PowerState.SHUTDOWN)

    async def reboot(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                     reboot_type: str, block_device_info: Mapping[str, Any] | None = None) -> None:
        await self._check_fault("reboot", instance)
        fake = self._get(instance)
        fake.state = PowerState.RUNNING
        fake.console.append(f"rebooted ({reboot_type.lower()})")
        self.instances.saved(fake)

    def _plug(self, instance: dict[str, Any], network_info: Sequence[VIF] | None) -> None:
        self.plugged[instance["uuid"]] = [vif["id"] for vif in (network_info or [])]
        self.macs[instance["uuid"]] = [vif.get("address") or "" for vif in (network_info or [])]

    async def get_instance_diagnostics(self, instance: dict[str, Any]) -> Diagnostics:
        """What the fake guest has: its flavor's vCPUs and memory, one disk,
        a NIC per plugged VIF (the counters as an idle guest's). ``driver`` is
        "libvirt", as Nova's fake says: the API's schema names no fake."""
        fake = self._get(instance)
        await self._check_fault("get_instance_diagnostics", instance)
        memory = int(instance.get("memory_mb") or 0)
        return Diagnostics(
            state=STATE_NAMES[fake.state], driver="libvirt", hypervisor="fake",
            hypervisor_os="linux", uptime=int(time.monotonic() - fake.started),
            config_drive=bool(instance.get("config_drive")),
            memory_details=MemoryDiagnostics(maximum=memory, used=memory),
            cpu_details=[CpuDiagnostics(id=i, time=0, utilisation=0)
                         for i in range(int(instance.get("vcpus") or 1))],
            nic_details=[NicDiagnostics(mac_address=mac or None, rx_octets=0, rx_errors=0,
                                        rx_drop=0, rx_packets=0, tx_octets=0, tx_errors=0,
                                        tx_drop=0, tx_packets=0)
                         for mac in self.macs.get(fake.uuid, [])],
            disk_details=[DiskDiagnostics(read_bytes=0, read_requests=0, write_bytes=0,
                                          write_requests=0, errors_count=0)])

    async def get_info(self, instance: dict[str, Any]) -> InstanceInfo:
        fake = self._get(instance)
        return InstanceInfo(state=fake.state, internal_id=fake.uuid)

    async def get_console_output(self, context: Any, instance: dict[str, Any]) -> str:
        return "\n".join(self._get(instance).console) + "\n"

    async def get_serial_console(self, instance: dict[str, Any]) -> ConsoleSerial:
        fake = self._get(instance)
        port = self.serial_ports.get(fake.uuid)
        if port is None:
            port = self.serial_ports[fake.uuid] = FakeSerialPort(fake.console)
            await port.open()
        return ConsoleSerial(host="127.0.0.1", port=port.port)

    async def cleanup_host(self, host: str) -> None:
        await close_all(self.serial_ports)
        self.instances.close()

    async def snapshot(self, context: Any, instance: dict[str, Any], image_id: str,
                       update_task_state: UpdateTaskState) -> None:
        """A small raw "disk" naming the guest and its image, uploaded."""
        await self._check_fault("snapshot", instance)
        fake = self._get(instance)
        await update_task_state(TaskState.IMAGE_PENDING_UPLOAD, TaskState.IMAGE_SNAPSHOT)
        if self.snapshot_delay:
            await asyncio.sleep(self.snapshot_delay)
        disk = f"fake disk of {fake.uuid} from image {fake.image_ref}\n".encode()
        await update_task_state(TaskState.IMAGE_UPLOADING, TaskState.IMAGE_PENDING_UPLOAD)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "disk"
            path.write_bytes(disk)
            await self.virtapi.upload_image(context, image_id, path, "raw")
        self.snapshots[image_id] = disk

    async def list_instance_uuids(self) -> list[str]:
        return list(self.instances)

    # -- pause, suspend, rescue, password (issue #19) --------------------------------
    async def _to_state(self, op: str, instance: dict[str, Any], state: PowerState) -> FakeInstance:
        await self._check_fault(op, instance)
        return self._set_state(instance, state)

    async def pause(self, instance: dict[str, Any]) -> None:
        await self._to_state("pause", instance, PowerState.PAUSED)

    async def unpause(self, instance: dict[str, Any]) -> None:
        await self._to_state("unpause", instance, PowerState.RUNNING)

    async def suspend(self, context: Any, instance: dict[str, Any]) -> None:
        # As libvirt's managed save leaves it: memory on disk, the domain off.
        await self._to_state("suspend", instance, PowerState.SHUTDOWN)

    async def resume(self, context: Any, instance: dict[str, Any], network_info: Any,
                     block_device_info: dict[str, Any] | None = None) -> None:
        await self._to_state("resume", instance, PowerState.RUNNING)
        self._plug(instance, network_info)

    async def rescue(self, context: Any, instance: dict[str, Any], network_info: Any,
                     image_meta: dict[str, Any], rescue_password: str,
                     block_device_info: dict[str, Any] | None = None) -> None:
        fake = await self._to_state("rescue", instance, PowerState.RUNNING)
        fake.rescue_image = image_meta.get("id") or ""
        fake.console.append(f"rescued from {fake.rescue_image}")
        self.instances.saved(fake)

    async def unrescue(self, context: Any, instance: dict[str, Any]) -> None:
        fake = await self._to_state("unrescue", instance, PowerState.RUNNING)
        fake.rescue_image = None
        self.instances.saved(fake)

    async def set_admin_password(self, instance: dict[str, Any], new_pass: str) -> None:
        await self._check_fault("set_admin_password", instance)
        fake = self._get(instance)
        fake.admin_password = new_pass
        self.instances.saved(fake)

    # -- moves -------------------------------------------------------------------------
    async def migrate_disk_and_power_off(self, context: Any, instance: dict[str, Any],
                                         dest: str, network_info: Any) -> dict[str, Any]:
        await self._check_fault("migrate_disk_and_power_off", instance)
        guest = self.instances.pop(instance["uuid"], None) or self.resize_sources.get(
            instance["uuid"])
        if guest is None:
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        guest.state = PowerState.SHUTDOWN
        self.resize_sources[instance["uuid"]] = guest
        return {"disks": [f"{instance['uuid']}/disk"], "source": self.host}

    async def finish_migration(self, context: Any, instance: dict[str, Any],
                               disk_info: dict[str, Any], network_info: Any,
                               power_on: bool,
                               block_device_info: Mapping[str, Any] | None = None) -> None:
        await self._check_fault("finish_migration", instance)
        guest = FakeInstance(instance["uuid"], instance.get("display_name", ""),
                             PowerState.RUNNING if power_on else PowerState.SHUTDOWN)
        guest.volumes = _volumes_at_spawn(block_device_info)
        guest.console.append(f"migrated from {disk_info.get('source')}: "
                             f"{instance['vcpus']} vcpus, {instance['memory_mb']} MiB")
        self.instances[instance["uuid"]] = guest
        self._plug(instance, network_info)

    async def confirm_migration(self, context: Any, instance: dict[str, Any],
                                network_info: Any) -> None:
        await self._check_fault("confirm_migration", instance)
        self.resize_sources.pop(instance["uuid"], None)

    async def finish_revert_migration(self, context: Any, instance: dict[str, Any],
                                      network_info: Any, power_on: bool,
                                      block_device_info: Mapping[str, Any] | None = None) -> None:
        await self._check_fault("finish_revert_migration", instance)
        guest = self.resize_sources.pop(instance["uuid"], None)
        if guest is None:
            raise vexc.InstanceNotFound(instance_id=instance["uuid"])
        guest.state = PowerState.RUNNING if power_on else PowerState.SHUTDOWN
        guest.volumes = _volumes_at_spawn(block_device_info)
        self.instances[instance["uuid"]] = guest

    async def pre_live_migration(self, context: Any, instance: dict[str, Any],
                                 network_info: Any, block_migration: bool,
                                 block_device_info: Mapping[str, Any] | None = None
                                 ) -> dict[str, Any]:
        await self._check_fault("pre_live_migration", instance)
        self.incoming.add(instance["uuid"])
        return {"dest": self.host, "block_migration": block_migration,
                "volumes": _volumes_at_spawn(block_device_info)}

    async def live_migration(self, context: Any, instance: dict[str, Any], dest: str,
                             block_migration: bool, migrate_data: dict[str, Any]) -> None:
        self._get(instance)
        abort = self.migrating.setdefault(instance["uuid"], asyncio.Event())
        try:
            # A fault rule may hold the migration (``hold``) until a force
            # complete releases it; an abort ends it first.
            work = asyncio.ensure_future(self._check_fault("live_migration", instance))
            aborted = asyncio.ensure_future(abort.wait())
            done, _ = await asyncio.wait({work, aborted}, return_when=asyncio.FIRST_COMPLETED)
            for task in (work, aborted):
                task.cancel()
            if work not in done:
                raise vexc.LiveMigrationAborted(instance_uuid=instance["uuid"])
            work.result()
        finally:
            self.migrating.pop(instance["uuid"], None)
        self.instances.pop(instance["uuid"], None)
        self.plugged.pop(instance["uuid"], None)
        self.macs.pop(instance["uuid"], None)

    async def live_migration_abort(self, instance: dict[str, Any]) -> None:
        self.migrating.setdefault(instance["uuid"], asyncio.Event()).set()

    async def live_migration_force_complete(self, instance: dict[str, Any]) -> None:
        guest = self._get(instance)
        guest.state = PowerState.PAUSED  # as libvirt's pause: the copy converges
        self.instances.saved(guest)
        for rule in self.faults.get("live_migration", ()):
            if rule.release is not None:
                rule.release.set()

    async def post_live_migration_at_destination(self, context: Any, instance: dict[str, Any],
                                                 network_info: Any, power_state: int,
                                                 block_device_info: Mapping[str, Any] | None
                                                 = None) -> None:
        await self._check_fault("post_live_migration_at_destination", instance)
        self.incoming.discard(instance["uuid"])
        guest = FakeInstance(instance["uuid"], instance.get("display_name", ""),
                             PowerState(power_state))
        guest.volumes = _volumes_at_spawn(block_device_info)
        guest.console.append(f"live-migrated to {self.host}")
        self.instances[instance["uuid"]] = guest
        self._plug(instance, network_info)

    async def rollback_live_migration_at_destination(self, context: Any,
                                                     instance: dict[str, Any],
                                                     network_info: Any) -> None:
        self.incoming.discard(instance["uuid"])

    # -- volumes (issue 20): plugged per guest, faults "attach_volume"/"detach_volume"
    def get_volume_connector(self, instance: dict[str, Any]) -> dict[str, Any]:
        return {"host": self.host, "ip": "127.0.0.1", "platform": "x86_64",
                "os_type": "linux", "multipath": False}

    async def attach_volume(self, context: Any, connection_info: Mapping[str, Any],
                            instance: dict[str, Any], mountpoint: str,
                            disk_bus: str | None = None, device_type: str | None = None) -> None:
        await self._check_fault("attach_volume", instance)
        guest = self._get(instance)
        if mountpoint in guest.volumes:
            raise vexc.VolumeAttachFailed(volume_id=connection_info.get("serial", ""),
                                          reason=f"{mountpoint} is in use")
        guest.volumes[mountpoint] = dict(connection_info)
        self.instances.saved(guest)

    async def detach_volume(self, context: Any, connection_info: Mapping[str, Any],
                            instance: dict[str, Any], mountpoint: str) -> None:
        await self._check_fault("detach_volume", instance)
        guest = self.instances.get(instance["uuid"])
        if guest is not None:
            guest.volumes.pop(mountpoint, None)
            self.instances.saved(guest)

    async def swap_volume(self, context: Any, old_connection_info: Mapping[str, Any],
                          new_connection_info: Mapping[str, Any], instance: dict[str, Any],
                          mountpoint: str) -> None:
        await self._check_fault("swap_volume", instance)
        guest = self._get(instance)
        guest.volumes[mountpoint] = dict(new_connection_info)
        self.instances.saved(guest)

    # -- assisted volume snapshots: each volume's file chain kept as data (base
    # first, the active file last), faults "volume_snapshot_create"/"…_delete"
    def _volume_chain(self, instance: dict[str, Any], volume_id: str) -> list[str]:
        """The file chain of ``volume_id`` plugged in the guest (made on first use)."""
        for info in self._get(instance).volumes.values():
            data = info.get("data") or {}
            if (info.get("serial") or data.get("volume_id")) == volume_id:
                base = os.path.basename(str(data.get("device_path") or data.get("name") or
                                            f"volume-{volume_id}"))
                return self.volume_chains.setdefault((instance["uuid"], volume_id), [base])
        raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason="not attached to the guest")

    async def volume_snapshot_create(self, context: Any, instance: dict[str, Any],
                                     volume_id: str, create_info: Mapping[str, Any]) -> None:
        await self._check_fault("volume_snapshot_create", instance)
        chain = self._volume_chain(instance, volume_id)
        new_file = str(create_info.get("new_file") or "")
        if create_info.get("type") != "qcow2" or not new_file:
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id,
                                            reason="a qcow2 new_file is required")
        if new_file in chain:
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason=f"{new_file} exists")
        chain.append(new_file)

    async def volume_snapshot_delete(self, context: Any, instance: dict[str, Any],
                                     volume_id: str, snapshot_id: str,
                                     delete_info: Mapping[str, Any]) -> None:
        await self._check_fault("volume_snapshot_delete", instance)
        chain = self._volume_chain(instance, volume_id)
        if delete_info.get("type") != "qcow2":
            raise vexc.VolumeSnapshotFailed(volume_id=volume_id, reason=f"unknown delete_info "
                                            f"type {delete_info.get('type')!r}")
        chain[:] = _merged_chain(volume_id, chain, delete_info.get("file_to_merge"),
                                 delete_info.get("merge_target_file"))


def _merged_chain(volume_id: str, chain: list[str], to_merge: str | None,
                  target: str | None) -> list[str]:
    """``chain`` after Nova's merge: with no ``target`` a pull into the active
    file of everything above ``to_merge`` (None: the whole chain); else a
    commit of ``to_merge`` (not the active file) into ``target`` below it."""
    def fail(reason: str) -> vexc.VolumeSnapshotFailed:
        return vexc.VolumeSnapshotFailed(volume_id=volume_id, reason=reason)
    if target is None:
        if to_merge is None:
            return chain[-1:]
        if to_merge not in chain[:-1]:
            raise fail(f"{to_merge!r} is not below the active file")
        return chain[:chain.index(to_merge) + 1] + chain[-1:]
    if to_merge not in chain[:-1] or target not in chain:
        raise fail(f"{to_merge!r} cannot be committed into {target!r}")
    top, base = chain.index(to_merge), chain.index(target)
    if base >= top:
        raise fail(f"{target!r} is not below {to_merge!r}")
    return chain[:base + 1] + chain[top + 1:]


def _volumes_at_spawn(block_device_info: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The volumes a guest boots with: mountpoint → connection info."""
    return {bdm["device_name"]: dict(bdm["connection_info"])
            for bdm in (block_device_info or {}).get("block_device_mapping", [])
            if bdm.get("destination_type") == "volume" and bdm.get("connection_info")}
