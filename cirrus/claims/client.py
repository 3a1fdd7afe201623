"""The claims seam as compute hosts use it: one transaction per call."""
from __future__ import annotations

from dataclasses import dataclass

from cirrus.claims import allocations
from cirrus.claims.allocations import Allocation
from cirrus.db.engine import Database


@dataclass(frozen=True)
class ClaimsClient:
    """Claims of instances (and migrations) as consumers, over ``db``."""

    db: Database

    async def of(self, consumer_uuid: str) -> Allocation | None:
        """What ``consumer_uuid`` holds."""
        return await self.db.read(allocations.of, consumer_uuid)

    async def claim(self, node_id: int, consumer_uuid: str, vcpus: int, memory_mb: int,
                    disk_gb: int) -> bool:
        """Claim on ``node_id``; False if it does not fit (see :func:`allocations.claim`)."""
        return await self.db.run(allocations.claim, node_id, consumer_uuid, vcpus, memory_mb,
                                 disk_gb)

    async def move(self, from_consumer: str, to_consumer: str) -> bool:
        """Re-own a claim (see :func:`allocations.move`)."""
        return await self.db.run(allocations.move, from_consumer, to_consumer)

    async def release(self, consumer_uuid: str) -> None:
        """Give back what ``consumer_uuid`` holds. Idempotent."""
        await self.db.run(allocations.release, consumer_uuid)
