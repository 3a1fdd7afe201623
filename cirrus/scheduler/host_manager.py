"""Host states: loaded from compute nodes + service heartbeats, kept in memory.

The database claim is the authority on capacity; the cache only decides which
hosts to try: a stale view costs a failed claim and a retry elsewhere, never
an overcommit. It is loaded in full once. After that, every
``scheduler_cache_seconds`` it reads only the rows that changed since its last
look: every claim, release, usage heal, node update and heartbeat moves
``updated_at`` (a new row has ``created_at``), and a row count and the
highest node id tell when nodes came or went (then it loads in full again).
The look goes back ``SYNC_OVERLAP`` seconds further than the last one, for
transactions that stamped a row before it and committed after, and for clocks
of other hosts a little behind. What still slips through (a transaction that
committed later than that) is caught by a full load: when a decision finds no
host (so that a missed release never turns into NoValidHost), and every
``FULL_RELOAD_SECONDS``.

Aggregates: a change to an aggregate's hosts or metadata moves the aggregate's
``updated_at`` (and, through the zone it writes, its hosts' service rows'):
a look that finds an aggregate changed since the last one reads every host's
aggregate metadata again (a small table, read only then).

Builds in progress (Nova's ``num_io_ops``, for IoOpsWeigher and IoOpsFilter):
only when one of them is in use (:attr:`HostManager.count_io_ops`), every
look also counts each node's instances still BUILDING (one grouped read of
the instances placed on a node, not deleted). A build's end (ACTIVE, ERROR)
or a delete takes the instance out of the count at the next look; no column,
trigger or migration, and nothing read when neither is enabled.

Claims this scheduler makes are applied at once (:meth:`HostManager.consume`).
Hosts are kept by node id — the order the full scan weighs them in — and in a
:class:`~cirrus.scheduler.host_index.HostIndex` over the hosts that pass the
static filters.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import sqlalchemy as sa

from cirrus.compute import aggregates as agg_db
from cirrus.compute.hosts import is_up
from cirrus.compute.models import compute_nodes, instances
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.scheduler.filters import BaseHostFilter
from cirrus.scheduler.host_index import HostIndex
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec
from cirrus.service_models import services

SYNC_OVERLAP = dt.timedelta(seconds=2)
FULL_RELOAD_SECONDS = 600.0

cn, sv = compute_nodes, services
# What a node row gives a HostState, each under its HostState field's name.
NODE_COLUMNS = (cn.c.host, cn.c.hypervisor_hostname.label("nodename"), cn.c.id.label("node_id"),
                cn.c.vcpus, cn.c.memory_mb,
                cn.c.local_gb, cn.c.vcpus_used, cn.c.memory_mb_used, cn.c.local_gb_used,
                cn.c.reserved_memory_mb, cn.c.cpu_allocation_ratio, cn.c.ram_allocation_ratio,
                cn.c.disk_allocation_ratio, cn.c.cpu_arch, cn.c.hypervisor_type, cn.c.running_vms)
SERVICE_COLUMNS = (sv.c.host, sv.c.availability_zone, sv.c.disabled, sv.c.forced_down,
                   sv.c.last_seen_up)
_USAGE = ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used", "local_gb_used",
          "reserved_memory_mb", "cpu_allocation_ratio", "ram_allocation_ratio",
          "disk_allocation_ratio", "cpu_arch", "hypervisor_type", "running_vms")


def _touched(table: sa.Table, since: dt.datetime) -> sa.ColumnElement[bool]:
    """Rows written since ``since`` (an insert stamps only ``created_at``)."""
    return sa.func.coalesce(table.c.updated_at, table.c.created_at) >= since


def io_ops_by_node(conn: sa.Connection) -> dict[str, int]:
    """Builds in progress per node name: instances placed on a node and still
    BUILDING (Nova counts builds, resizes and snapshots; a resize here leaves
    BUILDING behind, so only builds count)."""
    inst = instances
    query = (sa.select(inst.c.node, sa.func.count())
             .where(inst.c.vm_state == "building", inst.c.deleted.is_(False),
                    inst.c.node.is_not(None))
             .group_by(inst.c.node))
    return {node: count for node, count in conn.execute(query)}


def _compute_services(conn: sa.Connection, since: dt.datetime | None = None) -> list[Any]:
    query = sa.select(*SERVICE_COLUMNS).where(sv.c.binary == "cirrus-compute")
    if since is not None:
        query = query.where(_touched(sv, since))
    return list(conn.execute(query))


def _shape(conn: sa.Connection) -> tuple[int, int | None]:
    """Row count and highest id of compute_nodes: they change when nodes come or go."""
    count, top = conn.execute(sa.select(sa.func.count(), sa.func.max(cn.c.id))).one()
    return count, top


def _up(host: HostState, down_time: float, now: dt.datetime) -> bool:
    return host.last_seen_up is not None and is_up(
        {"forced_down": host.forced_down, "last_seen_up": host.last_seen_up}, down_time, now)


def _set_service(host: HostState, service: Any) -> None:
    """Copy a service row (or its absence) into ``host``; ``up`` is the caller's."""
    if service is None:
        host.availability_zone, host.enabled = "nova", False
        host.forced_down, host.last_seen_up = False, None
        return
    host.availability_zone = service.availability_zone or "nova"
    host.enabled = service.disabled is not None and not service.disabled
    host.forced_down, host.last_seen_up = bool(service.forced_down), service.last_seen_up


