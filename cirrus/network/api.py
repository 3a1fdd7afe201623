"""The compute side's network API (seeds 001/002): ``allocate_for_instance``,
``deallocate_for_instance``, ``get_instance_nw_info``.

In Nova this talks to Neutron over HTTP; here it calls the network service's
own functions on the shared database, in short transactions, and the host
backend of the compute host it runs on. The units of work live beside it:
``validate`` (the checks before the 202), ``allocate`` (the allocation),
``deallocate`` (the releases), ``port_binding`` (moves between hosts).
"""
from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instances
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database, fetch_all
from cirrus.db.onestatement import one_statement
from cirrus.db.rows import read_here
from cirrus.network import deallocate, info_cache, ipam, port_binding, validate
from cirrus.network import exception as exc
from cirrus.network import ports as port_db
from cirrus.network import security_group_api
from cirrus.network import security_groups as sg_db
from cirrus.network import allocate_at_once as at_once
from cirrus.network.allocate import OnePort, PortAllocator, Progress, available_networks
from cirrus.network.backends import get_backend
from cirrus.network.binding import Binder, EventSink
from cirrus.network.model import NetworkInfo
from cirrus.network.models import ports as port_table
from cirrus.network.segments import SegmentConfig
from cirrus.utils import KeyedLocks

LOG = logging.getLogger(__name__)


