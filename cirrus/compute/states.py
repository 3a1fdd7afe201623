"""Instance states from the seeds, in one module.

``vm_state`` is what the instance is; ``task_state`` is what is being done to
it; ``power_state`` is what the hypervisor reports.
"""
from __future__ import annotations

import enum


class VmState(str, enum.Enum):
    BUILDING = "building"
    ACTIVE = "active"
    STOPPED = "stopped"
    PAUSED = "paused"
    SUSPENDED = "suspended"
    RESCUED = "rescued"
    RESIZED = "resized"
    ERROR = "error"
    DELETED = "deleted"
    SOFT_DELETED = "soft-delete"
    # shelve (cirrus/compute/shelve.py)
    SHELVED = "shelved"
    SHELVED_OFFLOADED = "shelved_offloaded"


class TaskState(str, enum.Enum):
    SCHEDULING = "scheduling"
    NETWORKING = "networking"
    BLOCK_DEVICE_MAPPING = "block_device_mapping"
    SPAWNING = "spawning"
    POWERING_ON = "powering-on"
    POWERING_OFF = "powering-off"
    REBOOTING = "rebooting"
    REBOOT_PENDING = "reboot_pending"
    REBOOT_STARTED = "reboot_started"
    REBOOTING_HARD = "rebooting_hard"
    REBOOT_PENDING_HARD = "reboot_pending_hard"
    REBOOT_STARTED_HARD = "reboot_started_hard"
    REBUILDING = "rebuilding"
    DELETING = "deleting"
    # pause, suspend, rescue, changePassword, soft delete (issue #19)
    PAUSING = "pausing"
    UNPAUSING = "unpausing"
    SUSPENDING = "suspending"
    RESUMING = "resuming"
    RESCUING = "rescuing"
    UNRESCUING = "unrescuing"
    UPDATING_PASSWORD = "updating_password"
    SOFT_DELETING = "soft-deleting"
    RESTORING = "restoring"
    # rebuild, snapshot, backup, shelve (imageverbs)
    REBUILD_BLOCK_DEVICE_MAPPING = "rebuild_block_device_mapping"
    REBUILD_SPAWNING = "rebuild_spawning"
    IMAGE_SNAPSHOT = "image_snapshot"
    IMAGE_SNAPSHOT_PENDING = "image_snapshot_pending"
    IMAGE_PENDING_UPLOAD = "image_pending_upload"
    IMAGE_UPLOADING = "image_uploading"
    IMAGE_BACKUP = "image_backup"
    SHELVING = "shelving"
    SHELVING_IMAGE_PENDING_UPLOAD = "shelving_image_pending_upload"
    SHELVING_IMAGE_UPLOADING = "shelving_image_uploading"
    SHELVING_OFFLOADING = "shelving_offloading"
    UNSHELVING = "unshelving"
    # moves (resize, migrate, live migration, evacuation)
    RESIZE_PREP = "resize_prep"
    RESIZE_MIGRATING = "resize_migrating"
    RESIZE_MIGRATED = "resize_migrated"
    RESIZE_FINISH = "resize_finish"
    RESIZE_REVERTING = "resize_reverting"
    RESIZE_CONFIRMING = "resize_confirming"
    MIGRATING = "migrating"


class PowerState(enum.IntEnum):
    NOSTATE = 0
    RUNNING = 1
    PAUSED = 3
    SHUTDOWN = 4
    CRASHED = 6
    SUSPENDED = 7


# The API's server "status", from (vm_state, task_state), as Nova maps it.
REBUILD_TASKS = (TaskState.REBUILDING, TaskState.REBUILD_BLOCK_DEVICE_MAPPING,
                 TaskState.REBUILD_SPAWNING)


def status_of(vm_state: str, task_state: str | None) -> str:
    """The ``status`` a client sees for an instance."""
    if task_state in REBUILD_TASKS and vm_state in (VmState.ACTIVE, VmState.STOPPED,
                                                    VmState.ERROR):
        return "REBUILD"  # Nova's _STATE_MAP for each of these vm states
    moving = _MOVE_STATUS.get((vm_state, task_state))
    if moving is not None:
        return moving
    if vm_state == VmState.BUILDING:
        return "BUILD"
    if vm_state == VmState.ACTIVE:
        if task_state in (TaskState.REBOOTING, TaskState.REBOOT_PENDING, TaskState.REBOOT_STARTED):
            return "REBOOT"
        if task_state in (TaskState.REBOOTING_HARD, TaskState.REBOOT_PENDING_HARD,
                          TaskState.REBOOT_STARTED_HARD):
            return "HARD_REBOOT"
        if task_state == TaskState.REBUILDING:
            return "REBUILD"
        if task_state == TaskState.UPDATING_PASSWORD:
            return "PASSWORD"
        return "ACTIVE"
    return _STATUS.get(vm_state, "UNKNOWN")


# The status of the other vm_states, whatever their task_state.
_STATUS: dict[str, str] = {
    VmState.STOPPED: "SHUTOFF", VmState.PAUSED: "PAUSED", VmState.SUSPENDED: "SUSPENDED",
    VmState.RESCUED: "RESCUE",
    VmState.RESIZED: "VERIFY_RESIZE", VmState.ERROR: "ERROR", VmState.DELETED: "DELETED",
    VmState.SOFT_DELETED: "SOFT_DELETED",
    VmState.SHELVED: "SHELVED", VmState.SHELVED_OFFLOADED: "SHELVED_OFFLOADED",
}


# Moves: (vm_state, task_state) → status, as Nova's state map has them.
_RESIZING = (TaskState.RESIZE_PREP, TaskState.RESIZE_MIGRATING, TaskState.RESIZE_MIGRATED,
             TaskState.RESIZE_FINISH)
_MOVE_STATUS: dict[tuple[str, str | None], str] = {
    **{(vm.value, t.value): "RESIZE" for vm in (VmState.ACTIVE, VmState.STOPPED)
       for t in _RESIZING},
    (VmState.ACTIVE.value, TaskState.MIGRATING.value): "MIGRATING",
    (VmState.RESIZED.value, TaskState.RESIZE_REVERTING.value): "REVERT_RESIZE",
    **{(vm.value, t.value): "REBUILD"
       for vm in (VmState.ACTIVE, VmState.STOPPED, VmState.ERROR)
       for t in (TaskState.REBUILDING, TaskState.REBUILD_SPAWNING)},
}