def split_metadata(metadata: dict[str, str]) -> dict[str, frozenset[str]]:
    """Nova's ``aggregate_metadata_get_by_host``: comma-separated values split
    and stripped (the values of a key across aggregates arrive joined)."""
    return {key: frozenset(v.strip() for v in value.split(",")) for key, value in metadata.items()}


def _set_aggregates(hosts: Iterable[HostState], by_host: dict[str, dict[str, str]]) -> None:
    split = {name: split_metadata(md) for name, md in by_host.items()}
    for host in hosts:
        host.aggregate_metadata = split.get(host.host, {})


def load_host_states(conn: sa.Connection, down_time: float) -> list[HostState]:
    """Every compute node with its service's state and its aggregates'
    metadata, by node id."""
    by_host = {s.host: s for s in _compute_services(conn)}
    now = utcnow()
    hosts = []
    for row in conn.execute(sa.select(*NODE_COLUMNS).order_by(cn.c.id)):
        host = HostState(**row._mapping, availability_zone="nova", enabled=False, up=False)
        _set_service(host, by_host.get(host.host))
        host.up = _up(host, down_time, now)
        hosts.append(host)
    _set_aggregates(hosts, agg_db.metadata_by_host(conn))
    return hosts


def _load(conn: sa.Connection, down_time: float, io_ops: bool = False
          ) -> tuple[list[HostState], tuple[int, int | None]]:
    hosts = load_host_states(conn, down_time)
    if io_ops:
        counts = io_ops_by_node(conn)
        for host in hosts:
            host.num_io_ops = counts.get(host.nodename, 0)
    return hosts, _shape(conn)


class Changes(NamedTuple):
    """What one look read."""

    nodes: list[Any]  # node rows changed (or asked for by id)
    services: list[Any]  # compute service rows changed
    shape: tuple[int, int | None]  # the node table's
    aggregates: dict[str, dict[str, str]] | None  # every host's, if any aggregate changed
    io_ops: dict[str, int] | None = None  # builds in progress by node name, when counted


def _read_changes(conn: sa.Connection, since: dt.datetime, stale: Sequence[int],
                  io_ops: bool = False) -> Changes:
    """What changed since ``since``."""
    changed = _touched(cn, since)
    if stale:
        changed = sa.or_(changed, cn.c.id.in_(list(stale)))
    nodes = list(conn.execute(sa.select(*NODE_COLUMNS).where(changed)))
    aggregates = agg_db.metadata_by_host(conn) if agg_db.changed_since(conn, since) else None
    return Changes(nodes, _compute_services(conn, since), _shape(conn), aggregates,
                   io_ops_by_node(conn) if io_ops else None)


