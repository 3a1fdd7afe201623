"""The scheduler (seed 000/004: ``select_destinations``).

Filters remove hosts (each with a reason), weighers order the rest, and the
chosen host's resources are claimed in the database before the answer goes
back — so concurrent boots never overcommit a host.

Most decisions do not look at every host: the host index finds the hosts the
full scan would rank first, visiting a few dozen (cirrus/scheduler/search.py).
The full scan remains the reference and runs whenever the index cannot answer,
for forced hosts, and to explain a NoValidHost filter by filter.
"""
from __future__ import annotations

import logging
import random
import time
from functools import partial
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.compute.models import instances
from cirrus.db.engine import Database
from cirrus.db.prepared import Prepared
from cirrus.rpc import Transport
from cirrus import claims
from cirrus.scheduler.exception import NoValidHost
from cirrus.scheduler.filters import DEFAULT_FILTERS, FILTERS, BaseHostFilter, enabled
from cirrus.scheduler.filters.resources import IoOpsFilter
from cirrus.scheduler.groups import group_and_hints, needs_group_and_hints
from cirrus.scheduler.host_manager import HostManager
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.selection import Decision, Destination, FilterStep, Selection
from cirrus.scheduler.moves import claim_move, move_of
from cirrus.scheduler.search import best_hosts
from cirrus.scheduler.spec import Spec
from cirrus.scheduler.weights import WEIGHERS, BaseWeigher, weigh_hosts
from cirrus.service import Service

LOG = logging.getLogger(__name__)
DETAIL_HOSTS = 5  # rejected hosts / top weights kept per decision
# Hosts a decision through the index hands to the claim beyond the
# host_subset_size it picks from: claims that fail (the host filled up behind
# our back) move on to these before falling back to every passing host.
CLAIM_SPARES = 4
# Below this many hosts the full scan decides: filtering and weighing 10 hosts
# took 42 us a decision against 93 us through the index (its searches for the
# normalisation bounds visit most of them anyway); from ~40 hosts on the
# index is ahead (113 against 127 us, 80 hosts: 121 against 243 us).
INDEX_MIN_HOSTS = 32


def _claim_first(conn: sa.Connection, consumer: str, node_ids: list[int], spec: Spec,
                 complete: bool = True, twin: bool = False
                 ) -> tuple[int | None, str, list[int]]:
    """Claim on the first node that still fits: (its id or None, status, the
    nodes whose claim failed).

    Status: ``new`` (claimed now), ``held`` (the claim was there already),
    ``twin`` (a twin's claim, not on one of ours: no answer), ``elsewhere``
    (a claim held outside an incomplete list), ``full`` (every claim failed).

    A request can come twice (the bus redelivers one whose reply or ack was
    lost), so ``consumer`` may hold a claim from the first time: kept if its
    node is still a candidate, else moved. A twin claiming at the same moment
    shows up as AlreadyClaimed, and its claim is the answer (if its node is
    one of ours; if not, no answer: the twin places the instance).

    ``complete`` says ``node_ids`` holds every host that passed the filters;
    when it does not (the index's best few), a claim held on another node is
    left alone, for the caller to ask again with all of them. ``twin``: the
    caller asks again after a twin claimed first, whose claim is never moved.
    """
    if not node_ids:
        held = claims.held(conn, consumer)
        return (None if held is None else _held_answer(conn, consumer, held, node_ids, complete,
                                                       twin)) or (None, "full", [])
    failed: list[int] = []
    looked = False  # whether the consumer's own claim was looked for
    for node_id in node_ids:
        try:
            if looked:
                attempt = claims.Attempt(None, claims.claim(conn, node_id, consumer, spec.vcpus,
                                                            spec.memory_mb, spec.disk_gb))
            else:
                # The look and the first claim in one statement on PostgreSQL.
                attempt = claims.claim_unless_held(conn, node_id, consumer, spec.vcpus,
                                                   spec.memory_mb, spec.disk_gb)
                looked = True
        except claims.AlreadyClaimed:
            twin_node = claims.held(conn, consumer)
            return (twin_node, "held", failed) if twin_node in node_ids else (None, "twin", failed)
        if attempt.held is not None:
            # Given back (moved): claimed afresh, from the first node.
            return _held_answer(conn, consumer, attempt.held, node_ids, complete, twin) or \
                _claim_first(conn, consumer, node_ids, spec, complete, twin)
        if attempt.claimed:
            return node_id, "new", failed
        failed.append(node_id)
    return None, "full", failed


