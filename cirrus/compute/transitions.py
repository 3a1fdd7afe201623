"""Which states each server action accepts, as data (Nova's
``check_instance_state``): the API moves the instance to the action's task
state with one guarded save, or answers 409 naming the state that refused it.
The compute host finishes the transition with its own guarded save."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.compute.states import TaskState, VmState

A, S, E = VmState.ACTIVE, VmState.STOPPED, VmState.ERROR


@dataclass(frozen=True)
class Transition:
    """One action's accepted states and the task state it starts with."""

    method: str  # named in the 409 (Nova's method name)
    action: str  # the instance action recorded (``GET …/os-instance-actions``)
    vm_states: tuple[VmState, ...]
    task_state: TaskState | None  # set by the API; None: the action sets none
    task_states: tuple[TaskState | None, ...] = (None,)


# snapshot, backup and shelve take a guest in any of these (Nova's check_instance_state)
IMAGING = (A, S, VmState.PAUSED, VmState.SUSPENDED)
SOFT_REBOOTING = (TaskState.REBOOTING, TaskState.REBOOT_PENDING, TaskState.REBOOT_STARTED)

TRANSITIONS: dict[str, Transition] = {
    "start": Transition("start", "start", (S,), TaskState.POWERING_ON),
    "stop": Transition("stop", "stop", (A, E), TaskState.POWERING_OFF),
    "reboot_soft": Transition("reboot", "reboot", (A,), TaskState.REBOOTING),
    "reboot_hard": Transition("reboot", "reboot", (A, S, E), TaskState.REBOOTING_HARD,
                              (None, *SOFT_REBOOTING)),
    # images (rebuild.py, snapshot.py, shelve.py)
    "rebuild": Transition("rebuild", "rebuild", (A, S, E), TaskState.REBUILDING),
    "snapshot": Transition("snapshot", "createImage", IMAGING, TaskState.IMAGE_SNAPSHOT_PENDING),
    "backup": Transition("backup", "createBackup", IMAGING, TaskState.IMAGE_BACKUP),
    "shelve": Transition("shelve", "shelve", IMAGING, TaskState.SHELVING),
    "shelve_offload": Transition("shelve_offload", "shelveOffload", (VmState.SHELVED,),
                                 TaskState.SHELVING_OFFLOADING),
    "unshelve": Transition("unshelve", "unshelve",
                           (VmState.SHELVED, VmState.SHELVED_OFFLOADED), TaskState.UNSHELVING),
}

# -- pause, suspend, rescue, changePassword, restore (issue #19; Nova's
# check_instance_state of each, cirrus/compute/api.py's state actions) --------
P, SU, RE, SD = VmState.PAUSED, VmState.SUSPENDED, VmState.RESCUED, VmState.SOFT_DELETED
TRANSITIONS.update({
    "pause": Transition("pause", "pause", (A,), TaskState.PAUSING),
    "unpause": Transition("unpause", "unpause", (P,), TaskState.UNPAUSING),
    "suspend": Transition("suspend", "suspend", (A,), TaskState.SUSPENDING),
    "resume": Transition("resume", "resume", (SU,), TaskState.RESUMING),
    "rescue": Transition("rescue", "rescue", (A, S, E), TaskState.RESCUING),
    "unrescue": Transition("unrescue", "unrescue", (RE,), TaskState.UNRESCUING),
    "changePassword": Transition("changePassword", "changePassword", (A,),
                                 TaskState.UPDATING_PASSWORD),
    "restore": Transition("restore", "restore", (SD,), TaskState.RESTORING),
})

# Moves (resize, migrate, live migration, evacuation): Nova's check_instance_state.
TRANSITIONS.update({
    "resize": Transition("resize", "resize", (A, S), TaskState.RESIZE_PREP),
    "migrate": Transition("migrate", "migrate", (A, S), TaskState.RESIZE_PREP),
    "confirm_resize": Transition("confirmResize", "confirmResize", (VmState.RESIZED,), None),
    "revert_resize": Transition("revertResize", "revertResize", (VmState.RESIZED,),
                                TaskState.RESIZE_REVERTING),
    "live_migrate": Transition("os-migrateLive", "live-migration", (A, VmState.PAUSED),
                               TaskState.MIGRATING),
    "evacuate": Transition("evacuate", "evacuate", (A, S, E), TaskState.REBUILDING),
})

# -- volumes (issue 20; Nova's check_instance_state of attach_volume and
# detach_volume; no task state: the instance lock on the host orders them) ----
VOLUME_STATES = (A, S, P, VmState.RESIZED)
# Also shelved: an offloaded server's volume is recorded now, plugged at unshelve.
ATTACH_STATES = (*VOLUME_STATES, VmState.SHELVED, VmState.SHELVED_OFFLOADED)
TRANSITIONS.update({
    "attach_volume": Transition("attach_volume", "attach_volume", ATTACH_STATES, None),
    "detach_volume": Transition("detach_volume", "detach_volume", ATTACH_STATES, None),
    "swap_volume": Transition("swap_volume", "swap_volume", (*VOLUME_STATES, SU), None),
})
