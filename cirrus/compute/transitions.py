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


SOFT_REBOOTING = (TaskState.REBOOTING, TaskState.REBOOT_PENDING, TaskState.REBOOT_STARTED)

TRANSITIONS: dict[str, Transition] = {
    "start": Transition("start", "start", (S,), TaskState.POWERING_ON),
    "stop": Transition("stop", "stop", (A, E), TaskState.POWERING_OFF),
    "reboot_soft": Transition("reboot", "reboot", (A,), TaskState.REBOOTING),
    "reboot_hard": Transition("reboot", "reboot", (A, S, E), TaskState.REBOOTING_HARD,
                              (None, *SOFT_REBOOTING)),
}

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
