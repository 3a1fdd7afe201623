"""What a failed build leads to (seed 004), decided in one place.

The error's type is looked up in ``outcomes.BUILD_OUTCOMES``; this module
sends the one ``create.error`` (or, for an instance deleted meanwhile,
``create.end``) notification and acts on the outcome:

* RESCHEDULE – networks cleaned up (if the driver wants it), claim released,
  the host added to ``retry.hosts``, back to the conductor;
* ABORT – ERROR with a fault, ports and claim released, no reschedule;
* DELETED – ports and claim released, the build stops quietly.
"""
from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, cast

import sqlalchemy as sa

from cirrus.claims import Allocation, ClaimsClient
from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.boot_volumes import BootVolumes
from cirrus.compute.build_request import BuildRequest, RequestedNetwork
from cirrus.compute.outcomes import BUILD_OUTCOMES, Outcome, Rule, rule_of
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import Instance, InstanceStore
from cirrus.compute.timeline import BootTimeline, report_total
from cirrus.conductor.rpcapi import ComputeTaskAPI
from cirrus.context import RequestContext
from cirrus.db.onestatement import one_statement
from cirrus.exception import CirrusException
from cirrus.network.api import API as NetworkAPI
from cirrus.notifications import Notifier
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
ACTIVE, RESCHEDULED, FAILED = "active", "rescheduled", "failed"


@dataclass
class Started:
    """What the build's first transaction (``Builder._start``) found."""

    instance: Instance
    claim: Allocation | None = None
    bdms: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None  # a failed claim or group check: reschedule
    event_id: int | None = None  # the build event it opened (None: no action to log under)
    timeline: BootTimeline = field(default_factory=BootTimeline)  # the steps, timed


def create_payload(uuid: str, host: str, node: str) -> dict[str, Any]:
    """The payload of the ``compute.instance.create.*`` notifications."""
    return {"instance_id": uuid, "host": host, "node": node}


def _message(error: BaseException) -> str:
    return error.format_message() if isinstance(error, CirrusException) else str(error)


def aborted(uuid: str, error: BaseException, rule: Rule | None) -> BaseException:
    """The error an abort records: a BuildAbortException with the rule's
    reason (seed 004's wording), or an unexpected error as it is."""
    if isinstance(error, exc.BuildAbortException) or rule is None:
        return error
    message = _message(error)
    abort = exc.BuildAbortException(
        instance_uuid=uuid, reason=rule.reason.format(error=message) if rule.reason else message)
    abort.__cause__ = error
    return abort


def rescheduled(uuid: str, error: BaseException) -> exc.RescheduledException:
    """``error`` as the RescheduledException the reschedule records."""
    if isinstance(error, exc.RescheduledException):
        return error
    out = exc.RescheduledException(instance_uuid=uuid, reason=_message(error))
    out.__cause__ = error
    return out


