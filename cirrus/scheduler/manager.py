"""The scheduler (seed 000/004: ``select_destinations``).

Filters remove hosts (each with a reason), weighers order the rest, and the
chosen host's resources are claimed in the database before the answer goes
back — so concurrent boots never overcommit a host.
"""
from __future__ import annotations

import logging
import random
from collections import Counter
from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instance_group_members, instance_groups, instances
from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.db.engine import Database
from cirrus.rpc import Transport
from cirrus.scheduler import claims
from cirrus.scheduler.exception import NoValidHost
from cirrus.scheduler.filters import DEFAULT_FILTERS, FILTERS, BaseHostFilter
from cirrus.scheduler.host_manager import HostManager
from cirrus.scheduler.host_state import HostState
from cirrus.scheduler.spec import Spec
from cirrus.scheduler.weights import WEIGHERS, BaseWeigher, weigh_hosts
from cirrus.service import Service

LOG = logging.getLogger(__name__)
DETAIL_HOSTS = 5  # rejected hosts / top weights kept per decision


def _group_and_hints(conn: sa.Connection, request_spec: dict[str, Any], spec: Spec) -> None:
    """Fill group member hosts and same/different host sets from the database."""
    group = request_spec.get("instance_group") or {}
    hints = request_spec.get("scheduler_hints") or {}
    group_uuid = group.get("uuid") or hints.get("group")
    if group_uuid:
        row = conn.execute(sa.select(instance_groups.c.policy, instance_groups.c.rules).where(
            instance_groups.c.uuid == group_uuid)).first()
        if row is not None:
            spec.group_policy = row.policy
            spec.max_server_per_host = (row.rules or {}).get("max_server_per_host")
            hosts = conn.execute(sa.select(instances.c.host).join(
                instance_group_members,
                instance_group_members.c.instance_uuid == instances.c.uuid).where(
                instance_group_members.c.group_uuid == group_uuid,
                instances.c.deleted.is_(False), instances.c.host.is_not(None))).scalars().all()
            for host in hosts:
                spec.chose(host)

    def hosts_of(uuids: Any) -> set[str]:
        uuids = uuids if isinstance(uuids, list) else [uuids]
        return set(conn.execute(sa.select(instances.c.host).where(
            instances.c.uuid.in_(uuids), instances.c.host.is_not(None))).scalars())
    if hints.get("same_host"):
        spec.same_host = hosts_of(hints["same_host"])
    if hints.get("different_host"):
        spec.different_host = hosts_of(hints["different_host"])


def _claim_first(conn: sa.Connection, consumer: str, node_ids: list[int],
                 spec: Spec) -> tuple[int | None, bool]:
    """Claim on the first node that still fits: (its id or None, whether the
    claim was there already).

    A request can come twice (the bus redelivers one whose reply or ack was
    lost), so ``consumer`` may hold a claim from the first time: kept if its
    node is still a candidate, else moved. A twin claiming at the same moment
    shows up as a duplicate key, and its claim is the answer (if its node is
    one of ours; if not, no answer: the twin places the instance).
    """
    held = claims.held(conn, consumer)
    if held is not None:
        if held in node_ids:
            return held, True
        claims.release(conn, consumer)
    for node_id in node_ids:
        try:
            with conn.begin_nested():
                if claims.claim(conn, node_id, consumer, spec.vcpus, spec.memory_mb,
                                spec.disk_gb):
                    return node_id, False
        except sa.exc.IntegrityError:
            twin = claims.held(conn, consumer)
            return (twin, True) if twin in node_ids else (None, False)
    return None, False


def _release_all(conn: sa.Connection, consumers: list[str]) -> None:
    for consumer in consumers:
        claims.release(conn, consumer)


