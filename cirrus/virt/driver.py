"""The hypervisor seam: ``ComputeDriver`` and how a driver is chosen.

A driver gets plain data: an ``instance`` dict (the instances row: uuid, name,
vcpus, memory_mb, root_gb, flavor, image_ref, metadata, user_data, key_data,
config_drive, ...), ``image_meta`` (the image record incl. properties),
``network_info`` (a :class:`cirrus.network.model.NetworkInfo`, list of VIF
dicts) and ``block_device_info``. It never touches the database.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Awaitable, Protocol

from cirrus.compute.states import PowerState, TaskState
from cirrus.virt import exception as vexc


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


@dataclass
class Capabilities:
    """Optional features, as data."""

    supports_console_output: bool = True
    supports_vif_plugging_events: bool = False


class ComputeDriver(abc.ABC):
    """What compute needs from a hypervisor. All methods are coroutines."""

    capabilities = Capabilities()
    # Set by compute: ``virtapi.wait_for_vif_plugged(instance, network_info)``
    # (cirrus.compute.virtapi.VirtAPI) waits for network-vif-plugged events.
    virtapi: Any = None

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
                    allocations: dict[str, Any], network_info: Any,
                    block_device_info: dict[str, Any] | None = None) -> None:
        """Create and start the guest. On return it is running.

        Raises :class:`cirrus.virt.exception.InstanceSpawnError` (reschedulable)
        or an image/flavor error (abort) on failure; leaves nothing behind.
        """

    @abc.abstractmethod
    async def destroy(self, context: Any, instance: dict[str, Any], network_info: Any,
                      block_device_info: dict[str, Any] | None = None,
                      destroy_disks: bool = True) -> None:
        """Stop and remove the guest, unplug VIFs, remove disks. Idempotent."""

    @abc.abstractmethod
    async def power_on(self, context: Any, instance: dict[str, Any], network_info: Any,
                       block_device_info: dict[str, Any] | None = None) -> None:
        """Start a stopped guest; on return it is running."""

    @abc.abstractmethod
    async def power_off(self, instance: dict[str, Any], timeout: float = 0,
                        retry_interval: float = 0) -> None:
        """Stop the guest: graceful for ``timeout`` seconds, then forced."""

    @abc.abstractmethod
    async def reboot(self, context: Any, instance: dict[str, Any], network_info: Any,
                     reboot_type: str, block_device_info: dict[str, Any] | None = None) -> None:
        """``SOFT`` or ``HARD`` reboot; on return the guest is running."""

    @abc.abstractmethod
    async def get_info(self, instance: dict[str, Any]) -> InstanceInfo:
        """The guest's power state; :class:`InstanceNotFound` if there is none."""

    @abc.abstractmethod
    async def get_console_output(self, context: Any, instance: dict[str, Any]) -> str:
        """The serial console log so far."""

    async def plug_vifs(self, instance: dict[str, Any], network_info: Any) -> None:
        """Attach the guest's VIFs to the host network."""

    async def unplug_vifs(self, instance: dict[str, Any], network_info: Any) -> None:
        """Detach the guest's VIFs from the host network."""

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

    async def list_instance_uuids(self) -> list[str]:
        """Instances the hypervisor knows (for periodic sync)."""
        return []
