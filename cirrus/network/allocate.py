"""The compute's port allocation (seed 001's ``allocate_for_instance``), its
unit of work: the request checked (ports, networks; the project's ``auto``
network, created on first use), the ports created and bound, the info cache
stored, the port quota rechecked, in one transaction.

``API.allocate_for_instance`` runs it on a DB thread and, should anything
fail after the checks, rolls back what it did (``deallocate.undo``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import fetch_all
from cirrus.db.rows import PreparedRead
from cirrus.network import exception as exc
from cirrus.network import allocate_at_once as at_once
from cirrus.network import info_cache, ipam
from cirrus.network import ports as port_db
from cirrus.network import quotas
from cirrus.network import security_groups as sg_db
from cirrus.network.binding import Binder
from cirrus.network.auto_allocate import find_auto_network_and_subnets, get_or_create_auto_network
from cirrus.network.model import NetworkInfo
from cirrus.network.models import networks
from cirrus.network.networks import (BootRead, counts_to_allocate, network_by_id,
                                     network_for_boot, subnets_of, subnets_to_allocate)
from cirrus.network.segments import SegmentConfig

# Built once: the project's own networks and the shared ones, in one read.
_OWN_AND_SHARED = PreparedRead(sa.select(networks).where(sa.or_(
    sa.and_(networks.c.project_id == sa.bindparam("w_project"), networks.c.shared.is_(False)),
    networks.c.shared.is_(True))).order_by(networks.c.created_at))


def usable(ctx: RequestContext, project_id: str, row: dict[str, Any] | None) -> bool:
    """Whether ``project_id``'s instance may use the network ``row`` (None: missing)."""
    return row is not None and (ctx.is_admin or row["project_id"] == project_id
                                or row["shared"] or row["router_external"])