# An instance whose host is recorded: a delivery of its request placed it.
_PLACED = Prepared(sa.select(instances.c.id).where(
    instances.c.uuid == sa.bindparam("w_uuid"), instances.c.deleted.is_(False),
    instances.c.host.is_not(None)))


def _held_answer(conn: sa.Connection, consumer: str, held: int, node_ids: list[int],
                 complete: bool, twin: bool) -> tuple[int | None, str, list[int]] | None:
    """``_claim_first``'s answer for the claim ``consumer`` holds already on
    ``held``; None once it is given back, to be claimed afresh.

    A claim on a host no longer among the candidates is moved — unless the
    instance is placed already: then it is the claim of the build another
    delivery of this request cast, and stays (``placed``: no host, and the
    conductor, whose host save that delivery won, leaves the instance
    alone). So the conductor need not read whether an instance still waits
    before it asks (``ConductorManager._still_waiting``)."""
    if held in node_ids:
        return held, "held", []
    if twin:
        return None, "twin", []
    if not complete:
        return None, "elsewhere", []
    if _PLACED.execute(conn, w_uuid=consumer).fetchall():
        return None, "placed", []
    claims.release(conn, consumer)
    return None


def _release_all(conn: sa.Connection, consumers: list[str]) -> None:
    for consumer in consumers:
        claims.release(conn, consumer)


@dataclass
class Choice:
    """One decision: the passing hosts best first, and how it was reached."""

    weighed: list[tuple[float, HostState]]
    complete: bool  # weighed holds every passing host (else: the best few)
    report: list[FilterStep]
    scanned: int  # hosts looked at
    total: int  # hosts there were to choose from

    def decision(self) -> Decision:
        return {"filters": self.report, "hosts": self.total, "scanned": self.scanned,
                "weighed": [{"host": h.nodename, "weight": round(w, 4)}
                            for w, h in self.weighed[:DETAIL_HOSTS]]}