class HostManager:
    """The host states of one scheduler, kept current incrementally."""

    def __init__(self, settings: Any, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.hosts: list[HostState] = []  # by node id
        self.by_node: dict[int, HostState] = {}
        self.by_host: dict[str, list[HostState]] = {}
        self.by_nodename: dict[str, HostState] = {}
        self.index = HostIndex((), self.eligible)
        self.static_filters: list[BaseHostFilter] = []
        self._shape: tuple[int, int | None] = (0, None)
        self._since: dt.datetime | None = None  # where the next look starts
        self._synced_at = float("-inf")  # monotonic
        self._loaded_at = float("-inf")
        self._stale: set[int] = set()  # nodes to read again whatever their updated_at
        self._consumed: dict[int, float] = {}  # node → when we last applied a claim
        self._oldest_seen: dt.datetime | None = None  # no up host has an older heartbeat
        self._lock = asyncio.Lock()
        # Count builds in progress at each look (IoOpsWeigher/IoOpsFilter in use).
        self.count_io_ops = False

    def use_static_filters(self, filters: Iterable[BaseHostFilter]) -> None:
        """The filters whose verdict depends on the host alone: the index holds
        the hosts that pass them all."""
        self.static_filters = list(filters)
        self._reindex()

    def eligible(self, host: HostState) -> bool:
        return all(f.host_passes(host, None).passed for f in self.static_filters)  # type: ignore[arg-type]

    # -- reading --------------------------------------------------------------

    async def current(self) -> None:
        """Bring the states up to date if the last look is older than
        ``scheduler_cache_seconds``."""
        if time.monotonic() - self._synced_at > self.settings.scheduler_cache_seconds:
            await self._sync(self._synced_at)

    async def refresh(self) -> None:
        """Look at once (a decision undid its claims)."""
        await self._sync(self._synced_at)

    async def reload(self) -> None:
        """Load every host again (a decision found none), unless a full load
        began meanwhile: concurrent decisions that all found none share one."""
        seen = self._loaded_at
        async with self._lock:
            if self._loaded_at == seen:
                await self._reload()

    async def host_states(self) -> list[HostState]:
        await self.current()
        return self.hosts

    async def _sync(self, seen: float) -> None:
        async with self._lock:
            if self._synced_at != seen:
                return  # another decision looked while we waited for the lock
            if self._since is None or time.monotonic() - self._loaded_at > FULL_RELOAD_SECONDS:
                await self._reload()
                return
            started, since = time.monotonic(), utcnow()
            changes = await self.db.read(_read_changes, self._since, sorted(self._stale),
                                         self.count_io_ops)
            if not self._apply(changes, started):
                await self._reload()
                return
            self._stale.clear()
            self._since, self._synced_at = since - SYNC_OVERLAP, time.monotonic()

    async def _reload(self) -> None:
        since = utcnow()
        hosts, shape = await self.db.read(_load, self.settings.service_down_time,
                                          self.count_io_ops)
        self.load(hosts)
        self._shape = shape
        self._since = since - SYNC_OVERLAP
        self._synced_at = self._loaded_at = time.monotonic()

    def load(self, hosts: list[HostState]) -> None:
        """Hold exactly ``hosts`` (in node-id order) and index them."""
        self.hosts = hosts
        self.by_node = {h.node_id: h for h in hosts}
        self.by_nodename = {h.nodename: h for h in hosts}
        self.by_host = {}
        for h in hosts:
            self.by_host.setdefault(h.host, []).append(h)
        self._stale.clear()
        self._consumed.clear()
        self._reindex()

    def _reindex(self) -> None:
        self.index = HostIndex(self.hosts, self.eligible)
        self._oldest_seen = min((h.last_seen_up for h in self.hosts
                                 if h.up and h.last_seen_up is not None), default=None)

    def _apply(self, changes: Changes, started: float) -> bool:
        """Take in a look's rows; False when only a full load will do."""
        if changes.shape != self._shape:
            return False
        if changes.aggregates is not None:
            _set_aggregates(self.hosts, changes.aggregates)
        changed: dict[int, HostState] = {}
        for row in changes.nodes:
            host = self.by_node.get(row.node_id)
            if host is None or host.host != row.host or not self.index.knows(row.node_id):
                return False
            if self._consumed.get(row.node_id, float("-inf")) > started:
                # Our claim landed after this read began: the row may predate
                # it. It changed, so the next look reads it again.
                continue
            for name in _USAGE:
                setattr(host, name, getattr(row, name))
            changed[host.node_id] = host
        if changes.io_ops is not None:
            for host in self.hosts:
                if self._consumed.get(host.node_id, float("-inf")) > started:
                    continue  # our claim landed after the count was read
                host.num_io_ops = changes.io_ops.get(host.nodename, 0)
        now = utcnow()
        down_time = self.settings.service_down_time
        for service in changes.services:
            for host in self.by_host.get(service.host, ()):
                _set_service(host, service)
                host.up = _up(host, down_time, now)
                changed[host.node_id] = host
        cutoff = now - dt.timedelta(seconds=down_time)
        if self._oldest_seen is not None and self._oldest_seen < cutoff:
            # Some heartbeat may have grown too old (hosts go down without a
            # row changing): look at every up host, and note the new oldest.
            oldest = None
            for host in self.hosts:
                if host.up and not _up(host, down_time, now):
                    host.up = False
                    changed[host.node_id] = host
                if host.up and host.last_seen_up is not None and (
                        oldest is None or host.last_seen_up < oldest):
                    oldest = host.last_seen_up
            self._oldest_seen = oldest
        for host in changed.values():
            if host.up and host.last_seen_up is not None and (
                    self._oldest_seen is None or host.last_seen_up < self._oldest_seen):
                self._oldest_seen = host.last_seen_up
            self.index.update(host)
        return True

    # -- what decisions tell us -------------------------------------------------

    def consume(self, node_id: int, vcpus: int, memory_mb: int, disk_gb: int) -> None:
        """A claim we just made on ``node_id``."""
        host = self.by_node.get(node_id)
        if host is not None:
            host.consume(vcpus, memory_mb, disk_gb)
            self._consumed[node_id] = time.monotonic()
            self.index.update(host)

    def mark_stale(self, node_ids: Iterable[int]) -> None:
        """Our view of these nodes proved wrong (a claim failed): read them at
        the next look."""
        self._stale.update(node_ids)

    def forced(self, spec: Spec) -> list[HostState]:
        """The hosts a forced request names, by node id."""
        if spec.force_hosts:
            hosts = [h for name in set(spec.force_hosts) for h in self.by_host.get(name, ())]
        else:
            hosts = [self.by_nodename[n] for n in set(spec.force_nodes) if n in self.by_nodename]
        if spec.force_nodes:
            hosts = [h for h in hosts if h.nodename in spec.force_nodes]
        return sorted(hosts, key=lambda h: h.node_id)

    def named(self, names: Iterable[str]) -> list[HostState]:
        """The nodes of these hosts, by node id."""
        return sorted((h for name in set(names) for h in self.by_host.get(name, ())),
                      key=lambda h: h.node_id)