def available_networks(conn: sa.Connection, ctx: RequestContext, project_id: str,
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
        chosen = []
        for net_id in net_ids:
            row = found.get(net_id)
            if row is None or not usable(ctx, project_id, row):
                raise exc.NetworkNotFound(net_id=net_id)
            chosen.append(row)
        return chosen
    rows = _OWN_AND_SHARED.all(conn, w_project=project_id)
    # own first, then shared, each by creation (as two reads would give them)
    return [n for n in rows if not n["shared"]] + [n for n in rows if n["shared"]]


@dataclass
class Progress:
    """What an allocation's unit of work leaves its caller, done or failed:
    the ports it created (once its transaction can commit), the ports the
    request gave (None until checked), and its addresses' claims in flight
    (released once the transaction ended)."""

    claims: ipam.Claims
    created: list[str] = field(default_factory=list)
    preexisting: list[str] | None = None


@dataclass
class Known:
    """What an allocation's checks read that its port creation needs too
    (a boot's one read of its network): subnets by network id with the
    addresses allocated per subnet id (``networks.subnets_to_allocate``),
    and the read that holds the project's ``default`` group."""

    subnets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    taken: dict[str, int] = field(default_factory=dict)
    read: BootRead | None = None

    def learn(self, conn: sa.Connection, read: BootRead) -> None:
        """What a boot's read of its network (``networks.boot_read``) found."""
        self.subnets[read.network["id"]] = read.subnets
        self.taken.update(counts_to_allocate(conn, read.subnets))
        self.read = read

    def group_ids(self, conn: sa.Connection, project_id: str, requested: list[str], *,
                  make: bool) -> list[str] | None:
        """``sg_db.resolve(requested)``: ``default`` from the read when it
        found the group made, else the project's groups read (the default
        group made first if ``make``; None without it if not), errors as
        ``resolve``'s."""
        if requested == ["default"] and self.read is not None:
            found = self.read.default_groups
            if found is not None or not make:
                return found
        if make:
            return sg_db.resolve(conn, project_id, requested)
        return sg_db.resolve_made(conn, project_id, requested)


@dataclass
class OnePort:
    """A boot's one new port as ``allocate_at_once`` writes it: the network
    and its one subnet (as read), the port's row, the pool index its address
    is guessed at (held in the allocation's claims) and the subnet's counter
    the guess came from."""

    network: dict[str, Any]
    subnet: dict[str, Any]
    row: dict[str, Any]
    index: int
    counted: int

    @property
    def address(self) -> str | None:
        """The guessed address (None: past the pools' end)."""
        return ipam.nth_in_pools(self.subnet["allocation_pools"] or [], self.index)

    def info(self) -> NetworkInfo:
        """The info cache of the instance with this port alone, as the
        transaction's ``fresh_network_info`` builds it."""
        net_id = self.network["id"]
        fixed = {self.row["id"]: [{"subnet_id": self.subnet["id"], "ip_address": self.address}]}
        return info_cache.fresh_network_info([self.row], fixed, {net_id: self.network},
                                             {net_id: [self.subnet]})

    def next_guess(self, attempt: at_once.Attempt, claims: ipam.Claims) -> OnePort | None:
        """The guess after ``attempt``'s: past a busy address or one a racer
        committed while the statement ran, the next; past one taken before,
        from the counter ``attempt`` read if it moved (a concurrent
        allocation committed) — if not, a hole the counter cannot see past
        (None: the transaction walks the subnet)."""
        if not (attempt.outcome is at_once.Outcome.BUSY or attempt.just_taken or (
                attempt.outcome is at_once.Outcome.TAKEN and attempt.allocated > self.counted)):
            return None
        start = max(self.index + 1, attempt.allocated)
        return dataclasses.replace(self, index=claims.claim(self.subnet["id"], start),
                                   counted=max(self.counted, attempt.allocated))


class PortAllocator:
    """The allocation's unit of work for the computes of one network API."""

    def __init__(self, settings: Settings, segments: SegmentConfig, binder: Binder) -> None:
        """``binder``: whether its host backend has a bound port up at once
        (``Binder.up_on_bind``: new ports are created ACTIVE)."""
        self.settings = settings
        self.segments = segments
        self.binder = binder

    def allocate(self, conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                  requests: list[dict[str, Any]], security_groups: list[str], host: str | None,
                  progress: Progress) -> tuple[list[tuple[Any, Any, Any]], NetworkInfo]:
        """The allocation's unit of work: ``_checked_requests``, then
        ``_create_and_update_ports``; ``progress`` gets the given ports once
        the request passed its checks."""
        known = Known()
        found = self._checked_requests(conn, ctx, instance, requests, known)
        if found is None:
            return [], NetworkInfo()  # nothing requested, nothing available
        requests, ordered, preexisting, nets = found
        progress.preexisting = preexisting
        return self._create_and_update_ports(
            conn, ctx, instance, requests, ordered, {n["id"]: n for n in nets}, security_groups,
            host, progress, known)

    # -- the common case in one statement (PostgreSQL, ``allocate_at_once``) ----------
    def plan_one_port(self, conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                      requests: list[dict[str, Any]], security_groups: list[str],
                      host: str | None, claims: ipam.Claims) -> OnePort | None:
        """A boot's one new port on one network (``auto``, or a network by
        id without a fixed IP) as one statement writes it, after the
        network's one read (and the project's groups', when others than
        ``default`` are asked for): the network usable by the project, with
        one subnet of guessed addresses. None for any other case, before the
        project's default group is made, and for whatever the transaction's
        port creation would refuse (it runs then, and says why)."""
        if len(requests) != 1:
            return None
        request = requests[0]
        net_id = request.get("network_id")
        if not net_id or net_id == "none" or request.get("port_id") or request.get("fixed_ip"):
            return None
        known = Known()
        if net_id == "auto":
            found = self._auto_requests_and_networks(conn, ctx, instance, known)
            if found is None:
                return None
            _, (_, _, nets) = found
        else:  # NetworkNotFound as the transaction's checks raise it
            _, _, nets = self._requests_and_networks(conn, ctx, instance, requests, known)
        network = nets[0]
        sg_ids = known.group_ids(conn, instance["project_id"], security_groups, make=False)
        if sg_ids is None:
            return None
        subnets = known.subnets[network["id"]]
        if len(subnets) != 1 or ipam.is_auto_address(subnets[0]) or (
                network["router_external"] and not network["shared"] and not ctx.is_admin) or (
                sg_ids and not network["port_security_enabled"]):
            return None
        subnet = subnets[0]
        values, status = _port_values(instance, network, sg_ids, self._binding(instance, host))
        row = port_db.new_port_row(ctx.elevated(), values, network, self.settings.base_mac,
                                   status=status)
        index = claims.claim(subnet["id"], known.taken[subnet["id"]])
        return OnePort(network, subnet, row, index, known.taken[subnet["id"]])

    def write_one_port(self, conn: sa.Connection, instance: dict[str, Any],
                       plan: OnePort) -> at_once.Attempt:
        """``plan``'s port, address and info cache in one statement
        (``allocate_at_once``); OTHER, nothing written, past the pools' end
        (the transaction says the subnet is full) or where the statement
        failed (:func:`allocate_at_once.failed_whole`)."""
        address = plan.address
        if address is None:
            return at_once.Attempt(at_once.Outcome.OTHER, None, plan.counted)
        try:
            return at_once.insert_port_and_cache(conn, self.settings, plan.row, plan.subnet,
                                                 address, instance, plan.info())
        except sa.exc.DBAPIError as error:
            # The statement failed whole, nothing went in: a MAC clash, the
            # network gone, a deadlock with a racer (the transaction's order
            # of locks has none).
            if not at_once.failed_whole(error):
                raise
            return at_once.Attempt(at_once.Outcome.OTHER, None, plan.counted)

    def _checked_requests(self, conn: sa.Connection, ctx: RequestContext,
                          instance: dict[str, Any], requests: list[dict[str, Any]],
                          known: Known) -> tuple[list[dict[str, Any]], list[str | None],
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
            ordered, preexisting, nets = self._requests_and_networks(conn, ctx, instance, requests,
                                                                     known)
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
            known: Known
    ) -> tuple[list[dict[str, Any]], tuple[list[str | None], list[str], list[dict[str, Any]]]] | None:
        """``auto``: the request for the project's auto-allocated network and
        ``_requests_and_networks`` of it; None if the project has none yet.
        ``known`` gets its subnets and the project's default group, read
        with it."""
        auto = find_auto_network_and_subnets(conn, instance["project_id"])
        if auto is None:
            return None
        net = auto.network
        known.learn(conn, auto)
        requests = [{"network_id": net["id"], "port_id": None, "fixed_ip": None}]
        # No port requested, one network, its row just read: what
        # _requests_and_networks would give, without reading it again.
        if not usable(ctx, instance["project_id"], net):
            raise exc.NetworkNotFound(net_id=net["id"])
        return requests, ([None], [], [net])

    def _requests_and_networks(self, conn: sa.Connection, ctx: RequestContext,
                               instance: dict[str, Any], requests: list[dict[str, Any]],
                               known: Known
                               ) -> tuple[list[str | None], list[str], list[dict[str, Any]]]:
        """Requested ports checked, and the networks to use (one read; for
        one network, ``known`` gets its subnets and the project's default
        group, read with it)."""
        ordered, preexisting = self._validate_requested_port_ids(conn, ctx, instance, requests)
        net_ids = [r["network_id"] for r in requests if r.get("network_id") and not r.get("port_id")]
        if len(net_ids) == 1:
            read = network_for_boot(conn, instance["project_id"], net_ids[0])
            if read is None or not usable(ctx, instance["project_id"], read.network):
                raise exc.NetworkNotFound(net_id=net_ids[0])
            known.learn(conn, read)
            return ordered, preexisting, [read.network]
        return ordered, preexisting, available_networks(conn, ctx, instance["project_id"],
                                                         net_ids or None)

    def _create_and_update_ports(self, conn: sa.Connection, ctx: RequestContext,
                                 instance: dict[str, Any], requests: list[dict[str, Any]],
                                 ordered: list[str | None], nets: dict[str, dict[str, Any]],
                                 security_groups: list[str], host: str | None,
                                 progress: Progress, known: Known
                                 ) -> tuple[list[tuple[Any, Any, Any]], NetworkInfo]:
        preserve = set(progress.preexisting or [])
        sg_ids = known.group_ids(conn, instance["project_id"], security_groups, make=True)
        assert sg_ids is not None  # made if it was not
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
            values, status = _port_values(instance, network, sg_ids, binding)
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

def _port_values(instance: dict[str, Any], network: dict[str, Any], sg_ids: list[str],
                 binding: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A new port's values for ``instance`` on ``network`` (bound by
    ``binding``), and its status."""
    values: dict[str, Any] = {
        "network_id": network["id"], "project_id": instance["project_id"],
        "security_groups": sg_ids if network["port_security_enabled"] else [],
        "dns_name": instance.get("hostname") or "", **binding}
    return values, values.pop("status", "DOWN")


def _network_of(conn: sa.Connection, network_id: str,
                known: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if network_id in known:
        return known[network_id]
    return network_by_id(conn, network_id) or {}

