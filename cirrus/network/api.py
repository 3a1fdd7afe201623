"""The compute side's network API (seeds 001/002): ``allocate_for_instance``,
``deallocate_for_instance``, ``get_instance_nw_info``.

In Nova this talks to Neutron over HTTP; here it calls the network service's
own functions on the shared database, in short transactions, and the host
backend of the compute host it runs on.
"""
from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instances
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database, fetch_all
from cirrus.db.rows import PreparedRead, read_here
from cirrus.network import exception as exc
from cirrus.network import deallocate, info_cache, ipam
from cirrus.network import ports as port_db
from cirrus.network import quotas
from cirrus.network import security_group_api
from cirrus.network import security_groups as sg_db
from cirrus.network.auto_allocate import find_auto_network_and_subnets, get_or_create_auto_network
from cirrus.network.segments import SegmentConfig
from cirrus.network.backends import get_backend
from cirrus.network.binding import Binder, EventSink
from cirrus.network.model import NetworkInfo
from cirrus.network.models import ip_allocations, networks
from cirrus.network.models import ports as port_table
from cirrus.network.networks import (counts_to_allocate, network_by_id, subnets_of,
                                     subnets_to_allocate)
from cirrus.network.validators import shown
from cirrus.utils import KeyedLocks

LOG = logging.getLogger(__name__)


# Built once: the project's own networks and the shared ones, in one read.
_OWN_AND_SHARED = PreparedRead(sa.select(networks).where(sa.or_(
    sa.and_(networks.c.project_id == sa.bindparam("w_project"), networks.c.shared.is_(False)),
    networks.c.shared.is_(True))).order_by(networks.c.created_at))


def _usable(ctx: RequestContext, project_id: str, row: dict[str, Any] | None) -> bool:
    """Whether ``project_id``'s instance may use the network ``row`` (None: missing)."""
    return row is not None and (ctx.is_admin or row["project_id"] == project_id
                                or row["shared"] or row["router_external"])


def _available_networks(conn: sa.Connection, ctx: RequestContext, project_id: str,
                        net_ids: list[str] | None) -> list[dict[str, Any]]:
    """``_get_available_networks``: the requested ids in order, or the project's
    own networks plus the shared ones."""
    if net_ids:
        found: dict[str, dict[str, Any] | None]
        if len(net_ids) == 1:  # most requests: a statement built once
            found = {net_ids[0]: network_by_id(conn, net_ids[0])}
        else:
            found = {r["id"]: r for r in fetch_all(conn, sa.select(networks).where(
                networks.c.id.in_(net_ids)))}
        usable = []
        for net_id in net_ids:
            row = found.get(net_id)
            if row is None or not _usable(ctx, project_id, row):
                raise exc.NetworkNotFound(net_id=net_id)
            usable.append(row)
        return usable
    rows = _OWN_AND_SHARED.all(conn, w_project=project_id)
    # own first, then shared, each by creation (as two reads would give them)
    return [n for n in rows if not n["shared"]] + [n for n in rows if n["shared"]]


@dataclass
class _Progress:
    """What an allocation's unit of work leaves its caller, done or failed:
    the ports it created (once its transaction can commit), the ports the
    request gave (None until checked), and its addresses' claims in flight
    (released once the transaction ended)."""

    claims: ipam.Claims
    created: list[str] = field(default_factory=list)
    preexisting: list[str] | None = None


