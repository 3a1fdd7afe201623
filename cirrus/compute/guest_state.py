"""The last step every guest-state verb shares (pause, suspend, rescue, soft
delete, …): the hypervisor's power state saved with the verb's new vm_state,
the task state cleared, guarded by the task state the verb ran under."""
from __future__ import annotations

from typing import Any

from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.virt.driver import ComputeDriver


async def save_guest_state(driver: ComputeDriver, store: InstanceStore, instance: Instance,
                           vm_state: VmState, expected: TaskState,
                           **values: Any) -> None:
    """``vm_state`` and the guest's power state saved, the task done, plus
    ``values``; UnexpectedTaskStateError if the task state is no longer ``expected``."""
    info = await driver.get_info(instance)
    await store.save(instance["uuid"], {"power_state": int(info.state), "vm_state": vm_state,
                                        "task_state": None, **values},
                     expected_task_state=expected)
