"""The hypervisor seam: ``ComputeDriver`` and how a driver is chosen.

A driver gets plain data: an ``instance`` dict (the instances row: uuid, name,
vcpus, memory_mb, root_gb, flavor, image_ref, metadata, user_data, key_data,
config_drive, ...), ``image_meta`` (the image record incl. properties),
``network_info`` (a :class:`cirrus.network.model.NetworkInfo`, list of VIF
dicts) and ``block_device_info``. It never touches the database.
"""
from __future__ import annotations

import abc
import os
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Mapping, NoReturn, Protocol, Sequence

from cirrus.compute.states import PowerState, TaskState
from cirrus.config import Settings
from cirrus.network.model import VIF
from cirrus.virt import exception as vexc
from cirrus.virt.diagnostics import Diagnostics, legacy


def _read_proc_uptime() -> float:
    with open("/proc/uptime", encoding="ascii") as f:
        return float(f.read().split()[0])


def uptime_line(seconds: float, load: tuple[float, float, float],
                now: time.struct_time) -> str:
    """``uptime``'s line: " 18:41:06 up 3 days,  4:05,  0 users,  load average: …"."""
    minutes = int(seconds) // 60
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    since = f"{days} day{'s' if days != 1 else ''}, " if days else ""
    return (f" {time.strftime('%H:%M:%S', now)} up {since}{hours:2d}:{mins:02d},  0 users,  "
            f"load average: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}")


class UpdateTaskState(Protocol):
    """Compute's guarded task-state save, handed to a driver's ``snapshot``."""

    def __call__(self, task_state: TaskState, expected_state: TaskState) -> Awaitable[None]: ...


@dataclass
class InstanceInfo:
    """What the hypervisor says about one instance."""

    state: PowerState
    internal_id: str | None = None


@dataclass
class NodeResources:
    """One node's totals, for the resource tracker's compute_nodes record."""

    hypervisor_hostname: str
    vcpus: int
    memory_mb: int
    local_gb: int
    hypervisor_type: str
    hypervisor_version: int = 1
    cpu_arch: str = "x86_64"
    host_ip: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ConsoleSerial:
    """Where a guest's serial port listens (a TCP socket on its host)."""

    host: str
    port: int


@dataclass
class Capabilities:
    """Optional features, as data."""

    supports_console_output: bool = True
    supports_vif_plugging_events: bool = False
    # Keeps downloaded images per host: compute runs the image cache manager.
    has_imagecache: bool = False