@dataclass
class _Known:
    """What an allocation's checks read that its port creation needs too
    (an ``auto`` boot's one read): subnets by network id with the addresses
    allocated per subnet id (``networks.subnets_to_allocate``), and the
    resolved ``default`` security group (None: resolve it)."""

    subnets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)
    default_groups: list[str] | None = None


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
        self._locks = KeyedLocks()  # per instance

    async def start(self) -> None:
        """Start the host backend (re-creates host state after a restart)."""
        if self.binder.backend is not None:
            await self.binder.backend.start()

    async def stop(self) -> None:
        if self.binder.backend is not None:
            await self.binder.backend.stop()

    # -- checks at create time --------------------------------------------------
    async def validate_networks(self, ctx: RequestContext, requested_networks: Any,
                                num_instances: int,
                                security_groups: list[str] | None = None) -> int:
        """Fail early (before the 202) for requests that can never work; the
        number of instances the requested ports and the project's port quota
        allow (seed 000: 0 is PortLimitExceeded for the caller).

        Refused here as Nova refuses them at the API: a port in use
        (PortInUse), a fixed IP no subnet of its network can give, the
        gateway, in use or asked twice (InvalidFixedIp, FixedIpAlreadyInUse),
        and ``security_groups`` the project has no group of that name or id
        for (SecurityGroupNotFound, NoUniqueMatch)."""
        if security_groups and any(name != "default" for name in security_groups):
            await self.db.read(sg_db.check_groups, ctx.project_id or "", security_groups)
        first = requested_networks[0].get("network_id") if requested_networks else None
        if first == "none":
            return num_instances
        if first == "auto":
            return await self._within_port_quota(ctx, 1, num_instances)
        if not requested_networks:
            nets = await self.db.read(_available_networks, ctx, ctx.project_id or "", None)
            if len(nets) > 1:
                raise exc.NetworkAmbiguous()
            return await self._within_port_quota(ctx, len(nets), num_instances)

        def check(conn: sa.Connection) -> int:
            net_ids, port_count = [], 0
            for req in requested_networks:
                if req.get("port_id"):
                    port = port_db.get_port(conn, ctx, req["port_id"])
                    if port["device_id"]:
                        raise exc.PortInUse(port_id=req["port_id"])
                    port_count += 1
                elif req.get("network_id"):
                    net_ids.append(req["network_id"])
            nets = _available_networks(conn, ctx, ctx.project_id or "", net_ids)
            for net in nets:
                if net["router_external"] and not net["shared"] and not ctx.is_admin:
                    raise exc.ExternalNetworkAttachForbidden(network_uuid=net["id"])
            _check_fixed_ips(conn, [(r["network_id"], r["fixed_ip"]) for r in requested_networks
                                    if r.get("fixed_ip") and not r.get("port_id")])
            count = 1 if port_count else num_instances
            return self._ports_fit(conn, ctx.project_id or "", len(net_ids), count)
        return await self.db.read(check)

    async def _within_port_quota(self, ctx: RequestContext, per_instance: int,
                                 num_instances: int) -> int:
        if not per_instance:
            return num_instances  # nothing to count
        return await read_here(self.db, self._ports_fit, ctx.project_id or "", per_instance,
                               num_instances)

    def _ports_fit(self, conn: sa.Connection, project_id: str, per_instance: int,
                   num_instances: int) -> int:
        """How many of ``num_instances`` servers needing ``per_instance`` new
        ports each the project's port quota leaves room for (Nova's
        ``validate_networks``); PortLimitExceeded if it is over already."""
        if not per_instance:
            return num_instances
        # The project's own limit when an admin set one: read even when the
        # default is unlimited.
        limit, used = quotas.port_limit_and_use(conn, self.settings, project_id)
        if limit < 0:
            return num_instances
        if used > limit:
            raise exc.PortLimitExceeded(f"The number of defined ports: {used} is over the "
                                        f"limit: {limit}")
        return min(num_instances, (limit - used) // per_instance)

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
        """
        requests = list(requested_networks or [])
        if requests and requests[0].get("network_id") == "none":
            return NetworkInfo()
        progress = _Progress(ipam.Claims(self.in_flight))
        try:
            # Seed 001 creates the ports, then updates them with the binding; one
            # transaction does both here, so a failure inside leaves nothing. The
            # same transaction stores the info cache (get_instance_nw_info).
            async with self._locks(instance["uuid"]):
                try:
                    bound, info = await self.db.run(
                        self._allocate, ctx, instance, requests, security_groups or ["default"],
                        bind_host_id, progress)
                finally:  # the transaction has ended: the counter holds the addresses, or nothing
                    progress.claims.release()
            for port, network, subnets in bound:
                await self.binder.bound(port, (network, subnets))
        except BaseException:
            if progress.preexisting is not None:
                await self._rollback(ctx, instance, progress.created, progress.preexisting)
            raise
        return info

    def _allocate(self, conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                  requests: list[dict[str, Any]], security_groups: list[str], host: str | None,
                  progress: _Progress) -> tuple[list[tuple[Any, Any, Any]], NetworkInfo]:
        """The allocation's unit of work: ``_checked_requests``, then
        ``_create_and_update_ports``; ``progress`` gets the given ports once
        the request passed its checks."""
        known = _Known()
        found = self._checked_requests(conn, ctx, instance, requests, known)
        if found is None:
            return [], NetworkInfo()  # nothing requested, nothing available
        requests, ordered, preexisting, nets = found
        progress.preexisting = preexisting
        return self._create_and_update_ports(
            conn, ctx, instance, requests, ordered, {n["id"]: n for n in nets}, security_groups,
            host, progress, known)

    def _checked_requests(self, conn: sa.Connection, ctx: RequestContext,
                          instance: dict[str, Any], requests: list[dict[str, Any]],
                          known: _Known) -> tuple[list[dict[str, Any]], list[str | None],
                                                  list[str], list[dict[str, Any]]] | None:
        """The requests (``auto`` resolved to the project's network, nothing
        requested to the one network available), the requested port ids in
        order, the given ports and the networks; None when nothing is
        requested and no network is available. Seed 001's errors: PortInUse,
        NetworkNotFound, NetworkAmbiguous, ExternalNetworkAttachForbidden.
        ``known`` gets what an ``auto`` request's read found besides."""
        found = None
        if requests and requests[0].get("network_id") == "auto":
            # Created once per project: looked up first, so a boot writes nothing for it.
            found = self._auto_requests_and_networks(conn, ctx, instance, known)
            if found is None:
                net = get_or_create_auto_network(conn, self.settings, instance["project_id"],
                                                 self.segments)
                requests = [{"network_id": net["id"], "port_id": None, "fixed_ip": None}]
        if found is not None:
            requests, (ordered, preexisting, nets) = found
        else:
            ordered, preexisting, nets = self._requests_and_networks(conn, ctx, instance, requests)
        if not requests:
            if not nets:
                return None
            if len(nets) > 1:
                raise exc.NetworkAmbiguous()
            requests = [{"network_id": nets[0]["id"], "port_id": None, "fixed_ip": None}]
            ordered = [None]
        for net in nets:
            if net["router_external"] and not net["shared"] and not ctx.is_admin:
                raise exc.ExternalNetworkAttachForbidden(network_uuid=net["id"])
        return requests, ordered, preexisting, nets

    def _auto_requests_and_networks(
            self, conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
            known: _Known
    ) -> tuple[list[dict[str, Any]], tuple[list[str | None], list[str], list[dict[str, Any]]]] | None:
        """``auto``: the request for the project's auto-allocated network and
        ``_requests_and_networks`` of it; None if the project has none yet.
        ``known`` gets its subnets and the project's default group, read
        with it."""
        auto = find_auto_network_and_subnets(conn, instance["project_id"])
        if auto is None:
            return None
        net = auto.network
        known.subnets[net["id"]] = auto.subnets
        known.taken.update(counts_to_allocate(conn, auto.subnets))
        known.default_groups = auto.default_groups
        requests = [{"network_id": net["id"], "port_id": None, "fixed_ip": None}]
        # No port requested, one network, its row just read: what
        # _requests_and_networks would give, without reading it again.
        if not _usable(ctx, instance["project_id"], net):
            raise exc.NetworkNotFound(net_id=net["id"])
        return requests, ([None], [], [net])

    def _requests_and_networks(self, conn: sa.Connection, ctx: RequestContext,
                               instance: dict[str, Any], requests: list[dict[str, Any]]
                               ) -> tuple[list[str | None], list[str], list[dict[str, Any]]]:
        """Requested ports checked, and the networks to use (one read)."""
        ordered, preexisting = self._validate_requested_port_ids(conn, ctx, instance, requests)
        net_ids = [r["network_id"] for r in requests if r.get("network_id") and not r.get("port_id")]
        return ordered, preexisting, _available_networks(conn, ctx, instance["project_id"],
                                                         net_ids or None)

    def _create_and_update_ports(self, conn: sa.Connection, ctx: RequestContext,
                                 instance: dict[str, Any], requests: list[dict[str, Any]],
                                 ordered: list[str | None], nets: dict[str, dict[str, Any]],
                                 security_groups: list[str], host: str | None,
                                 progress: _Progress, known: _Known
                                 ) -> tuple[list[tuple[Any, Any, Any]], NetworkInfo]:
        preserve = set(progress.preexisting or [])
        if security_groups == ["default"] and known.default_groups is not None:
            sg_ids = known.default_groups
        else:
            sg_ids = sg_db.resolve(conn, instance["project_id"], security_groups)
        binding = self._binding(instance, host)
        subnets = dict(known.subnets)  # network id → its subnets, read once
        mine: list[str] = []
        fixed: dict[str, list[dict[str, str]]] = {}  # new port id → its fixed IPs
        new = self._create_ports_for_instance(conn, ctx, instance, requests, ordered, nets,
                                              sg_ids, mine, binding, subnets, fixed,
                                              known.taken, progress.claims)
        given = self._update_ports_for_instance(conn, ctx, instance,
                                                [p for p in ordered if p], binding)
        ports = [new.pop(0) if port_id is None else given.pop(0) for port_id in ordered]
        for net_id in {p["network_id"] for p in ports} - set(subnets):
            subnets[net_id] = subnets_of(conn, [net_id])
        bound = [(p, _network_of(conn, p["network_id"], nets), subnets[p["network_id"]])
                 for p in ports]
        fresh = None
        if not preserve and len(fixed) == len(ports):
            fresh = info_cache.fresh_network_info(ports, fixed, nets, subnets)
        if mine and fresh is not None and conn.dialect.name == "postgresql":
            info = self._store_checking_ports(conn, instance, fresh, len(mine))
        else:
            stored = (info_cache.store_fresh_network_info(conn, instance, fresh)
                      if fresh is not None else None)
            info = stored if stored is not None else info_cache.build_network_info_model(
                conn, instance["uuid"], instance["project_id"], preserve, nets, subnets)
            # Checked at create time already; this is the race with other
            # creates (Neutron refuses the port, Nova raises this), as the
            # last statement: on PostgreSQL it holds the project's port
            # counter to COMMIT.
            if mine and quotas.ports_over_limit(conn, self.settings, instance["project_id"],
                                                len(mine)):
                raise exc.PortLimitExceeded()
        progress.created.extend(mine)  # only once the transaction can commit
        return bound, info

    def _store_checking_ports(self, conn: sa.Connection, instance: dict[str, Any],
                              fresh: NetworkInfo, added: int) -> NetworkInfo:
        """PostgreSQL: the fresh info cache stored by the statement that
        rechecks the port quota (``quotas.ports_over_limit_with``), the
        allocation's last; PortLimitExceeded over it. Should the instance have
        other ports too (nothing stored), the general build follows, after the
        counter row is taken: held a few statements longer, that once."""
        over, stored = quotas.ports_over_limit_with(
            conn, self.settings, instance["project_id"], added,
            info_cache.STORE_FRESH_CACHE_LOCKING_PORTS,
            **info_cache.fresh_cache_params(instance, fresh))
        if over:
            raise exc.PortLimitExceeded()
        if stored == 1:
            return fresh
        return info_cache.build_network_info_model(conn, instance["uuid"], instance["project_id"],
                                              set())

    def _binding(self, instance: dict[str, Any], host: str | None) -> dict[str, Any]:
        """The port values that attach a port to ``instance`` on ``host``; ACTIVE
        as well where the host backend has a bound port up at once."""
        values: dict[str, Any] = {
            "device_id": instance["uuid"],
            "device_owner": f"compute:{instance.get('availability_zone') or 'nova'}",
            "binding_host_id": host or ""}
        if host and self.binder.up_on_bind:
            values["status"] = "ACTIVE"
        return values

    @staticmethod
    def _validate_requested_port_ids(conn: sa.Connection, ctx: RequestContext,
                                     instance: dict[str, Any], requests: list[dict[str, Any]]
                                     ) -> tuple[list[str | None], list[str]]:
        ordered: list[str | None] = []
        preexisting: list[str] = []
        for req in requests:
            port_id = req.get("port_id")
            if not port_id:
                ordered.append(None)
                continue
            port = port_db.get_port(conn, ctx.elevated() if ctx.is_admin else ctx, port_id)
            if port["device_id"] and port["device_id"] != instance["uuid"]:
                raise exc.PortInUse(port_id=port_id)
            # Nova's rule, for admins too: a server's ports are its project's
            # (the only ones its info cache, detach and delete consider).
            if port["project_id"] != instance["project_id"]:
                raise exc.PortNotUsable(port_id=port_id, instance=instance["uuid"])
            req["network_id"] = port["network_id"]
            ordered.append(port_id)
            preexisting.append(port_id)
        return ordered, preexisting

    def _create_ports_for_instance(self, conn: sa.Connection, ctx: RequestContext,
                                   instance: dict[str, Any], requests: list[dict[str, Any]],
                                   ordered: list[str | None], nets: dict[str, dict[str, Any]],
                                   sg_ids: list[str], created: list[str],
                                   binding: dict[str, Any],
                                   subnets: dict[str, list[dict[str, Any]]],
                                   fixed: dict[str, list[dict[str, str]]],
                                   taken: dict[str, int],
                                   claims: ipam.Claims) -> list[dict[str, Any]]:
        """One port per request without a port id, in request order. Created
        with ``binding`` already: seed 001's update of the new ports would
        follow in this same transaction, so the insert carries it. ``fixed``
        gets each new port's fixed IPs; ``taken`` the addresses allocated per
        subnet (read with the subnets), ``claims`` its guesses in flight."""
        result: list[dict[str, Any]] = []
        for req, port_id in zip(requests, ordered):
            if port_id:
                continue
            network = nets[req["network_id"]]
            if network["id"] not in subnets:
                subnets[network["id"]], counts = subnets_to_allocate(conn, network["id"])
                taken.update(counts)
            if sg_ids and (not network["port_security_enabled"] or not subnets[network["id"]]):
                raise exc.SecurityGroupCannotBeApplied()
            values: dict[str, Any] = {
                "network_id": network["id"], "project_id": instance["project_id"],
                "security_groups": sg_ids if network["port_security_enabled"] else [],
                "dns_name": instance.get("hostname") or "", **binding}
            status = values.pop("status", "DOWN")
            if req.get("fixed_ip"):
                values["fixed_ips"] = [{"ip_address": req["fixed_ip"]}]
            port, ips = port_db.create_port_with_ips(
                conn, ctx.elevated(), values, self.settings.base_mac, status=status,
                network=network, subnets=subnets[network["id"]], taken=taken, claims=claims)
            fixed[port["id"]] = ips
            created.append(port["id"])
            result.append(port)
        return result

    @staticmethod
    def _update_ports_for_instance(conn: sa.Connection, ctx: RequestContext,
                                   instance: dict[str, Any], port_ids: list[str],
                                   binding: dict[str, Any]) -> list[dict[str, Any]]:
        """Bind the ports the request brought to the instance and host (the
        ports created for it carry the binding already); the caller tells the
        backend."""
        return [port_db.update_port(conn, ctx.elevated(), pid, binding)[1] for pid in port_ids]

    async def _rollback(self, ctx: RequestContext, instance: dict[str, Any], created: list[str],
                        preexisting: list[str]) -> None:
        """Delete the ports we created, unbind the ones we were given; the info
        cache (written with the binding) then lists what is left."""
        def undo(conn: sa.Connection) -> list[dict[str, Any]]:
            rows = []
            for pid in created:
                try:
                    rows.append(port_db.delete_port(conn, ctx.elevated(), pid))
                except exc.PortNotFound:
                    pass
            for pid in preexisting:
                try:
                    rows.append(port_db.update_port(conn, ctx.elevated(), pid, {
                        "device_id": "", "device_owner": "", "binding_host_id": ""})[0])
                except exc.PortNotFound:
                    pass
            info_cache.build_network_info_model(conn, instance["uuid"], instance["project_id"],
                                                set())
            return rows
        try:
            for port in await self.db.run(undo):
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
            return rows, self._networks_to_tell(conn, rows)
        rows, nets = await self.db.run(release)
        for port in rows:
            await self.binder.unbound(port, nets.get(port["network_id"]))

    def _networks_to_tell(self, conn: sa.Connection,
                          rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """The networks of ``rows`` by id, for the host backend's unbind (none
        for a backend that does not need them, or without a backend)."""
        if not self.binder.unbind_needs_network:
            return {}
        return {net_id: network_by_id(conn, net_id) or {}
                for net_id in {r["network_id"] for r in rows}}

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

        def release(conn: sa.Connection) -> dict[str, Any]:
            port = port_db.port_by_id(conn, port_id)
            if port is None or port["device_id"] != instance["uuid"] \
                    or port["project_id"] != instance["project_id"]:
                raise exc.PortNotFound(port_id=port_id)  # not this server's (a stale cache)
            if preserve:
                return port_db.update_port(conn, ctx.elevated(), port_id, {
                    "device_id": "", "device_owner": "", "binding_host_id": ""})[0]
            return port_db.delete_port(conn, ctx.elevated(), port_id)
        await self.binder.unbound(await self.db.run(release))
        return await self.get_instance_nw_info(ctx, instance)

    # -- shelve offload / unshelve: the ports stay, their host changes ---------------
    async def setup_instance_network_on_host(self, ctx: RequestContext,
                                             instance: dict[str, Any], host: str) -> NetworkInfo:
        """Bind the instance's ports to ``host`` (unshelve); its network info."""
        for port in await self.db.run(self._bind_ports_to, ctx, instance, host):
            await self.binder.bound(port)
        return await self.get_instance_nw_info(ctx, instance)

    async def cleanup_instance_network_on_host(self, ctx: RequestContext,
                                               instance: dict[str, Any]) -> None:
        """Unbind the instance's ports from its host (shelve offload); they
        keep their addresses and stay the instance's."""
        for port in await self.db.run(self._bind_ports_to, ctx, instance, None):
            await self.binder.unbound(port)

    @staticmethod
    def _bind_ports_to(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                       host: str | None) -> list[dict[str, Any]]:
        """Each of the instance's ports bound to ``host`` (None: unbound); the
        ports as they are after (bound) or were before (unbound)."""
        out = []
        for port in port_db.ports_of_device(conn, instance["uuid"], instance["project_id"]):
            before, after = port_db.update_port(conn, ctx.elevated(), port["id"],
                                                {"binding_host_id": host or ""})
            out.append(after if host else before)
        return out

    # -- moves (Nova's migrate_instance_start/_finish, setup_networks_on_host) ----------
    async def migrate_instance_finish(self, ctx: RequestContext, instance: dict[str, Any],
                                      host: str) -> NetworkInfo:
        """The instance's ports bound to ``host``, its host after a move (or a
        revert); the host backend unbinds them from the old host and binds
        them here. The network info, rebuilt."""
        def rebind(conn: sa.Connection) -> list[tuple[dict[str, Any], dict[str, Any]]]:
            return [port_db.update_port(conn, ctx.elevated(), port["id"],
                                        {"binding_host_id": host})
                    for port in port_db.ports_of_device(conn, instance["uuid"],
                                                        instance["project_id"])
                    if port["binding_host_id"] != host]
        for before, after in await self.db.run(rebind):
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


def _check_fixed_ips(conn: sa.Connection, requested: list[tuple[str, Any]]) -> None:
    """Each (network id, fixed IP) of a server create is an address a subnet
    of the network can give and no port holds, asked once (Nova refuses
    these at the API, with 400)."""
    for i, (net_id, address) in enumerate(requested):
        if (net_id, address) in requested[:i]:
            raise exc.InvalidFixedIp(reason=f"Fixed IP {shown(address)} is requested more than "
                                            f"once on network {net_id}.")
        subnets = subnets_of(conn, [net_id])
        subnet_id = port_db.subnet_for_address(subnets, address)
        if subnet_id is None:
            raise exc.InvalidFixedIp(reason=f"IP address {shown(address)} is not a valid IP for "
                                            f"any subnet on network {net_id}.")
        subnet = next(s for s in subnets if s["id"] == subnet_id)
        reason = ipam.unusable_reason(subnet, address)
        if reason:
            raise exc.InvalidFixedIp(reason=reason)
        holder = conn.execute(sa.select(port_table.c.device_id).select_from(ip_allocations.join(
            port_table, port_table.c.id == ip_allocations.c.port_id)).where(
            ip_allocations.c.network_id == net_id,
            ip_allocations.c.ip_address == str(ipaddress.ip_address(address)))).first()
        if holder is not None:
            raise exc.FixedIpAlreadyInUse(address=address, instance_uuid=holder.device_id)


def _network_of(conn: sa.Connection, network_id: str,
                known: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if network_id in known:
        return known[network_id]
    return network_by_id(conn, network_id) or {}


def make_network_api(settings: Settings, db: Database, host: str | None,
                     event_sink: EventSink | None) -> API:
    """The network API for compute on ``host`` (None: the API process)."""
    backend = get_backend(settings, host) if host is not None or settings.network_backend == "noop" else None
    return API(settings, db, Binder(db, backend, event_sink))
