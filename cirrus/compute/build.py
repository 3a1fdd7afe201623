"""Building an instance on this host (seeds 000/004, Nova's ``ComputeManager``).

``build_and_run_instance`` returns at once; the build runs in the background
under a per-instance lock and the ``max_concurrent_builds`` semaphore. A
failure's outcome (reschedule, abort, deleted) is looked up in
``outcomes.BUILD_OUTCOMES`` and acted on by ``build_failure.BuildFailures``.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any, AsyncIterator, cast

import sqlalchemy as sa

from cirrus.claims import Allocation
from cirrus.compute import exception as exc
from cirrus.compute import build_folds
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute import timeline as boot_timeline
from cirrus.compute.build_failure import (ACTIVE, FAILED, BuildClosing, BuildFailures,
                                          Started, close_build_event, create_payload)
from cirrus.compute.boot_volumes import BootVolumes
from cirrus.compute.build_request import BuildRequest, ImageSpec, RequestSpec
from cirrus.compute.builds import RunningBuilds
from cirrus.compute.models import instance_group_members, instance_groups, instances
from cirrus.compute.outcomes import NO_MORE_NETWORK, Outcome
from cirrus.compute.resource_tracker import ResourceTracker
from cirrus.compute.states import TaskState, VmState
from cirrus.compute.store import BlockDeviceInfo, Instance, InstanceStore, block_device_info
from cirrus.compute.timeline import BootTimeline
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.exception import CirrusException
from cirrus.db.prepared import Prepared
from cirrus.image.api import ImageAPI
from cirrus.network.api import API as NetworkAPI
from cirrus.network.model import NetworkInfo
from cirrus.notifications import Notifier
from cirrus.observe import BootStep
from cirrus.utils import KeyedLocks, spawn
from cirrus.virt.driver import ComputeDriver

LOG = logging.getLogger(__name__)
BUILD_EVENT = "compute__do_build_and_run_instance"
__all__ = ["ACTIVE", "BUILD_EVENT", "FAILED", "Builder", "Started"]

# The late group check of every build: the instance's group and policy.
_GROUP_OF = Prepared(sa.select(instance_groups.c.uuid, instance_groups.c.policy).join(
    instance_group_members, instance_group_members.c.group_uuid == instance_groups.c.uuid).where(
    instance_group_members.c.instance_uuid == sa.bindparam("w_uuid")))


@dataclass(frozen=True)
class Resources:
    network_info: NetworkInfo
    block_device_info: BlockDeviceInfo


@dataclass(frozen=True)
class Builder:
    """The build path of one compute host, handed what it uses."""

    store: InstanceStore
    locks: KeyedLocks
    builds: RunningBuilds
    semaphore: asyncio.Semaphore  # max_concurrent_builds
    tracker: ResourceTracker  # the claim check (``instance_claim``) and the default node
    driver: ComputeDriver
    network: NetworkAPI
    images: ImageAPI
    notifier: Notifier
    failures: BuildFailures
    network_allocate_retries: int
    default_access_ip_network_name: str
    volumes: BootVolumes  # the mappings to volumes: made ready, then in use after spawn

    # -- entry -------------------------------------------------------------------
    def build_and_run_instance(self, ctx: RequestContext, request: BuildRequest) -> None:
        """Start the build in the background and return."""
        self.builds.start(request.instance_uuid,
                          self._locked_do_build_and_run_instance(ctx, request))

    async def _locked_do_build_and_run_instance(self, ctx: RequestContext,
                                                request: BuildRequest) -> str:
        async with self.semaphore, self.locks(request.instance_uuid):
            return await self._do_build_and_run_instance(ctx, request)

    # -- _do_build_and_run_instance (seed 004) -------------------------------------
    async def _do_build_and_run_instance(self, ctx: RequestContext, request: BuildRequest) -> str:
        node = request.node or self.tracker.default_node()
        started = await self._started(ctx, request, node)
        if started is None:
            return FAILED
        # This task's own context: the driver's vif-plugged wait records here.
        boot_timeline.current.set(started.timeline)
        # Seed 004: anything unexpected while the guest is built reschedules;
        # once it runs, it goes to ERROR.
        unexpected = Outcome.RESCHEDULE
        try:
            instance, network_info = await self._build_and_run_instance(ctx, started, request,
                                                                        node)
            unexpected = Outcome.ABORT
            await self._finish_build(ctx, started, instance, network_info, node)
            return ACTIVE
        except asyncio.CancelledError as error:
            await asyncio.shield(self.failures.finish_event(ctx, started, error))
            raise
        except Exception as error:  # noqa: BLE001 - BUILD_OUTCOMES decides
            return await self.failures.handle(ctx, request, started, node, error, unexpected)

    async def _started(self, ctx: RequestContext, request: BuildRequest,
                       node: str) -> Started | None:
        """The build's first write (``_start``); None if this delivery must not build."""
        uuid = request.instance_uuid
        try:
            return await self._start_units(ctx, uuid, node, request.in_group)
        except exc.InstanceNotFound:
            LOG.debug("instance %s disappeared before its build started", uuid)
        except exc.UnexpectedDeletingTaskStateError as error:
            LOG.debug("instance %s: %s; not building", uuid, error)
            await self.failures.clean_up(ctx, request)
        except exc.UnexpectedTaskStateError as error:
            # A repeated or stale delivery: the build started already (here or,
            # after a reschedule, elsewhere), or the instance failed and was
            # cleaned up meanwhile. Its ports and claim are not ours to touch.
            LOG.info("not building %s: %s (a repeated or stale build request)", uuid, error)
        return None

    async def _start_units(self, ctx: RequestContext, uuid: str, node: str,
                           in_group: bool) -> Started:
        """The build's start: on PostgreSQL, without a group, one statement
        (``_start_together``); should it match nothing, or elsewhere, the
        checks one by one in a transaction (``_start``), which say why.
        SQLite has no round trips to save, and there the save's subqueries
        cost more than the claim's own read (docs/performance.md)."""
        timeline = BootTimeline()
        node_id = self.tracker.node_ids.get(node)
        if not in_group and node_id is not None and self.store.db.is_postgresql:
            started = await self._start_together(ctx, uuid, node_id, timeline)
            if started is not None:
                return started
        return await self.store.run(self._start, ctx, uuid, node, in_group, timeline)

    async def _start_together(self, ctx: RequestContext, uuid: str, node_id: int,
                              timeline: BootTimeline) -> Started | None:
        """``_start`` with the claim checked by the guarded save itself (its
        amounts returned), the build event and the mappings' read in the same
        statement (``build_folds.start``), written with the other builds'
        started at the same moment (``build_folds.start_together``); None,
        with nothing changed, if the save matched nothing."""
        host = self.store.host
        with timeline.step(BootStep.CLAIM):
            found = await build_folds.start_together(
                self.store.db, uuid, ctx.request_id, host, node_id,
                build_folds.build_event(BUILD_EVENT, host, boot_timeline.as_datetime(timeline.start)))
        if found is None:
            return None
        instance, event_id, mappings = found
        claim = Allocation(consumer_uuid=uuid, node_id=node_id,
                           vcpus=instance.pop("claim_vcpus"),
                           memory_mb=instance.pop("claim_memory_mb"),
                           disk_gb=instance.pop("claim_disk_gb"))
        return Started(instance, claim=claim, bdms=mappings, event_id=event_id,
                       timeline=timeline)

    def _start(self, conn: sa.Connection, ctx: RequestContext, uuid: str, node: str,
               in_group: bool = True, timeline: BootTimeline | None = None) -> Started:
        """The build's first transaction: the claim and late group checks, the
        guarded start (only an instance the conductor placed here and nobody
        started yet), its build event and the block device mappings.

        The start is one guarded save from SCHEDULING straight to
        BLOCK_DEVICE_MAPPING: _build_resources' first two steps (seed 000,
        NETWORKING then BLOCK_DEVICE_MAPPING) would be two more saves in this
        same transaction, whose states no reader could ever see. The network
        allocation they frame runs after this commit, beside spawn's wait.

        A failed check starts the instance with no task state instead, and
        comes back in ``Started.error`` for ``_build_and_run_instance`` to
        raise: it reschedules, with the build event to record the failure on.
        ``in_group``: the request placed the instance in a server group (else
        there is no group policy to check again).
        """
        timeline = timeline or BootTimeline()
        error: Exception | None = None
        claim = None
        try:
            with timeline.step(BootStep.CLAIM):
                claim = self.tracker.check_claim(conn, uuid, node)
                if in_group:
                    self._validate_instance_group_policy(conn, uuid)
        except (exc.ComputeResourcesUnavailable, exc.RescheduledException) as failed:
            error = failed
        host = self.store.host
        instance = inst.save_and_get(
            conn, uuid, {"vm_state": VmState.BUILDING,
                         "task_state": None if error else TaskState.BLOCK_DEVICE_MAPPING},
            expected_task_state=[TaskState.SCHEDULING], expected_vm_state=[VmState.BUILDING],
            expected_host=host)
        event_id = instance_actions.event_start(
            conn, ctx, uuid, BUILD_EVENT, host=host,
            start=boot_timeline.as_datetime(timeline.start))
        if error is not None:
            return Started(instance, error=error, event_id=event_id, timeline=timeline)
        return Started(instance, claim=claim, bdms=inst.bdms(conn, uuid), event_id=event_id,
                       timeline=timeline)

    def _validate_instance_group_policy(self, conn: sa.Connection, uuid: str) -> None:
        """The late check: another build may have raced us onto/away from this host."""
        m = instance_group_members
        group = _GROUP_OF.execute(conn, w_uuid=uuid).fetchone()
        if group is None or group[1] not in ("affinity", "anti-affinity"):
            return
        group_uuid, policy = group
        hosts = {r.host for r in conn.execute(sa.select(instances.c.host).join(
            m, m.c.instance_uuid == instances.c.uuid).where(
            m.c.group_uuid == group_uuid, instances.c.uuid != uuid,
            instances.c.deleted.is_(False), instances.c.host.is_not(None)))}
        host = self.store.host
        if policy == "anti-affinity" and host in hosts:
            raise exc.RescheduledException(instance_uuid=uuid,
                                           reason="Anti-affinity instance group policy was violated.")
        if policy == "affinity" and hosts and host not in hosts:
            raise exc.RescheduledException(instance_uuid=uuid,
                                           reason="Affinity instance group policy was violated.")

    # -- _build_and_run_instance (seed 004) -------------------------------------
    async def _build_and_run_instance(self, ctx: RequestContext, started: Started,
                                      request: BuildRequest, node: str
                                      ) -> tuple[Instance, NetworkInfo]:
        """Resources, then spawn; the instance as saved in SPAWNING and its
        network info. Failures go to ``BuildFailures.handle``."""
        instance = started.instance
        uuid = instance["uuid"]
        self.notifier.info(ctx, "compute.instance.create.start",
                           create_payload(uuid, self.store.host, node))
        if started.error is not None:  # the claim or group check of _start
            raise started.error
        image_meta = await self._image_meta(ctx, instance, request.request_spec)
        async with self._build_resources(ctx, instance, request, started) as resources:
            if not instance.get("image_ref"):  # volume-backed: its boot volume's image
                image_meta = await self.volumes.image_meta(
                    ctx, resources.block_device_info["block_device_mapping"])
            # The row _start read, with what this save wrote: no need to read
            # all of it back.
            instance = {**instance, **await build_folds.spawning_together(self.store.db, uuid)}
            with started.timeline.step(BootStep.SPAWN):
                await self.driver.spawn(ctx, instance, image_meta, request.injected_files,
                                        request.admin_password,
                                        cast(dict[str, Any], started.claim),
                                        resources.network_info,
                                        cast(dict[str, Any], resources.block_device_info))
            await self.volumes.complete(ctx, resources.block_device_info["block_device_mapping"])
        return instance, resources.network_info

    async def _finish_build(self, ctx: RequestContext, started: Started, instance: Instance,
                            network_info: NetworkInfo, node: str) -> None:
        """ACTIVE, with the power state, ``launched_at`` and access IPs; the
        build event and the action closed in the same transaction."""
        uuid = instance["uuid"]
        info = await self.driver.get_info(instance)
        values: dict[str, Any] = {"vm_state": VmState.ACTIVE, "task_state": None,
                                  "power_state": int(info.state), "launched_at": utcnow()}
        values.update(self._access_ips(instance, network_info))

        closing = BuildClosing.of(started)
        if self.store.db.is_postgresql:  # one statement with other builds', no transaction
            await build_folds.mark_active_together(self.store.db, uuid, ctx.request_id, values,
                                                   started.event_id, closing.details,
                                                   closing.steps)
        else:
            await self.store.run(_mark_active, ctx, uuid, values, closing, self.store.host)
        boot_timeline.report_total(instance.get("created_at"), failed=False)
        LOG.debug("instance %s is ACTIVE on %s", uuid, node)
        self.notifier.info(ctx, "compute.instance.create.end",
                           create_payload(uuid, self.store.host, node))

    def _access_ips(self, instance: Instance, network_info: NetworkInfo) -> dict[str, str]:
        """Seed 004: with ``default_access_ip_network_name`` set, the first
        addresses on that network — only if the user gave no access IP."""
        name = self.default_access_ip_network_name
        if not name or instance.get("access_ip_v4") or instance.get("access_ip_v6"):
            return {}
        out: dict[str, str] = {}
        for vif in network_info or []:
            if vif["network"].get("label") != name:
                continue
            for subnet in vif["network"]["subnets"]:
                for ip in subnet.get("ips", []):
                    key = "access_ip_v4" if ip.get("version", 4) == 4 else "access_ip_v6"
                    out.setdefault(key, ip["address"])
            break
        return out

    async def _image_meta(self, ctx: RequestContext, instance: Instance,
                          spec: RequestSpec) -> dict[str, Any]:
        if not instance.get("image_ref"):
            return {"properties": {}}
        carried: ImageSpec = spec.get("image") or {}
        if carried.get("id") == instance["image_ref"] and carried.get("disk_format"):
            return cast(dict[str, Any], carried)  # checked by the API when the request was accepted
        return await self.images.get(ctx.elevated(), instance["image_ref"])

    # -- _build_resources (seed 000) -------------------------------------------------
    @contextlib.asynccontextmanager
    async def _build_resources(self, ctx: RequestContext, instance: Instance,
                               request: BuildRequest, started: Started
                               ) -> AsyncIterator[Resources]:
        """The instance is in BLOCK_DEVICE_MAPPING already (``_start``)."""
        uuid = instance["uuid"]
        timeline = started.timeline
        # Allocate networks while block devices are prepared (seed 000).
        net_task = spawn(self._allocate_network_async(ctx, instance, request, timeline),
                         name=f"allocate-network:{uuid}", awaited=True)
        try:
            with timeline.step(BootStep.BLOCK_DEVICES):
                bdi = await self._prep_block_device(ctx, instance, started.bdms)
            network_info = await net_task
        except BaseException:
            net_task.cancel()
            with contextlib.suppress(BaseException):
                await net_task
            raise
        try:
            yield Resources(network_info, bdi)
        except Exception as error:
            # Spawn failed: nothing half-built may stay on the hypervisor. If
            # it cannot be cleaned up, no other host should get the build
            # (seed 000: "Could not clean up failed build, not rescheduling").
            try:
                await self.driver.destroy(ctx, instance, network_info, cast(dict[str, Any], bdi))
            except Exception as failed:
                LOG.exception("could not destroy the failed build of %s (after: %s)",
                              uuid, error)
                raise exc.BuildAbortException(
                    instance_uuid=uuid,
                    reason="Could not clean up failed build, not rescheduling") from failed
            raise
        except BaseException:  # cancelled (a delete, the build-time sweep)
            with contextlib.suppress(Exception):
                await self.driver.destroy(ctx, instance, network_info, cast(dict[str, Any], bdi))
            raise

    async def _prep_block_device(self, ctx: RequestContext, instance: Instance,
                                 bdms: list[dict[str, Any]]) -> BlockDeviceInfo:
        """The block device info of the mappings ``_start`` read, each volume
        ready with its connection info (``boot_volumes.BootVolumes.prep``).
        A failure aborts the build, naming its cause (seed 000: "Failure
        prepping block device"): another host would find the same volumes."""
        try:
            return block_device_info(await self.volumes.prep(ctx, instance, bdms))
        except (exc.InstanceNotFound, exc.UnexpectedTaskStateError):
            raise
        except Exception as error:
            reason = error.format_message() if isinstance(error, CirrusException) else str(error)
            raise exc.BuildAbortException(
                instance_uuid=instance["uuid"],
                reason=f"Failure prepping block device: {reason}") from error

    async def _allocate_network_async(self, ctx: RequestContext, instance: Instance,
                                      request: BuildRequest,
                                      timeline: BootTimeline) -> NetworkInfo:
        """allocate_for_instance with ``network_allocate_retries`` and back-off,
        timed as one step (the retries and their back-off included)."""
        with timeline.step(BootStep.NETWORK):
            return await self._allocate_network_with_retries(ctx, instance, request)

    async def _allocate_network_with_retries(self, ctx: RequestContext, instance: Instance,
                                             request: BuildRequest) -> NetworkInfo:
        attempts = max(0, self.network_allocate_retries) + 1
        delay = 1.0
        for attempt in range(1, attempts + 1):
            try:
                return await self.network.allocate_for_instance(
                    ctx, instance, requested_networks=request.requested_networks,
                    security_groups=request.security_groups, bind_host_id=self.store.host)
            except NO_MORE_NETWORK:
                raise
            except Exception:
                if attempt == attempts:
                    raise
                LOG.warning("network allocation for %s failed (attempt %d/%d); retrying in %.0fs",
                            instance["uuid"], attempt, attempts, delay, exc_info=True)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")


def _mark_active(conn: sa.Connection, ctx: RequestContext, uuid: str, values: dict[str, Any],
                 closing: BuildClosing, host: str) -> None:
    """ACTIVE if the build is still SPAWNING, the build event closed, the
    action finished: one transaction (SQLite; ``build_folds.mark_active`` on
    PostgreSQL)."""
    inst.save(conn, uuid, values, expected_task_state=TaskState.SPAWNING)
    close_build_event(conn, closing, host)
    instance_actions.action_finish(conn, ctx, uuid)