class FilterScheduler:
    """Filters, weighs and claims, one request at a time."""

    def __init__(self, settings: Settings, db: Database, host_manager: HostManager,
                 filter_names: tuple[str, ...] = DEFAULT_FILTERS, use_index: bool = True,
                 index_min_hosts: int = INDEX_MIN_HOSTS) -> None:
        self.settings = settings
        self.db = db
        self.host_manager = host_manager
        self.filters: list[BaseHostFilter] = [FILTERS[n].from_settings(settings)
                                              for n in filter_names]
        self.weighers: list[BaseWeigher] = [cls() for cls in WEIGHERS.values()]
        self.use_index = use_index  # False: every decision scans every host
        self.index_min_hosts = index_min_hosts  # fewer hosts: the full scan decides
        host_manager.use_static_filters(f for f in self.filters if f.static)
        host_manager.count_io_ops = host_manager.count_io_ops or (
            IoOpsFilter.name in filter_names or settings.io_ops_weight_multiplier != 0)

    def _filter(self, hosts: list[HostState], spec: Spec, forced: bool
                ) -> tuple[list[HostState], list[FilterStep]]:
        report: list[FilterStep] = []
        for flt in self.filters:
            if (forced and not flt.run_for_forced) or not flt.applies(spec):
                continue
            before = len(hosts)
            kept: list[HostState] = []
            rejected: dict[str, str] = {}
            for host in hosts:
                result = flt.host_passes(host, spec)
                if result.passed:
                    kept.append(host)
                elif len(rejected) < DETAIL_HOSTS:
                    rejected[host.nodename] = result.reason
            report.append({"name": flt.name, "hosts_in": before, "hosts_out": len(kept),
                           "rejected": rejected})
            hosts = kept
            if not hosts:
                break
        return hosts, report

    def _scan(self, hosts: list[HostState], spec: Spec, forced: bool = False) -> Choice:
        """The reference decision: every filter on every host, every passing
        host weighed."""
        passing, report = self._filter(hosts, spec, forced)
        weighed = weigh_hosts(passing, spec, self.weighers, self.settings) if passing else []
        return Choice(weighed, True, report, len(hosts), len(hosts))

    def _choose(self, spec: Spec, forced: bool) -> Choice:
        hm = self.host_manager
        if forced:
            return self._scan(hm.forced(spec), spec, forced=True)
        active = [f for f in self.filters if f.applies(spec)]
        named: set[str] | None = None
        for flt in active:
            names = flt.candidates(spec)
            if names is not None:
                named = names if named is None else named & names
        if named is not None:
            # Only these hosts can pass: filtering and weighing just them
            # gives the full scan's order (the report counts only them).
            choice = self._scan(hm.named(named), spec)
            if choice.weighed:
                choice.total = len(hm.hosts)
                return choice
        elif self.use_index and len(hm.hosts) >= self.index_min_hosts:
            subset = max(1, self.settings.host_subset_size)
            weighers = [(w, m) for w in self.weighers if (m := w.multiplier(self.settings)) != 0]
            found = best_hosts(hm.index, hm.hosts, active, weighers, spec,
                               max(DETAIL_HOSTS, subset + CLAIM_SPARES), len(hm.hosts))
            if found is not None and found.weighed:
                return Choice(found.weighed, found.complete, found.filters, found.visited,
                              len(hm.hosts))
        # The index could not answer, or no host passes: scan them all (which
        # also says, filter by filter, why none passes).
        return self._scan(hm.hosts, spec)

    @staticmethod
    def _reason(report: list[FilterStep], total: int) -> str:
        removed = [f"{f['name']} removed {f['hosts_in'] - f['hosts_out']} of {f['hosts_in']} hosts"
                   for f in report if f["hosts_out"] < f["hosts_in"]]
        if total == 0:
            return "There are not enough hosts available. No compute hosts are registered."
        return "There are not enough hosts available. " + ("; ".join(removed) + "."
                                                           if removed else "")

    async def select_destinations(self, request_spec: dict[str, Any]) -> Selection:
        spec = Spec.from_request(request_spec)
        if needs_group_and_hints(request_spec):
            await self.db.read(group_and_hints, request_spec, spec)
        await self.host_manager.current()
        try:
            return await self._schedule(request_spec, spec)
        except NoValidHost:
            # The cache may be stale (releases, new hosts): decide once more
            # on every host read afresh.
            await self.host_manager.reload()
            return await self._schedule(request_spec, spec)

    def _order(self, choice: Choice) -> list[HostState]:
        """Hosts to claim on, in turn: one picked at random among the best
        ``host_subset_size``, then the rest best first."""
        weighed = choice.weighed
        subset = max(1, min(self.settings.host_subset_size, len(weighed)))
        first = random.randrange(subset)
        return [weighed[first][1]] + [h for i, (_, h) in enumerate(weighed) if i != first]

    async def _schedule(self, request_spec: dict[str, Any], spec: Spec) -> Selection:
        uuids = list(request_spec.get("instance_uuids") or [])
        forced = bool(spec.force_hosts or spec.force_nodes)
        hm = self.host_manager
        destinations: list[Destination] = []
        decision: Decision | None = None
        claimed: list[str] = []
        chosen_hosts: list[str] = []
        move = move_of(request_spec)
        claim_first = _claim_first if move is None else partial(claim_move, move=move)
        for uuid in uuids:
            choice = self._choose(spec, forced)
            if decision is None:
                decision = choice.decision()
            if not choice.weighed:
                await self._undo(claimed, chosen_hosts, spec)
                raise NoValidHost(reason=self._reason(choice.report, choice.total),
                                  decision=decision)
            order = self._order(choice)
            node_id, status, failed = await self._claim(
                claim_first, uuid, [h.node_id for h in order], spec, choice.complete)
            hm.mark_stale(failed)
            if node_id is None and not choice.complete:
                # The answer lies beyond the best few: decide on every host, as
                # the full scan always did.
                choice = self._scan(hm.forced(spec) if forced else hm.hosts, spec, forced)
                order = self._order(choice) if choice.weighed else []
                node_id, status, failed = await self.db.run(
                    claim_first, uuid, [h.node_id for h in order], spec, True, status == "twin")
                hm.mark_stale(failed)
            if node_id is None:
                await self._undo(claimed, chosen_hosts, spec)
                if status == "placed":  # a repeated request: its build is under way
                    raise NoValidHost(reason=f"Instance {uuid} is placed already.",
                                      decision=decision)
                raise NoValidHost(reason="There are not enough hosts available. Every "
                                         "claim failed: the hosts filled up meanwhile.",
                                  decision=decision)
            host = next(h for h in order if h.node_id == node_id)
            if status == "new":  # a held claim is counted already, and not ours to undo
                hm.consume(node_id, spec.vcpus, spec.memory_mb, spec.disk_gb)
                claimed.append(uuid)
            spec.chose(host.host)
            chosen_hosts.append(host.host)
            destinations.append({"host": host.host, "nodename": host.nodename, "node_id": node_id,
                                 "availability_zone": host.availability_zone})
        return {"destinations": destinations, "decision": decision}

    async def _claim(self, claim_first: Any, uuid: str, node_ids: list[int], spec: Spec,
                     complete: bool) -> tuple[int | None, str, list[int]]:
        """``claim_first``'s answer. On PostgreSQL a boot's claim on its first
        node goes first alone, in autocommit (``claims.claim_unless_held``, one
        statement: the node's row locked for that statement only, not until a
        COMMIT a round trip later); only if it did not claim (a held claim, a
        twin, no room) does the whole ``_claim_first`` run, in a transaction."""
        if claim_first is _claim_first and self.db.is_postgresql and node_ids:
            try:
                attempt = await self.db.run(claims.claim_unless_held, node_ids[0], uuid,
                                            spec.vcpus, spec.memory_mb, spec.disk_gb)
            except claims.AlreadyClaimed:
                attempt = None
            if attempt is not None and attempt.claimed:
                return node_ids[0], "new", []
        return await self.db.run(claim_first, uuid, node_ids, spec, complete)

    async def _undo(self, claimed: list[str], hosts: list[str], spec: Spec) -> None:
        if claimed:
            await self.db.run(_release_all, claimed)
            for host in Counter(hosts):
                spec.group_host_counts.pop(host, None)
            await self.host_manager.refresh()


