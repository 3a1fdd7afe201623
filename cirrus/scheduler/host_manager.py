"""Host states: loaded from compute nodes + service heartbeats, cached in memory.

The database claim is the authority on capacity; the cache only decides which
hosts to try. It is refreshed every ``scheduler_cache_seconds`` and at once
when a decision finds no host (so releases elsewhere are never missed).
"""
from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from cirrus.compute.hosts import is_up
from cirrus.compute.models import compute_nodes
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.scheduler.host_state import HostState
from cirrus.service_models import services


def load_host_states(conn: sa.Connection, down_time: float) -> list[HostState]:
    cn, sv = compute_nodes, services
    rows = conn.execute(sa.select(cn, sv.c.availability_zone, sv.c.disabled, sv.c.forced_down,
                                  sv.c.last_seen_up).select_from(cn.outerjoin(
        sv, sa.and_(sv.c.host == cn.c.host, sv.c.binary == "cirrus-compute")))).mappings().all()
    now = utcnow()
    return [HostState(
        host=r["host"], nodename=r["hypervisor_hostname"], node_id=r["id"], vcpus=r["vcpus"],
        memory_mb=r["memory_mb"], local_gb=r["local_gb"], vcpus_used=r["vcpus_used"],
        memory_mb_used=r["memory_mb_used"], local_gb_used=r["local_gb_used"],
        reserved_memory_mb=r["reserved_memory_mb"], cpu_allocation_ratio=r["cpu_allocation_ratio"],
        ram_allocation_ratio=r["ram_allocation_ratio"],
        disk_allocation_ratio=r["disk_allocation_ratio"], cpu_arch=r["cpu_arch"],
        hypervisor_type=r["hypervisor_type"], availability_zone=r["availability_zone"] or "nova",
        enabled=r["disabled"] is not None and not r["disabled"],
        up=r["last_seen_up"] is not None and is_up(dict(r), down_time, now),
        running_vms=r["running_vms"]) for r in rows]


class HostManager:
    """The cached host states of one scheduler."""

    def __init__(self, settings: Any, db: Database) -> None:
        self.settings = settings
        self.db = db
        self._hosts: list[HostState] = []
        self._by_node: dict[int, HostState] = {}
        self._loaded_at = float("-inf")

    async def refresh(self) -> None:
        self._hosts = await self.db.read(load_host_states, self.settings.service_down_time)
        self._by_node = {h.node_id: h for h in self._hosts}
        self._loaded_at = time.monotonic()

    async def host_states(self) -> list[HostState]:
        if time.monotonic() - self._loaded_at > self.settings.scheduler_cache_seconds:
            await self.refresh()
        return self._hosts

    def consume(self, node_id: int, vcpus: int, memory_mb: int, disk_gb: int) -> None:
        host = self._by_node.get(node_id)
        if host is not None:
            host.consume(vcpus, memory_mb, disk_gb)