class ComputeDriver(abc.ABC):
    """What compute needs from a hypervisor. All methods are coroutines."""

    capabilities = Capabilities()
    # Set by compute: ``virtapi.wait_for_vif_plugged(instance, network_info)``
    # (cirrus.compute.virtapi.VirtAPI) waits for network-vif-plugged events.
    virtapi: Any = None

    def __init__(self, settings: Settings, host: str) -> None:
        """Every driver is made from the settings and the host it serves
        (``cirrus.virt.load_compute_driver``)."""

    async def init_host(self, host: str) -> None:
        """Called once before the compute service starts taking work.

        Raises :class:`cirrus.virt.exception.HypervisorUnavailable` with one
        clear message when the hypervisor cannot be reached.
        """

    async def cleanup_host(self, host: str) -> None:
        """Called when the compute service stops."""

    @abc.abstractmethod
    def get_available_nodes(self) -> list[str]:
        """Node names this driver manages on this host (usually one)."""

    @abc.abstractmethod
    async def get_available_resource(self, nodename: str) -> NodeResources:
        """Totals of ``nodename``."""

    @abc.abstractmethod
    async def spawn(self, context: Any, instance: dict[str, Any], image_meta: dict[str, Any],
                    injected_files: list[tuple[str, bytes]], admin_password: str | None,
                    allocations: Mapping[str, Any] | None, network_info: Sequence[VIF] | None,
                    block_device_info: Mapping[str, Any] | None = None) -> None:
        """Create and start the guest. On return it is running.

        ``allocations``: the claim held for it on this node (None: none is held).

        Raises :class:`cirrus.virt.exception.InstanceSpawnError` (reschedulable)
        or an image/flavor error (abort) on failure; leaves nothing behind.
        """

    @abc.abstractmethod
    async def destroy(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                      block_device_info: Mapping[str, Any] | None = None,
                      destroy_disks: bool = True) -> None:
        """Stop and remove the guest, unplug VIFs, remove disks. Idempotent."""

    @abc.abstractmethod
    async def power_on(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                       block_device_info: Mapping[str, Any] | None = None) -> None:
        """Start a stopped guest; on return it is running."""

    @abc.abstractmethod
    async def power_off(self, instance: dict[str, Any], timeout: float = 0,
                        retry_interval: float = 0) -> None:
        """Stop the guest: graceful for ``timeout`` seconds, then forced."""

    @abc.abstractmethod
    async def reboot(self, context: Any, instance: dict[str, Any], network_info: Sequence[VIF] | None,
                     reboot_type: str, block_device_info: Mapping[str, Any] | None = None) -> None:
        """``SOFT`` or ``HARD`` reboot; on return the guest is running."""

    @abc.abstractmethod
    async def get_info(self, instance: dict[str, Any]) -> InstanceInfo:
        """The guest's power state; :class:`InstanceNotFound` if there is none."""

    @abc.abstractmethod
    async def get_console_output(self, context: Any, instance: dict[str, Any]) -> str:
        """The serial console log so far."""

    async def get_serial_console(self, instance: dict[str, Any]) -> ConsoleSerial:
        """Where the running guest's serial port accepts a connection.

        Raises :class:`cirrus.virt.exception.ConsoleTypeUnavailable` when the
        driver has none, InstanceNotFound when there is no such guest."""
        from cirrus.virt.exception import ConsoleTypeUnavailable

        raise ConsoleTypeUnavailable(console_type="serial")

    async def get_instance_diagnostics(self, instance: dict[str, Any]) -> Diagnostics:
        """The guest's diagnostics in 2.48's standard format. Raises
        InstanceNotFound when there is no such guest, DriverNotImplemented
        (501) by default."""
        raise vexc.DriverNotImplemented(operation="get_instance_diagnostics")

    async def get_diagnostics(self, instance: dict[str, Any]) -> dict[str, int]:
        """The flat, hypervisor-specific counters of before 2.48. This default
        flattens :meth:`get_instance_diagnostics`, naming disks as a libvirt
        guest's (``vda``, ``vdb``, …) and NICs by their order (``nic0``, …)."""
        diags = await self.get_instance_diagnostics(instance)
        disks = [f"vd{chr(ord('a') + i)}" for i in range(len(diags.disk_details))]
        return legacy(diags, disks, [f"nic{i}" for i in range(len(diags.nic_details))])

    async def plug_vifs(self, instance: dict[str, Any], network_info: Sequence[VIF] | None) -> None:
        """Attach the guest's VIFs to the host network."""

    async def unplug_vifs(self, instance: dict[str, Any], network_info: Sequence[VIF] | None) -> None:
        """Detach the guest's VIFs from the host network."""

    async def get_host_uptime(self) -> str:
        """The host's ``uptime`` line (Nova's os-hypervisors uptime). This
        default reads the machine the driver runs on, which is the host for
        libvirt and for the fake driver's simulated hosts alike."""
        return uptime_line(_read_proc_uptime(), os.getloadavg(), time.localtime())

    def deallocate_networks_on_reschedule(self, instance: dict[str, Any]) -> bool:
        """Whether ports must be released before a reschedule (seed 004)."""
        return True

    # -- images (snapshot.py, shelve.py) ---------------------------------------------
    async def snapshot(self, context: Any, instance: dict[str, Any], image_id: str,
                       update_task_state: UpdateTaskState) -> None:
        """Upload the guest's root disk to the queued image ``image_id``
        (through ``virtapi.upload_image``), calling ``update_task_state`` with
        IMAGE_PENDING_UPLOAD (expecting IMAGE_SNAPSHOT) before it reads the
        disk and IMAGE_UPLOADING (expecting IMAGE_PENDING_UPLOAD) before it
        uploads. On return the image is active; the guest runs as before.

        Raises :class:`cirrus.virt.exception.InstanceNotFound` without a guest,
        :class:`cirrus.virt.exception.NotSupportedByDriver` by default."""
        raise vexc.NotSupportedByDriver(operation="snapshot")

    async def manage_image_cache(self, context: Any, all_instances: list[dict[str, Any]]) -> None:
        """Age out the cached images none of ``all_instances`` (this host's,
        each with at least ``uuid`` and ``image_ref``) uses (Nova's image
        cache manager pass). Called only when ``capabilities.has_imagecache``."""

    async def list_instance_uuids(self) -> list[str]:
        """Instances the hypervisor knows (for periodic sync)."""
        return []

    # -- pause, suspend, rescue, password (issue #19): optional ---------------------
    # A driver without one raises DriverNotImplemented (501 where the API waits
    # for the answer; a fault otherwise).
    async def pause(self, instance: dict[str, Any]) -> None:
        """Freeze the running guest in memory; on return its power state is PAUSED."""
        raise vexc.DriverNotImplemented(operation="pause")

    async def unpause(self, instance: dict[str, Any]) -> None:
        """Let a paused guest run again; on return it is RUNNING."""
        raise vexc.DriverNotImplemented(operation="unpause")

    async def suspend(self, context: Any, instance: dict[str, Any]) -> None:
        """Save the guest's memory to disk and stop it; on return it is SHUTDOWN
        (or SUSPENDED) and :meth:`resume` brings it back where it was."""
        raise vexc.DriverNotImplemented(operation="suspend")

    async def resume(self, context: Any, instance: dict[str, Any], network_info: Any,
                     block_device_info: dict[str, Any] | None = None) -> None:
        """Restore a suspended guest, its VIFs plugged; on return it is RUNNING."""
        raise vexc.DriverNotImplemented(operation="resume")

    async def rescue(self, context: Any, instance: dict[str, Any], network_info: Any,
                     image_meta: dict[str, Any], rescue_password: str,
                     block_device_info: dict[str, Any] | None = None) -> None:
        """Boot the (stopped) guest from ``image_meta``'s image with its own disk
        attached second; on return the rescue guest is running and
        :meth:`unrescue` can bring back the original."""
        raise vexc.DriverNotImplemented(operation="rescue")

    async def unrescue(self, context: Any, instance: dict[str, Any]) -> None:
        """Drop the rescue guest and boot the original one; on return it is RUNNING."""
        raise vexc.DriverNotImplemented(operation="unrescue")

    async def set_admin_password(self, instance: dict[str, Any], new_pass: str) -> None:
        """Set the guest's admin password (through a guest agent). Raises
        InstanceAgentNotEnabled when the guest has no agent to do it."""
        raise vexc.DriverNotImplemented(operation="set_admin_password")

    # -- moves (resize, cold and live migration, evacuation) ----------------------------
    # Optional: the defaults raise MoveNotSupported. The instance dicts carry
    # the flavor the guest should have afterwards (vcpus, memory_mb, root_gb).
    def _unsupported(self, operation: str) -> NoReturn:
        from cirrus.virt import exception as vexc

        raise vexc.MoveNotSupported(driver=type(self).__name__, operation=operation)

    async def migrate_disk_and_power_off(self, context: Any, instance: dict[str, Any],
                                         dest: str, network_info: Any) -> dict[str, Any]:
        """Stop the guest and send its disks to ``dest``; the source keeps them
        until :meth:`confirm_migration` (a revert needs them). Returns what
        :meth:`finish_migration` on ``dest`` needs (disk info)."""
        self._unsupported("resize")

    async def finish_migration(self, context: Any, instance: dict[str, Any],
                               disk_info: dict[str, Any], network_info: Any,
                               power_on: bool,
                               block_device_info: Mapping[str, Any] | None = None) -> None:
        """On the destination: the guest made from the migrated disks, with the
        instance's (new) flavor, running if ``power_on``, with the volumes of
        ``block_device_info`` (their connection info for this host)."""
        self._unsupported("resize")

    async def confirm_migration(self, context: Any, instance: dict[str, Any],
                                network_info: Any) -> None:
        """On the source: what was kept for a revert is removed. Idempotent."""
        self._unsupported("resize")

    async def finish_revert_migration(self, context: Any, instance: dict[str, Any],
                                      network_info: Any, power_on: bool,
                                      block_device_info: Mapping[str, Any] | None = None) -> None:
        """On the source: the kept guest back, with its old flavor, running if
        ``power_on``, with the volumes of ``block_device_info`` (re-exported to
        this host)."""
        self._unsupported("resize")

    async def pre_live_migration(self, context: Any, instance: dict[str, Any],
                                 network_info: Any, block_migration: bool,
                                 block_device_info: Mapping[str, Any] | None = None
                                 ) -> dict[str, Any]:
        """On the destination, before the source starts: disks, volumes (their
        connection info for this host in ``block_device_info``) and VIFs ready
        for the incoming guest. Returns data for :meth:`live_migration`."""
        self._unsupported("live migration")

    async def live_migration(self, context: Any, instance: dict[str, Any], dest: str,
                             block_migration: bool, migrate_data: dict[str, Any]) -> None:
        """Move the running guest to ``dest``; on return it runs there and not
        here. Raises LiveMigrationAborted after :meth:`live_migration_abort`,
        another error on failure (the guest then still runs here)."""
        self._unsupported("live migration")

    async def live_migration_abort(self, instance: dict[str, Any]) -> None:
        """Stop a running :meth:`live_migration` (it raises LiveMigrationAborted)."""
        self._unsupported("live migration abort")

    async def live_migration_force_complete(self, instance: dict[str, Any]) -> None:
        """Make a running :meth:`live_migration` converge (pause the guest)."""
        self._unsupported("live migration force complete")

    async def post_live_migration_at_destination(self, context: Any, instance: dict[str, Any],
                                                 network_info: Any, power_state: int,
                                                 block_device_info: Mapping[str, Any] | None
                                                 = None) -> None:
        """On the destination after the move: the guest is this host's now
        (with the volumes of ``block_device_info``)."""
        self._unsupported("live migration")

    async def rollback_live_migration_at_destination(self, context: Any,
                                                     instance: dict[str, Any],
                                                     network_info: Any) -> None:
        """On the destination after a failed move: what pre_live_migration made
        is gone. Idempotent."""
        self._unsupported("live migration")

    # -- volumes (issue 20) ------------------------------------------------------------
    # Optional: the defaults raise DriverNotImplemented. ``connection_info`` is
    # what block storage's ``attachment_update`` returned for this host's
    # connector (cirrus.volume.cinder.ConnectionInfo).
    def get_volume_connector(self, instance: dict[str, Any]) -> dict[str, Any]:
        """This host as block storage needs to know it to export a volume to it
        (os-brick's connector properties: host, ip, platform, os_type, multipath)."""
        raise vexc.DriverNotImplemented(operation="get_volume_connector")

    async def attach_volume(self, context: Any, connection_info: Mapping[str, Any],
                            instance: dict[str, Any], mountpoint: str,
                            disk_bus: str | None = None, device_type: str | None = None) -> None:
        """Plug the volume into the guest at ``mountpoint`` (``/dev/vdb``): live
        into a running guest and into its persistent definition. Raises
        VolumeAttachFailed, the guest unchanged."""
        raise vexc.DriverNotImplemented(operation="attach_volume")

    async def detach_volume(self, context: Any, connection_info: Mapping[str, Any],
                            instance: dict[str, Any], mountpoint: str) -> None:
        """Unplug the volume at ``mountpoint``; returns once the guest has let
        it go (bounded wait). A volume not attached is not an error."""
        raise vexc.DriverNotImplemented(operation="detach_volume")

    async def swap_volume(self, context: Any, old_connection_info: Mapping[str, Any],
                          new_connection_info: Mapping[str, Any], instance: dict[str, Any],
                          mountpoint: str) -> None:
        """Replace the volume at ``mountpoint`` by another, its data copied."""
        raise vexc.DriverNotImplemented(operation="swap_volume")

    async def volume_snapshot_create(self, context: Any, instance: dict[str, Any],
                                     volume_id: str, create_info: Mapping[str, Any]) -> None:
        """Snapshot attached file-backed volume ``volume_id`` externally
        (Nova's assisted snapshot): a qcow2 overlay ``create_info["new_file"]``
        (beside the volume's active file, backed by it) becomes the file the
        guest writes to; the old one is the snapshot. Raises
        VolumeSnapshotFailed, the guest's disk unchanged."""
        raise vexc.DriverNotImplemented(operation="volume_snapshot_create")

    async def volume_snapshot_delete(self, context: Any, instance: dict[str, Any],
                                     volume_id: str, snapshot_id: str,
                                     delete_info: Mapping[str, Any]) -> None:
        """Merge ``delete_info["file_to_merge"]`` out of the volume's chain:
        into ``merge_target_file`` (a commit) or, when that is None, into the
        active file (a pull of its backing data). Raises VolumeSnapshotFailed,
        the chain unchanged."""
        raise vexc.DriverNotImplemented(operation="volume_snapshot_delete")