class DecisionObserver(Protocol):
    """Told of every decision (the process's metrics, :class:`cirrus.metrics.SchedulerMetrics`)."""

    def decided(self, seconds: float, decision: Decision | None, selected: bool) -> None:
        """``select_destinations`` took ``seconds`` and placed every instance
        (``selected``) or raised NoValidHost; ``decision`` is its filter report."""


class SchedulerManager:
    """RPC endpoint of the scheduler service."""

    RPC_API = frozenset({"select_destinations"})

    def __init__(self, settings: Settings, db: Database,
                 observer: DecisionObserver | None = None) -> None:
        self.host_manager = HostManager(settings, db)
        self.driver = FilterScheduler(settings, db, self.host_manager,
                                      enabled(settings.enabled_filters))
        self.observer = observer

    async def select_destinations(self, ctx: RequestContext,
                                  request_spec: dict[str, Any]) -> Selection:
        if self.observer is None:
            return await self.driver.select_destinations(request_spec)
        started = time.perf_counter()
        try:
            selection = await self.driver.select_destinations(request_spec)
        except NoValidHost as error:
            self.observer.decided(time.perf_counter() - started,
                                  error.kwargs.get("decision"), False)
            raise
        self.observer.decided(time.perf_counter() - started, selection["decision"], True)
        return selection


def make_services(settings: Settings, db: Database, transport: Transport,
                  observer: DecisionObserver | None = None) -> list[Service]:
    """The scheduler service; ``observer`` is told of each decision."""
    host = settings.compute_host or "scheduler"
    return [Service(binary="cirrus-scheduler", topic="scheduler", host=host, db=db,
                    transport=transport, endpoint=SchedulerManager(settings, db, observer),
                    report_interval=settings.report_interval)]