class FilterScheduler:
    """Filters, weighs and claims, one request at a time."""

    def __init__(self, settings: Settings, db: Database, host_manager: HostManager,
                 filter_names: tuple[str, ...] = DEFAULT_FILTERS) -> None:
        self.settings = settings
        self.db = db
        self.host_manager = host_manager
        self.filters: list[BaseHostFilter] = [FILTERS[n]() for n in filter_names]
        self.weighers: list[BaseWeigher] = [cls() for cls in WEIGHERS.values()]

    def _filter(self, hosts: list[HostState], spec: Spec, forced: bool
                ) -> tuple[list[HostState], list[dict[str, Any]]]:
        report = []
        for flt in self.filters:
            if (forced and not flt.run_for_forced) or not flt.applies(spec):
                continue
            before = len(hosts)
            kept, rejected = [], {}
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

    @staticmethod
    def _forced(hosts: list[HostState], spec: Spec) -> list[HostState]:
        if spec.force_hosts:
            hosts = [h for h in hosts if h.host in spec.force_hosts]
        if spec.force_nodes:
            hosts = [h for h in hosts if h.nodename in spec.force_nodes]
        return hosts

    @staticmethod
    def _reason(report: list[dict[str, Any]], total: int) -> str:
        removed = [f"{f['name']} removed {f['hosts_in'] - f['hosts_out']} of {f['hosts_in']} hosts"
                   for f in report if f["hosts_out"] < f["hosts_in"]]
        if total == 0:
            return "There are not enough hosts available. No compute hosts are registered."
        return "There are not enough hosts available. " + ("; ".join(removed) + "."
                                                           if removed else "")

    async def select_destinations(self, request_spec: dict[str, Any]) -> dict[str, Any]:
        spec = Spec.from_request(request_spec)
        await self.db.read(_group_and_hints, request_spec, spec)
        try:
            return await self._schedule(request_spec, spec, await self.host_manager.host_states())
        except NoValidHost:
            # The cache may be stale (releases, new hosts): decide once more on fresh data.
            await self.host_manager.refresh()
            return await self._schedule(request_spec, spec, await self.host_manager.host_states())

    async def _schedule(self, request_spec: dict[str, Any], spec: Spec,
                        all_hosts: list[HostState]) -> dict[str, Any]:
        uuids = list(request_spec.get("instance_uuids") or [])
        forced = bool(spec.force_hosts or spec.force_nodes)
        candidates = self._forced(all_hosts, spec) if forced else all_hosts
        destinations: list[dict[str, Any]] = []
        decision: dict[str, Any] = {}
        claimed: list[str] = []
        chosen_hosts: list[str] = []
        for uuid in uuids:
            hosts, report = self._filter(candidates, spec, forced)
            weighed = weigh_hosts(hosts, spec, self.weighers, self.settings) if hosts else []
            if not decision:
                decision = {"filters": report, "weighed": [
                    {"host": h.nodename, "weight": round(w, 4)} for w, h in weighed[:DETAIL_HOSTS]]}
            if not weighed:
                await self._undo(claimed, chosen_hosts, spec)
                raise NoValidHost(reason=self._reason(report, len(candidates)), decision=decision)
            subset = max(1, min(self.settings.host_subset_size, len(weighed)))
            first = random.randrange(subset)
            order = [weighed[first][1]] + [h for i, (_, h) in enumerate(weighed) if i != first]
            node_id, held = await self.db.run(_claim_first, uuid, [h.node_id for h in order], spec)
            if node_id is None:
                await self._undo(claimed, chosen_hosts, spec)
                raise NoValidHost(reason="There are not enough hosts available. Every "
                                         "claim failed: the hosts filled up meanwhile.",
                                  decision=decision)
            host = next(h for h in order if h.node_id == node_id)
            if not held:  # a held claim is counted already, and not ours to undo
                self.host_manager.consume(node_id, spec.vcpus, spec.memory_mb, spec.disk_gb)
                claimed.append(uuid)
            spec.chose(host.host)
            chosen_hosts.append(host.host)
            destinations.append({"host": host.host, "nodename": host.nodename, "node_id": node_id})
        return {"destinations": destinations, "decision": decision}

    async def _undo(self, claimed: list[str], hosts: list[str], spec: Spec) -> None:
        if claimed:
            await self.db.run(_release_all, claimed)
            for host in Counter(hosts):
                spec.group_host_counts.pop(host, None)
            await self.host_manager.refresh()


class SchedulerManager:
    """RPC endpoint of the scheduler service."""

    RPC_API = frozenset({"select_destinations"})

    def __init__(self, settings: Settings, db: Database) -> None:
        self.host_manager = HostManager(settings, db)
        self.driver = FilterScheduler(settings, db, self.host_manager)

    async def select_destinations(self, ctx: RequestContext,
                                  request_spec: dict[str, Any]) -> dict[str, Any]:
        return await self.driver.select_destinations(request_spec)


def make_services(settings: Settings, db: Database, transport: Transport) -> list[Service]:
    host = settings.compute_host or "scheduler"
    return [Service(binary="cirrus-scheduler", topic="scheduler", host=host, db=db,
                    transport=transport, endpoint=SchedulerManager(settings, db),
                    report_interval=settings.report_interval)]
