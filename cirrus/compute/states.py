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
    RESIZED = "resized"
    ERROR = "error"
    DELETED = "deleted"
    SOFT_DELETED = "soft-delete"


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
    # moves (resize, migrate, live migration, evacuation)
    RESIZE_PREP = "resize_prep"
    RESIZE_MIGRATING = "resize_migrating"
    RESIZE_MIGRATED = "resize_migrated"
    RESIZE_FINISH = "resize_finish"
    RESIZE_REVERTING = "resize_reverting"
    RESIZE_CONFIRMING = "resize_confirming"
    MIGRATING = "migrating"
    REBUILD_SPAWNING = "rebuild_spawning"


class PowerState(enum.IntEnum):
    NOSTATE = 0
    RUNNING = 1
    PAUSED = 3
    SHUTDOWN = 4
    CRASHED = 6
    SUSPENDED = 7


# The API's server "status", from (vm_state, task_state), as Nova maps it.
def status_of(vm_state: str, task_state: str | None) -> str:
    """The ``status`` a client sees for an instance."""
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
        return "ACTIVE"
    return _STATUS.get(vm_state, "UNKNOWN")


# The status of the other vm_states, whatever their task_state.
_STATUS: dict[str, str] = {
    VmState.STOPPED: "SHUTOFF", VmState.PAUSED: "PAUSED", VmState.SUSPENDED: "SUSPENDED",
    VmState.RESIZED: "VERIFY_RESIZE", VmState.ERROR: "ERROR", VmState.DELETED: "DELETED",
    VmState.SOFT_DELETED: "SOFT_DELETED",
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