class API:
    """Network operations on behalf of compute, for instances on ``host``."""

    def __init__(self, settings: Settings, db: Database, binder: Binder,
                 in_flight: ipam.InFlight = ipam.PROCESS_IN_FLIGHT) -> None:
        """``in_flight``: the addresses allocations are trying, shared by
        every compute of the process (``ipam.InFlight``)."""
        self.settings = settings
        self.db = db
        self.binder = binder
        self.in_flight = in_flight
        self.segments = SegmentConfig.from_settings(settings)  # a bad setting fails here
        self.allocator = PortAllocator(settings, self.segments, binder)
        self._locks = KeyedLocks()  # per instance


    async def start(self) -> None:
        """Start the host backend (re-creates host state after a restart)."""
        if self.binder.backend is not None:
            await self.binder.backend.start()

    async def stop(self) -> None:
        if self.binder.backend is not None:
            await self.binder.backend.stop()

    # -- checks at create time --------------------------------------------------
    @staticmethod
    def ports_a_create_can_check(requested_networks: Any) -> int:
        """The new ports each server of a create needs, where the create's
        own statement can check the port quota (PostgreSQL's one-statement
        create: ``quotas.port_use_columns``, ``validate.ports_fit_in``) so
        that :meth:`validate_networks` reads nothing for it: 1 for ``auto``,
        one per network for networks asked by id (their checks still read
        them); 0 where it must read anyway (ports asked for, or nothing asked:
        the networks available are counted)."""
        first = requested_networks[0].get("network_id") if requested_networks else None
        if first in (None, "none") or any(r.get("port_id") for r in requested_networks):
            return 0
        return len(requested_networks)

    async def validate_networks(self, ctx: RequestContext, requested_networks: Any,
                                num_instances: int,
                                security_groups: list[str] | None = None,
                                ports_checked_later: bool = False) -> int:
        """Fail early (before the 202) for requests that can never work; the
        number of instances the requested ports and the project's port quota
        allow (seed 000: 0 is PortLimitExceeded for the caller).

        Refused here as Nova refuses them at the API: a port in use
        (PortInUse), a fixed IP no subnet of its network can give, the
        gateway, in use or asked twice (InvalidFixedIp, FixedIpAlreadyInUse),
        and ``security_groups`` the project has no group of that name or id
        for (SecurityGroupNotFound, NoUniqueMatch). ``ports_checked_later``:
        the create checks the port quota itself (:meth:`ports_a_create_can_check`)."""
        if security_groups and any(name != "default" for name in security_groups):
            await self.db.read(sg_db.check_groups, ctx.project_id or "", security_groups)
        first = requested_networks[0].get("network_id") if requested_networks else None
        if first == "none":
            return num_instances
        if first == "auto":
            if ports_checked_later:
                return num_instances
            return await self.within_port_quota(ctx, 1, num_instances)
        if not requested_networks:
            nets = await self.db.read(available_networks, ctx, ctx.project_id or "", None)
            if len(nets) > 1:
                raise exc.NetworkAmbiguous()
            return await self.within_port_quota(ctx, len(nets), num_instances)
        args = (self.settings, ctx, requested_networks, num_instances, not ports_checked_later)
        if len(requested_networks) == 1:
            # One network or port asked for (most creates): a point read or
            # two, on the loop on SQLite (read_here); more, on a DB thread.
            return await read_here(self.db, validate.check_requests, *args)
        return await self.db.read(validate.check_requests, *args)

    async def within_port_quota(self, ctx: RequestContext, per_instance: int,
                                num_instances: int) -> int:
        """How many of ``num_instances`` servers of ``per_instance`` new ports
        each the project's port quota has room for (``validate.ports_fit``)."""
        if not per_instance:
            return num_instances  # nothing to count
        return await read_here(self.db, validate.ports_fit, self.settings, ctx.project_id or "",
                               per_instance, num_instances)

    # -- allocate_for_instance (seed 001) -----------------------------------------
    async def allocate_for_instance(self, ctx: RequestContext, instance: dict[str, Any], *,
                                    requested_networks: Any = None,
                                    security_groups: list[str] | None = None,
                                    bind_host_id: str | None = None,
                                    macs: set[str] | None = None) -> NetworkInfo:
        """Create or bind the instance's ports; on any failure, nothing stays.

        One unit of work checks the request (ports, networks; the project's
        auto network, created on first use) and creates and binds the ports:
        no read of its own before the write (a hop to a DB thread and back
        cost more than the read). A request that fails its checks changes
        nothing and rolls nothing back; any later failure rolls back as before.
        On PostgreSQL a boot's one port on one network (``auto``, or a network
        by id) is first tried as a read and one statement
        (``allocate_at_once``), the transaction only where that wrote nothing.
        """
        requests = list(requested_networks or [])
        if requests and requests[0].get("network_id") == "none":
            return NetworkInfo()
        progress = Progress(ipam.Claims(self.in_flight))
        try:
            # Seed 001 creates the ports, then updates them with the binding; one
            # transaction does both here, so a failure inside leaves nothing. The
            # same transaction stores the info cache (get_instance_nw_info).
            async with self._locks(instance["uuid"]):
                try:
                    done: tuple[list[tuple[Any, Any, Any]], NetworkInfo] | None = None
                    if self.db.is_postgresql:
                        done = await self._allocate_at_once(
                            ctx, instance, requests, security_groups or ["default"],
                            bind_host_id, progress)
                    if done is None:
                        done = await self.db.run(
                            self._allocate, ctx, instance, requests,
                            security_groups or ["default"], bind_host_id, progress)
                    bound, info = done
                finally:  # the transaction has ended: the counter holds the addresses, or nothing
                    progress.claims.release()
            for port, network, subnets in bound:
                await self.binder.bound(port, (network, subnets))
        except BaseException:
            if progress.preexisting is not None:
                await self._rollback(ctx, instance, progress.created, progress.preexisting)
            raise
        return info

    async def _allocate_at_once(self, ctx: RequestContext, instance: dict[str, Any],
                                requests: list[dict[str, Any]], security_groups: list[str],
                                host: str | None, progress: Progress
                                ) -> tuple[list[tuple[Any, Any, Any]], NetworkInfo] | None:
        """PostgreSQL, a boot's one port on one network: the network's read and one
        statement (``allocate_at_once``), a few guesses at most, each its
        own statement; None (nothing written) where the transaction must run."""
        plan, attempt = await self.db.run(self._first_port, ctx, instance, requests,
                                          security_groups, host, progress.claims)
        for _ in range(at_once.GUESSES - 1):
            if plan is None or attempt.outcome not in (at_once.Outcome.BUSY,
                                                       at_once.Outcome.TAKEN):
                break
            plan = plan.next_guess(attempt, progress.claims)
            if plan is not None:
                attempt = await self.db.run(self._port_again, instance, plan)
        if plan is None or attempt.seq is None:
            # Nothing written: its guesses let go, the transaction guesses
            # afresh, as if alone.
            progress.claims.release()
            return None
        plan.row["seq"] = attempt.seq
        progress.preexisting = []
        progress.created.append(plan.row["id"])  # undone if anything fails from here
        if attempt.outcome is at_once.Outcome.OVER_QUOTA:
            raise exc.PortLimitExceeded()
        return [(plan.row, plan.network, [plan.subnet])], plan.info()

    @one_statement  # a read, then allocate_at_once's statement
    def _first_port(self, conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                    requests: list[dict[str, Any]], security_groups: list[str],
                    host: str | None, claims: ipam.Claims
                    ) -> tuple[OnePort | None, at_once.Attempt]:
        plan = self.allocator.plan_one_port(conn, ctx, instance, requests, security_groups, host,
                                            claims)
        if plan is None:
            return None, at_once.Attempt(at_once.Outcome.OTHER, None, 0)
        return plan, self.allocator.write_one_port(conn, instance, plan)

    @one_statement  # allocate_at_once's statement
    def _port_again(self, conn: sa.Connection, instance: dict[str, Any],
                    plan: OnePort) -> at_once.Attempt:
        return self.allocator.write_one_port(conn, instance, plan)

    def _allocate(self, conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                  requests: list[dict[str, Any]], security_groups: list[str], host: str | None,
                  progress: Progress) -> tuple[list[tuple[Any, Any, Any]], NetworkInfo]:
        """The allocation's unit of work (``PortAllocator.allocate``)."""
        return self.allocator.allocate(conn, ctx, instance, requests, security_groups, host,
                                       progress)

    async def _rollback(self, ctx: RequestContext, instance: dict[str, Any], created: list[str],
                        preexisting: list[str]) -> None:
        """Delete the ports we created, unbind the ones we were given; the info
        cache (written with the binding) then lists what is left."""
        try:
            for port in await self.db.run(deallocate.undo, ctx, instance, created, preexisting):
                await self.binder.unbound(port)
        except Exception:  # noqa: BLE001 - the original error matters more
            LOG.exception("rolling back ports failed")

    # -- deallocate ------------------------------------------------------------------
    async def deallocate_for_instance(self, ctx: RequestContext, instance: dict[str, Any],
                                      requested_networks: Any = None) -> None:
        """Delete created ports; only unbind the ones the user brought.

        One unit of work: the info cache (which ports to preserve) is read in
        the transaction that releases the ports, and so are the networks the
        host backend is told of, instead of a read before and one per port
        after (each a hop to a DB thread)."""
        requested = {r["port_id"] for r in requested_networks or [] if r.get("port_id")}

        def release(conn: sa.Connection) -> tuple[list[dict[str, Any]], dict[str, Any]]:
            rows = deallocate.release_ports(conn, ctx, instance, requested)
            return rows, deallocate.networks_to_tell(conn, self.binder.unbind_needs_network, rows)
        rows, nets = await self.db.run(release)
        for port in rows:
            await self.binder.unbound(port, nets.get(port["network_id"]))

    # -- get_instance_nw_info (seed 002) -----------------------------------------
    async def get_instance_nw_info(self, ctx: RequestContext, instance: dict[str, Any],
                                   preserve: set[str] | None = None) -> NetworkInfo:
        """Rebuild the VIF model from the ports and store it in the info cache."""
        async with self._locks(instance["uuid"]):
            return await self.db.run(info_cache.build_network_info_model, instance["uuid"],
                                     instance["project_id"], preserve or set())

    # -- os-interface ----------------------------------------------------------------
    async def deallocate_port_for_instance(self, ctx: RequestContext, instance: dict[str, Any],
                                           port_id: str) -> NetworkInfo:
        """Detach one port: deleted if cirrus created it, unbound if the user brought it."""
        stored = await self.db.read(info_cache.cache_of, instance["uuid"])
        cache = {vif["id"]: vif for vif in stored}
        if port_id not in cache:
            raise exc.PortNotFound(port_id=port_id)
        preserve = cache[port_id].get("preserve_on_delete", False)
        port = await self.db.run(deallocate.release_port, ctx, instance, port_id, preserve)
        await self.binder.unbound(port)
        return await self.get_instance_nw_info(ctx, instance)

    # -- shelve offload / unshelve: the ports stay, their host changes ---------------
    async def setup_instance_network_on_host(self, ctx: RequestContext,
                                             instance: dict[str, Any], host: str) -> NetworkInfo:
        """Bind the instance's ports to ``host`` (unshelve); its network info."""
        for port in await self.db.run(port_binding.bind_ports_to, ctx, instance, host):
            await self.binder.bound(port)
        return await self.get_instance_nw_info(ctx, instance)

    async def cleanup_instance_network_on_host(self, ctx: RequestContext,
                                               instance: dict[str, Any]) -> None:
        """Unbind the instance's ports from its host (shelve offload); they
        keep their addresses and stay the instance's."""
        for port in await self.db.run(port_binding.bind_ports_to, ctx, instance, None):
            await self.binder.unbound(port)

    # -- moves (Nova's migrate_instance_start/_finish, setup_networks_on_host) ----------
    async def migrate_instance_finish(self, ctx: RequestContext, instance: dict[str, Any],
                                      host: str) -> NetworkInfo:
        """The instance's ports bound to ``host``, its host after a move (or a
        revert); the host backend unbinds them from the old host and binds
        them here. The network info, rebuilt."""
        for before, after in await self.db.run(port_binding.rebind_to, ctx, instance, host):
            if before.get("binding_host_id"):
                await self.binder.unbound(before)
            await self.binder.bound(after)
        return await self.get_instance_nw_info(ctx, instance)

    # -- os-interface helpers -----------------------------------------------------
    async def list_ports(self, ctx: RequestContext, device_id: str) -> list[dict[str, Any]]:
        """The ports of server ``device_id``: those naming it of its own project."""
        def load(conn: sa.Connection) -> list[dict[str, Any]]:
            rows = fetch_all(conn, sa.select(port_table).where(
                port_table.c.device_id == device_id,
                port_db.owned_by(port_table.c.project_id, sa.select(instances.c.project_id).where(
                    instances.c.uuid == device_id).scalar_subquery())).order_by(port_table.c.seq))
            fixed = port_db.fixed_ips_of(conn, [r["id"] for r in rows])
            return [port_db.port_view(r, fixed[r["id"]]) for r in rows]
        return await self.db.read(load)

    # -- a server's security groups (issue #19: addSecurityGroup/removeSecurityGroup) --
    async def add_to_instance(self, ctx: RequestContext, instance: dict[str, Any],
                              name: str) -> None:
        """Add group ``name`` (or id) to the ports of ``instance``."""
        await self.db.run(security_group_api.add_to_instance, ctx, instance, name)

    async def remove_from_instance(self, ctx: RequestContext, instance: dict[str, Any],
                                   name: str) -> None:
        """Remove group ``name`` (or id) from the ports of ``instance``."""
        await self.db.run(security_group_api.remove_from_instance, ctx, instance, name)

    async def get_instance_security_groups(self, ctx: RequestContext,
                                           device_id: str) -> list[dict[str, Any]]:
        """The security groups on the ports of server ``device_id``, each with
        its ``rules``: a group once for each port that has it, in port order
        (as Nova's ``get_instance_security_groups``)."""
        ports = await self.list_ports(ctx, device_id)
        ids = [g for p in ports for g in p["security_groups"] or []]
        found = await self.db.read(sg_db.groups_with_rules, sorted(set(ids)))
        return [found[g] for g in ids if g in found]


def make_network_api(settings: Settings, db: Database, host: str | None,
                     event_sink: EventSink | None) -> API:
    """The network API for compute on ``host`` (None: the API process)."""
    backend = get_backend(settings, host) if host is not None or settings.network_backend == "noop" else None
    return API(settings, db, Binder(db, backend, event_sink))
