"""Atomic resource claims on compute nodes: the "placement" seam.

A claim is one guarded UPDATE (``used + requested <= total * ratio``) plus an
``allocations`` row for the consumer, in the caller's transaction; release
deletes the row and subtracts it, once. Cost is O(1) in the number of
instances on the node.
"""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.compute.models import allocations, compute_nodes
from cirrus.db.base import utcnow

cn = compute_nodes


def claim(conn: sa.Connection, node_id: int, consumer_uuid: str, vcpus: int, memory_mb: int,
          disk_gb: int) -> bool:
    """Claim on ``node_id`` for ``consumer_uuid``; False if it no longer fits."""
    fits = conn.execute(cn.update().where(
        cn.c.id == node_id,
        cn.c.vcpus_used + vcpus <= cn.c.vcpus * cn.c.cpu_allocation_ratio,
        cn.c.memory_mb_used + memory_mb <= (cn.c.memory_mb - cn.c.reserved_memory_mb) * cn.c.ram_allocation_ratio,
        cn.c.local_gb_used + disk_gb <= cn.c.local_gb * cn.c.disk_allocation_ratio,
    ).values(vcpus_used=cn.c.vcpus_used + vcpus, memory_mb_used=cn.c.memory_mb_used + memory_mb,
             local_gb_used=cn.c.local_gb_used + disk_gb,
             running_vms=cn.c.running_vms + 1)).rowcount == 1
    if fits:
        conn.execute(allocations.insert().values(
            consumer_uuid=consumer_uuid, node_id=node_id, vcpus=vcpus, memory_mb=memory_mb,
            disk_gb=disk_gb, created_at=utcnow()))
    return fits


def held(conn: sa.Connection, consumer_uuid: str) -> int | None:
    """The node ``consumer_uuid`` holds a claim on, if any."""
    return conn.execute(sa.select(allocations.c.node_id).where(
        allocations.c.consumer_uuid == consumer_uuid)).scalar()


def release(conn: sa.Connection, consumer_uuid: str) -> None:
    """Give back what ``consumer_uuid`` holds. Idempotent."""
    row = conn.execute(sa.select(allocations).where(
        allocations.c.consumer_uuid == consumer_uuid)).first()
    if row is None:
        return
    deleted = conn.execute(allocations.delete().where(
        allocations.c.consumer_uuid == consumer_uuid)).rowcount
    if deleted:
        conn.execute(cn.update().where(cn.c.id == row.node_id).values(
            vcpus_used=cn.c.vcpus_used - row.vcpus, memory_mb_used=cn.c.memory_mb_used - row.memory_mb,
            local_gb_used=cn.c.local_gb_used - row.disk_gb, running_vms=cn.c.running_vms - 1))
