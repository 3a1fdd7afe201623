"""Building an instance on this host (seeds 000/004, ``compute/manager.py``).

``build_and_run_instance`` returns at once; the build runs in the background
under a per-instance lock and the ``max_concurrent_builds`` semaphore.
Failure handling follows seed 004: RescheduledException → networks cleaned
up, claim released, back to the conductor with this host excluded;
BuildAbortException (and out-of-IPs, image unacceptable, flavor too small)
→ ERROR with a fault, no reschedule; deleted during the build → clean up
and stop quietly.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute import instance as inst
from cirrus.compute import instance_actions
from cirrus.compute.models import instance_actions as act
from cirrus.compute.models import instance_actions_events as ev
from cirrus.compute.models import instance_group_members, instance_groups, instances
from cirrus.compute.states import TaskState, VmState
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.prepared import Prepared
from cirrus.utils import spawn

if TYPE_CHECKING:
    from cirrus.compute.manager import ComputeManager

LOG = logging.getLogger(__name__)
ACTIVE, RESCHEDULED, FAILED = "active", "rescheduled", "failed"
BUILD_EVENT = "compute__do_build_and_run_instance"


def _network_errors(*names: str) -> tuple[type[BaseException], ...]:
    from cirrus.network import exception as nexc

    return tuple(c for c in (getattr(nexc, n, None) for n in names) if isinstance(c, type))


# Network failures that no other host would fix: abort, don't reschedule.
NO_MORE_NETWORK = _network_errors("IpAddressGenerationFailure", "NoMoreFixedIps",
                                  "FixedIpLimitExceeded", "NoMoreNetworks", "PortLimitExceeded")
ABORT_ERRORS = (exc.FlavorDiskTooSmall, exc.FlavorMemoryTooSmall, exc.ImageNotActive,
                exc.ImageUnacceptable, exc.ImageNotFound)


# This host's unfinished build event of a request.
_OPEN_BUILD_EVENT = Prepared(sa.select(ev.c.id).join(act, act.c.id == ev.c.action_id).where(
    act.c.instance_uuid == sa.bindparam("w_uuid"), act.c.request_id == sa.bindparam("w_request"),
    ev.c.event == BUILD_EVENT, ev.c.host == sa.bindparam("w_host"),
    ev.c.finish_time.is_(None)).order_by(ev.c.id.desc()).limit(1))


# The late group check of every build: the instance's group and policy.
_GROUP_OF = Prepared(sa.select(instance_groups.c.uuid, instance_groups.c.policy).join(
    instance_group_members, instance_group_members.c.group_uuid == instance_groups.c.uuid).where(
    instance_group_members.c.instance_uuid == sa.bindparam("w_uuid")))


@dataclass
class Started:
    """What the build's first transaction (``Builder._start``) found."""

    instance: dict[str, Any]
    claim: dict[str, Any] | None = None
    bdms: list[dict[str, Any]] = field(default_factory=list)
    error: Exception | None = None  # a failed claim or group check: reschedule
    event_id: int | None = None  # the build event it opened (None: no action to log under)


@dataclass
class Resources:
    network_info: Any
    block_device_info: dict[str, Any]


