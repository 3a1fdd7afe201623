"""Running one action on an instance of this host, recorded the same way for
every verb (Nova's ``wrap_instance_event``, ``wrap_instance_fault``,
``reverts_task_state`` and the start/end/error notifications, in one place).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Awaitable, Callable

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.outcomes import ACTION_OUTCOMES, Outcome, outcome_of
from cirrus.compute.states import VmState
from cirrus.compute.store import Instance, InstanceStore, finish_action
from cirrus.context import RequestContext
from cirrus.exception import CirrusException
from cirrus.notifications import Notifier
from cirrus.utils import KeyedLocks

LOG = logging.getLogger(__name__)
Body = Callable[[Instance], Awaitable[None]]


@dataclass(frozen=True)
class ActionSpec:
    """How one verb is recorded."""

    event: str  # the instance-action event, Nova's name (compute_<method>)
    notification: str  # "power_on": compute.instance.power_on.start/.end/.error
    error_vm_state: VmState | None = None  # after a failure (None: unchanged)


@dataclass(frozen=True)
class ActionRunner:
    """Runs a verb's body under the instance lock, with its event, notifications
    and, on failure, a fault, the task state cleared and the action marked Error."""

    store: InstanceStore
    locks: KeyedLocks
    notifier: Notifier

    async def run(self, ctx: RequestContext, uuid: str, spec: ActionSpec, body: Body) -> None:
        """``body(instance)``; quietly nothing if the instance is (or goes) away."""
        async with self.locks(uuid):
            try:
                instance = await self.store.get(uuid)
            except exc.InstanceNotFound:
                return
            event_id = await self.store.event_start(ctx, uuid, spec.event)
            payload = {"instance_id": uuid, "host": self.store.host}
            self.notifier.info(ctx, f"compute.instance.{spec.notification}.start", payload)
            try:
                await body(instance)
            except Exception as error:  # noqa: BLE001 - the outcome table decides
                await self._failed(ctx, uuid, spec, event_id, error)
                return
            await self.store.run(finish_action, ctx, uuid, event_id)
            self.notifier.info(ctx, f"compute.instance.{spec.notification}.end", payload)

    async def _failed(self, ctx: RequestContext, uuid: str, spec: ActionSpec,
                      event_id: int | None, error: Exception) -> None:
        if outcome_of(error, ACTION_OUTCOMES, Outcome.FAULT) is Outcome.DELETED:
            await self.store.run(_close_event, event_id)
            return
        LOG.error("%s of %s failed: %s", spec.event, uuid, error,
                  exc_info=not isinstance(error, CirrusException))
        await self.store.run(_record_fault, ctx, uuid, spec, error, self.store.host, event_id)
        self.notifier.error(ctx, f"compute.instance.{spec.notification}.error",
                            {"instance_id": uuid, "host": self.store.host, "fault": str(error)})


def _close_event(conn: sa.Connection, event_id: int | None) -> None:
    instance_actions.event_finish(conn, event_id)


def _record_fault(conn: sa.Connection, ctx: RequestContext, uuid: str, spec: ActionSpec,
                  error: Exception, host: str, event_id: int | None) -> None:
    """One transaction: nobody sees the task state cleared without its fault."""
    values: dict[str, object] = {"task_state": None}
    if spec.error_vm_state is not None:
        values["vm_state"] = spec.error_vm_state
    try:
        inst.save(conn, uuid, values)
        inst.add_fault(conn, uuid, error, host)
    except exc.InstanceNotFound:
        pass
    finish_action(conn, ctx, uuid, event_id, error)