@dataclass(frozen=True)
class BuildFailures:
    """The failure paths of this host's builds, handed what they use."""

    store: InstanceStore
    driver: ComputeDriver
    network: NetworkAPI
    claims: ClaimsClient
    conductor: ComputeTaskAPI
    notifier: Notifier
    volumes: BootVolumes  # an aborted build's volumes: detached (Nova's _cleanup_volumes)

    async def handle(self, ctx: RequestContext, request: BuildRequest, started: Started,
                     node: str, error: Exception, default: Outcome) -> str:
        """Notify and act on ``error``'s outcome (``default`` if no row names
        it); the build's result (RESCHEDULED or FAILED)."""
        uuid = request.instance_uuid
        rule = rule_of(error, BUILD_OUTCOMES)
        outcome = default if rule is None else rule.outcome
        payload = {**create_payload(uuid, self.store.host, node), "fault": str(error)}
        if outcome is Outcome.DELETED:
            LOG.info("instance %s was deleted during the build", uuid)
            self.notifier.info(ctx, "compute.instance.create.end", payload)
            await self.finish_event(ctx, started, error)
            await self.clean_up(ctx, request)
            return FAILED
        self.notifier.error(ctx, "compute.instance.create.error", payload)
        if outcome is Outcome.RESCHEDULE:
            reason = rescheduled(uuid, error)
            await self.finish_event(ctx, started, reason)
            return await self._reschedule(ctx, request, started, node, reason)
        if rule is None:
            LOG.error("Unexpected build failure, not rescheduling build of %s", uuid,
                      exc_info=error)
        await self._fail(ctx, request, started, aborted(uuid, error, rule))
        return FAILED

    async def finish_event(self, ctx: RequestContext, started: Started,
                           error: BaseException) -> None:
        """Close the build event with ``error`` (unless closed already)."""
        await self.store.run(close_build_event, BuildClosing.of(started), self.store.host, error)

    async def _reschedule(self, ctx: RequestContext, request: BuildRequest, started: Started,
                          node: str, error: exc.RescheduledException) -> str:
        uuid, host = request.instance_uuid, self.store.host
        filter_properties = request.retried_from(host, node, error.format_message())
        if filter_properties is None:
            LOG.debug("Retry info not present, will not reschedule %s", uuid)
            await self._fail(ctx, request, started, error)
            return FAILED
        LOG.info("rescheduling %s away from %s: %s", uuid, host, error)
        if self.driver.deallocate_networks_on_reschedule(started.instance):
            await self._cleanup_allocated_networks(ctx, started.instance,
                                                   request.requested_networks)
        await self.claims.release(uuid)
        try:
            # Guarded: a build that timed out here meanwhile stays in ERROR.
            await self.store.save(uuid, {"task_state": TaskState.SCHEDULING, "host": None,
                                         "node": None},
                                  expected_vm_state=[VmState.BUILDING], expected_host=host)
        except (exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError):
            await self.clean_up(ctx, request)
            return FAILED
        except exc.UnexpectedTaskStateError as stale:
            LOG.info("not rescheduling %s: %s", uuid, stale)
            return FAILED
        await self.conductor.build_instances(
            ctx, instance_uuids=[uuid], request_spec=cast(dict[str, Any], request.request_spec),
            filter_properties=cast(dict[str, Any], filter_properties),
            build_params=cast(dict[str, Any], request.wire_params))
        return RESCHEDULED

    async def _fail(self, ctx: RequestContext, request: BuildRequest, started: Started,
                    error: BaseException) -> None:
        """ERROR with a fault; ports, claim and volumes released (the abort path)."""
        await self.clean_up(ctx, request)
        await self.volumes.cleanup_volumes(ctx, request.instance_uuid)
        await self.store.run(_record_error, ctx, request.instance_uuid, error, self.store.host,
                             BuildClosing.of(started))
        report_total(started.instance.get("created_at"), failed=True)

    async def clean_up(self, ctx: RequestContext, request: BuildRequest) -> None:
        """Whatever the build left: the guest, its ports, its claim."""
        uuid = request.instance_uuid
        try:
            instance = await self.store.get(uuid, read_deleted=True)
        except exc.InstanceNotFound:
            return
        with contextlib.suppress(Exception):
            await self.driver.destroy(ctx, instance, [], None)
        await self._cleanup_allocated_networks(ctx, instance, request.requested_networks)
        await self.claims.release(uuid)

    async def _cleanup_allocated_networks(self, ctx: RequestContext, instance: Instance,
                                          requested: list[RequestedNetwork] | None) -> None:
        try:
            await self.network.deallocate_for_instance(ctx, instance,
                                                       requested_networks=requested)
        except Exception:  # noqa: BLE001 - logged; the periodic heal retries
            LOG.exception("failed to deallocate networks of %s", instance["uuid"])


@dataclass(frozen=True)
class BuildClosing:
    """What closing a build writes, prepared before its unit (outside the
    write lock): the build event's details and its steps' text."""

    started: Started
    details: str
    steps: str | None

    @classmethod
    def of(cls, started: Started) -> "BuildClosing":
        timeline = started.timeline
        return cls(started, timeline.build_details(time.time()), timeline.steps_json())


@one_statement  # an UPDATE
def close_build_event(conn: sa.Connection, closing: BuildClosing, host: str,
                      error: BaseException | None = None) -> None:
    """The build event closed (unless closed already) with its timing and its
    steps. Only the unit that closes the event writes them: a build's failure
    path that reaches here twice (a reschedule that ends in ERROR) keeps the
    steps of the first."""
    instance_actions.event_finish(conn, closing.started.event_id, exc=error, if_open=True,
                                  details=closing.details, steps=closing.steps)


def _record_error(conn: sa.Connection, ctx: RequestContext, uuid: str, error: BaseException,
                  host: str, closing: BuildClosing) -> None:
    """One transaction: the ERROR, its fault, the action and the event closed."""
    inst.set_error(conn, uuid, error, host)
    instance_actions.action_finish(conn, ctx, uuid, message="Error")
    close_build_event(conn, closing, host, error)
