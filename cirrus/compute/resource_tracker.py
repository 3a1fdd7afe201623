"""The resource tracker: this host's compute node records and claims.

The scheduler claims resources atomically when it picks a host (an
``allocations`` row plus guarded ``*_used`` increments). On the host,
``instance_claim`` checks that the claim is there and on this node — a
mismatch (e.g. the node was rebuilt) is ComputeResourcesUnavailable, which
reschedules. ``update_available_resource`` keeps totals true and heals the
``*_used`` columns from the allocations.
"""
from __future__ import annotations

import uuid as uuidlib

import sqlalchemy as sa

from cirrus import claims
from cirrus.claims import Allocation
from cirrus.compute.exception import ComputeResourcesUnavailable
from cirrus.compute.models import allocations, compute_nodes
from cirrus.config import Settings
from cirrus.db.base import utcnow
from cirrus.db.engine import Database
from cirrus.virt.driver import ComputeDriver, NodeResources


def _upsert_node(conn: sa.Connection, host: str, res: NodeResources, settings: Settings) -> int:
    values = {"host": host, "hypervisor_type": res.hypervisor_type,
              "hypervisor_version": res.hypervisor_version, "cpu_arch": res.cpu_arch,
              "host_ip": res.host_ip, "vcpus": res.vcpus, "memory_mb": res.memory_mb,
              "local_gb": res.local_gb, "cpu_allocation_ratio": settings.cpu_allocation_ratio,
              "ram_allocation_ratio": settings.ram_allocation_ratio,
              "disk_allocation_ratio": settings.disk_allocation_ratio}
    row = conn.execute(sa.select(compute_nodes.c.id).where(
        compute_nodes.c.hypervisor_hostname == res.hypervisor_hostname)).first()
    if row:
        conn.execute(compute_nodes.update().where(compute_nodes.c.id == row.id).values(
            updated_at=utcnow(), **values))
        return int(row.id)
    key = conn.execute(compute_nodes.insert().values(
        uuid=str(uuidlib.uuid4()), hypervisor_hostname=res.hypervisor_hostname,
        vcpus_used=0, memory_mb_used=0, local_gb_used=0, reserved_memory_mb=0, running_vms=0,
        created_at=utcnow(), **values)).inserted_primary_key
    assert key is not None  # a single-row INSERT
    return int(key[0])


def _heal_usage(conn: sa.Connection, node_id: int) -> None:
    """Set the node's ``*_used`` columns to the sum of its allocations.

    The node row is locked first: claims take that lock with their UPDATE
    before they add their allocation, so the sum (a new snapshot under READ
    COMMITTED) sees every claim that got in before us, and later ones wait
    for us and then check their guard against what we wrote. (A release
    half-way, allocation deleted but not yet subtracted, still counts in the
    sum and subtracts after us.) Without the lock a claim committing between
    the sum and the UPDATE was overwritten: the node then overcommitted by
    it (PostgreSQL; SQLite runs one writer at a time).
    """
    conn.execute(sa.select(compute_nodes.c.id).where(compute_nodes.c.id == node_id)
                 .with_for_update())
    used = conn.execute(sa.select(
        sa.func.coalesce(sa.func.sum(allocations.c.vcpus), 0),
        sa.func.coalesce(sa.func.sum(allocations.c.memory_mb), 0),
        sa.func.coalesce(sa.func.sum(allocations.c.disk_gb), 0),
        sa.func.count()).where(allocations.c.node_id == node_id)).one()
    conn.execute(compute_nodes.update().where(compute_nodes.c.id == node_id).values(
        vcpus_used=used[0], memory_mb_used=used[1], local_gb_used=used[2], running_vms=used[3]))


def _check_claim(conn: sa.Connection, instance_uuid: str, node_id: int) -> Allocation:
    row = claims.of(conn, instance_uuid)
    if row is None or row["node_id"] != node_id:
        raise ComputeResourcesUnavailable(reason=f"no claim for instance {instance_uuid} "
                                                 f"on this node")
    return row


class ResourceTracker:
    """Compute node records of one host."""

    def __init__(self, settings: Settings, db: Database, host: str,
                 driver: ComputeDriver) -> None:
        self.settings = settings
        self.db = db
        self.host = host
        self.driver = driver
        self.node_ids: dict[str, int] = {}

    async def update_available_resource(self) -> None:
        """Create or refresh the node records from the driver; heal usage."""
        for nodename in self.driver.get_available_nodes():
            res = await self.driver.get_available_resource(nodename)
            node_id = await self.db.run(_upsert_node, self.host, res, self.settings)
            self.node_ids[nodename] = node_id
            await self.db.run(_heal_usage, node_id)

    def default_node(self) -> str:
        return next(iter(self.node_ids))

    def check_claim(self, conn: sa.Connection, instance_uuid: str, nodename: str) -> Allocation:
        """``instance_claim``: the scheduler's claim for the instance on
        ``nodename``, read in the caller's transaction; or
        ComputeResourcesUnavailable."""
        node_id = self.node_ids.get(nodename)
        if node_id is None:
            raise ComputeResourcesUnavailable(reason=f"node {nodename} is not on host {self.host}")
        return _check_claim(conn, instance_uuid, node_id)