class Builder:
    """The build path of one compute host."""

    def __init__(self, manager: "ComputeManager") -> None:
        self.m = manager

    # -- entry -------------------------------------------------------------------
    def build_and_run_instance(self, ctx: RequestContext, instance_uuid: str, node: str | None,
                               request_spec: dict[str, Any], filter_properties: dict[str, Any],
                               build_params: dict[str, Any]) -> None:
        """Start the build in the background and return."""
        self.m.builds.start(instance_uuid, self._locked_do_build_and_run_instance(
            ctx, instance_uuid, node, request_spec, filter_properties, build_params))

    async def _locked_do_build_and_run_instance(self, *args: Any) -> str:
        async with self.m.build_semaphore, self.m.instance_lock(args[1]):
            return await self._do_build_and_run_instance(*args)

    # -- _do_build_and_run_instance (seed 004) -------------------------------------
    async def _do_build_and_run_instance(self, ctx: RequestContext, uuid: str, node: str | None,
                                         spec: dict[str, Any], filter_properties: dict[str, Any],
                                         params: dict[str, Any]) -> str:
        node = node or self.m.rt.default_node()
        try:
            started = await self.m.db.run(self._start, ctx, uuid, node,
                                          bool(spec.get("instance_group")))
        except exc.InstanceNotFound:
            LOG.debug("instance %s disappeared before its build started", uuid)
            return FAILED
        except exc.UnexpectedDeletingTaskStateError as error:
            LOG.debug("instance %s: %s; not building", uuid, error)
            await self._cleanup_after_failure(ctx, uuid, None, deleting=True)
            return FAILED
        except exc.UnexpectedTaskStateError as error:
            # A repeated or stale delivery: the build started already (here or,
            # after a reschedule, elsewhere), or the instance failed and was
            # cleaned up meanwhile. Its ports and claim are not ours to touch.
            LOG.info("not building %s: %s (a repeated or stale build request)", uuid, error)
            return FAILED
        injected = [(path, base64.b64decode(data)) for path, data in params.get("injected_files") or []]
        instance = started.instance
        try:
            # The build event finishes in the same transaction as the ACTIVE save.
            await self._build_and_run_instance(ctx, started, node, spec, params, injected)
            return ACTIVE
        except exc.RescheduledException as error:
            await self._finish_event(ctx, uuid, error)
            return await self._reschedule(ctx, instance, node, spec, filter_properties, params, error)
        except (exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError) as error:
            LOG.info("instance %s was deleted during the build", uuid)
            await self._finish_event(ctx, uuid, error)
            await self._cleanup_after_failure(ctx, uuid, params, deleting=True)
            return FAILED
        except asyncio.CancelledError as error:
            await asyncio.shield(self._finish_event(ctx, uuid, error))
            raise
        except exc.BuildAbortException as error:
            await self._fail(ctx, uuid, params, error)
            return FAILED
        except Exception as error:  # noqa: BLE001 - seed 004: unexpected → ERROR, no reschedule
            LOG.exception("Unexpected build failure, not rescheduling build of %s", uuid)
            await self._fail(ctx, uuid, params, error)
            return FAILED

    def _start(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
               node: str, in_group: bool = True) -> Started:
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
        error: Exception | None = None
        claim = None
        try:
            claim = self.m.rt.check_claim(conn, uuid, node)
            if in_group:
                self._validate_instance_group_policy(conn, uuid)
        except (exc.ComputeResourcesUnavailable, exc.RescheduledException) as failed:
            error = failed
        instance = inst.save_and_get(
            conn, uuid, {"vm_state": VmState.BUILDING,
                         "task_state": None if error else TaskState.BLOCK_DEVICE_MAPPING},
            expected_task_state=[TaskState.SCHEDULING], expected_vm_state=[VmState.BUILDING],
            expected_host=self.m.host)
        event_id = instance_actions.event_start(conn, ctx, uuid, BUILD_EVENT, host=self.m.host)
        if error is not None:
            return Started(instance, error=error, event_id=event_id)
        return Started(instance, claim=claim, bdms=inst.bdms(conn, uuid), event_id=event_id)

    def _finish_event_tx(self, conn: sa.Connection, ctx: RequestContext, uuid: str,
                         error: BaseException | None, started: Started | None = None) -> None:
        """Close this build's event (and on success the action).

        With ``started``, the event ``_start`` opened, if still open; without,
        this host's open build event of the request is looked up (the
        reschedule and failure paths)."""
        if started is not None:
            instance_actions.event_finish(conn, started.event_id, exc=error, if_open=True)
        else:
            row = _OPEN_BUILD_EVENT.execute(conn, w_uuid=uuid, w_request=ctx.request_id,
                                            w_host=self.m.host).fetchone()
            instance_actions.event_finish(conn, row[0] if row else None, exc=error)
        if error is None:
            instance_actions.action_finish(conn, ctx, uuid)

    async def _finish_event(self, ctx: RequestContext, uuid: str, error: BaseException | None) -> None:
        await self.m.db.run(self._finish_event_tx, ctx, uuid, error)

    async def _reschedule(self, ctx: RequestContext, instance: dict[str, Any], node: str,
                          spec: dict[str, Any], filter_properties: dict[str, Any],
                          params: dict[str, Any], error: exc.RescheduledException) -> str:
        uuid = instance["uuid"]
        retry = filter_properties.get("retry")
        if not retry:
            LOG.debug("Retry info not present, will not reschedule %s", uuid)
            await self._fail(ctx, uuid, params, error)
            return FAILED
        LOG.info("rescheduling %s away from %s: %s", uuid, self.m.host, error)
        if self.m.driver.deallocate_networks_on_reschedule(instance):
            await self._cleanup_allocated_networks(ctx, instance, params)
        await self.m.release_claim(uuid)
        retry.setdefault("hosts", []).append([self.m.host, node])
        retry["num_attempts"] = retry.get("num_attempts", 1) + 1
        retry["exc_reason"] = error.format_message()
        try:
            # Guarded: a build that timed out here meanwhile stays in ERROR.
            await self.m.db.run(inst.save, uuid, {"task_state": TaskState.SCHEDULING,
                                                  "host": None, "node": None},
                                expected_vm_state=[VmState.BUILDING], expected_host=self.m.host)
        except (exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError):
            await self._cleanup_after_failure(ctx, uuid, params, deleting=True)
            return FAILED
        except exc.UnexpectedTaskStateError as error:
            LOG.info("not rescheduling %s: %s", uuid, error)
            return FAILED
        await self.m.compute_task_api.build_instances(
            ctx, instance_uuids=[uuid], request_spec=spec, filter_properties=filter_properties,
            build_params=params)
        return RESCHEDULED

    async def _fail(self, ctx: RequestContext, uuid: str, params: dict[str, Any] | None,
                    error: BaseException) -> None:
        """ERROR with a fault; ports and claim released (BuildAbort path)."""
        await self._cleanup_after_failure(ctx, uuid, params, deleting=False)

        def record(conn: sa.Connection) -> None:
            inst.set_error(conn, uuid, error, self.m.host)
            instance_actions.action_finish(conn, ctx, uuid, message="Error")
        await self.m.db.run(record)
        await self._finish_event(ctx, uuid, error)

    async def _cleanup_after_failure(self, ctx: RequestContext, uuid: str,
                                     params: dict[str, Any] | None, deleting: bool) -> None:
        try:
            instance = await self.m.db.read(inst.get, uuid, read_deleted=True)
        except exc.InstanceNotFound:
            return
        with contextlib.suppress(Exception):
            await self.m.driver.destroy(ctx, instance, [], None)
        await self._cleanup_allocated_networks(ctx, instance, params)
        await self.m.release_claim(uuid)

    async def _cleanup_allocated_networks(self, ctx: RequestContext, instance: dict[str, Any],
                                          params: dict[str, Any] | None) -> None:
        try:
            await self.m.network_api.deallocate_for_instance(
                ctx, instance, requested_networks=(params or {}).get("requested_networks"))
        except Exception:  # noqa: BLE001 - logged; the periodic heal retries
            LOG.exception("failed to deallocate networks of %s", instance["uuid"])

    # -- _build_and_run_instance (seed 004) -------------------------------------
    async def _build_and_run_instance(self, ctx: RequestContext, started: Started,
                                      node: str, spec: dict[str, Any], params: dict[str, Any],
                                      injected: list[tuple[str, bytes]]) -> None:
        instance = started.instance
        uuid = instance["uuid"]
        notify = self.m.notifier
        payload = {"instance_id": uuid, "host": self.m.host, "node": node}
        notify.info(ctx, "compute.instance.create.start", payload)
        try:
            if started.error is not None:  # the claim or group check of _start
                raise started.error
            claim = started.claim
            image_meta = await self._image_meta(ctx, instance, spec)
            async with self._build_resources(ctx, instance, params, started.bdms) as resources:
                # The row _start read, with what this save wrote: no need to
                # read all of it back.
                instance = {**instance, **await self.m.db.run(
                    inst.save, uuid, {"vm_state": VmState.BUILDING,
                                      "task_state": TaskState.SPAWNING},
                    expected_task_state=TaskState.BLOCK_DEVICE_MAPPING)}
                await self.m.driver.spawn(ctx, instance, image_meta, injected,
                                          params.get("admin_password"), claim,
                                          resources.network_info, resources.block_device_info)
        except (exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError) as error:
            notify.info(ctx, "compute.instance.create.end", {**payload, "fault": str(error)})
            raise
        except exc.ComputeResourcesUnavailable as error:
            notify.error(ctx, "compute.instance.create.error", {**payload, "fault": str(error)})
            raise exc.RescheduledException(instance_uuid=uuid, reason=error.format_message()) from error
        except exc.BuildAbortException as error:
            notify.error(ctx, "compute.instance.create.error", {**payload, "fault": str(error)})
            raise
        except NO_MORE_NETWORK as error:
            notify.error(ctx, "compute.instance.create.error", {**payload, "fault": str(error)})
            raise exc.BuildAbortException(
                instance_uuid=uuid, reason=f"Failed to allocate the network(s) with error "
                                           f"{error}, not rescheduling.") from error
        except exc.VirtualInterfaceCreateException as error:
            notify.error(ctx, "compute.instance.create.error", {**payload, "fault": str(error)})
            raise exc.BuildAbortException(
                instance_uuid=uuid, reason="Failed to allocate the network(s), not rescheduling."
            ) from error
        except ABORT_ERRORS as error:
            notify.error(ctx, "compute.instance.create.error", {**payload, "fault": str(error)})
            raise exc.BuildAbortException(instance_uuid=uuid,
                                          reason=error.format_message()) from error
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - seed 004: anything else reschedules
            notify.error(ctx, "compute.instance.create.error", {**payload, "fault": str(error)})
            raise exc.RescheduledException(instance_uuid=uuid, reason=str(error)) from error
        await self._finish_build(ctx, started, instance, resources.network_info, payload)

    async def _finish_build(self, ctx: RequestContext, started: Started, instance: dict[str, Any],
                            network_info: Any, payload: dict[str, Any]) -> None:
        info = await self.m.driver.get_info(instance)
        values: dict[str, Any] = {"vm_state": VmState.ACTIVE, "task_state": None,
                                  "power_state": int(info.state), "launched_at": utcnow()}
        values.update(self._access_ips(network_info))
        def mark_active(conn: sa.Connection) -> None:
            inst.save(conn, instance["uuid"], values, expected_task_state=TaskState.SPAWNING)
            self._finish_event_tx(conn, ctx, instance["uuid"], None, started)
        try:
            await self.m.db.run(mark_active)
        except (exc.InstanceNotFound, exc.UnexpectedDeletingTaskStateError) as error:
            self.m.notifier.info(ctx, "compute.instance.create.end", {**payload, "fault": str(error)})
            raise
        self.m.notifier.info(ctx, "compute.instance.create.end", payload)

    def _access_ips(self, network_info: Any) -> dict[str, Any]:
        name = self.m.settings.default_access_ip_network_name
        if not name:
            return {}
        out: dict[str, Any] = {}
        for vif in network_info or []:
            if vif["network"].get("label") != name:
                continue
            for subnet in vif["network"]["subnets"]:
                for ip in subnet.get("ips", []):
                    key = "access_ip_v4" if ip.get("version", 4) == 4 else "access_ip_v6"
                    out.setdefault(key, ip["address"])
        return out

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
        if policy == "anti-affinity" and self.m.host in hosts:
            raise exc.RescheduledException(instance_uuid=uuid,
                                           reason="Anti-affinity instance group policy was violated.")
        if policy == "affinity" and hosts and self.m.host not in hosts:
            raise exc.RescheduledException(instance_uuid=uuid,
                                           reason="Affinity instance group policy was violated.")

    async def _image_meta(self, ctx: RequestContext, instance: dict[str, Any],
                          spec: dict[str, Any]) -> dict[str, Any]:
        if not instance.get("image_ref"):
            return {"properties": {}}
        carried = spec.get("image") or {}
        if carried.get("id") == instance["image_ref"] and carried.get("disk_format"):
            return carried  # checked by the API when the request was accepted
        return await self.m.images.get(ctx.elevated(), instance["image_ref"])

    # -- _build_resources (seed 000) -------------------------------------------------
    @contextlib.asynccontextmanager
    async def _build_resources(self, ctx: RequestContext, instance: dict[str, Any],
                               params: dict[str, Any], bdms: list[dict[str, Any]]
                               ) -> AsyncIterator[Resources]:
        """The instance is in BLOCK_DEVICE_MAPPING already (``_start``)."""
        uuid = instance["uuid"]
        # Allocate networks while block devices are prepared (seed 000).
        net_task = spawn(self._allocate_network_async(ctx, instance, params),
                         name=f"allocate-network:{uuid}", awaited=True)
        try:
            block_device_info = self._prep_block_device(bdms)
            network_info = await net_task
        except BaseException:
            net_task.cancel()
            with contextlib.suppress(BaseException):
                await net_task
            raise
        try:
            yield Resources(network_info, block_device_info)
        except BaseException:
            # Spawn failed: make sure nothing half-built stays on the hypervisor.
            with contextlib.suppress(Exception):
                await self.m.driver.destroy(ctx, instance, network_info, block_device_info)
            raise

    @staticmethod
    def _prep_block_device(bdms: list[dict[str, Any]]) -> dict[str, Any]:
        """The block device info of the mappings ``_start`` read."""
        return {"block_device_mapping": bdms, "root_device_name": "/dev/vda"}

    async def _allocate_network_async(self, ctx: RequestContext, instance: dict[str, Any],
                                      params: dict[str, Any]) -> Any:
        """allocate_for_instance with ``network_allocate_retries`` and back-off."""
        attempts = max(0, self.m.settings.network_allocate_retries) + 1
        delay = 1.0
        for attempt in range(1, attempts + 1):
            try:
                return await self.m.network_api.allocate_for_instance(
                    ctx, instance, requested_networks=params.get("requested_networks"),
                    security_groups=params.get("security_groups") or None,
                    bind_host_id=self.m.host)
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
