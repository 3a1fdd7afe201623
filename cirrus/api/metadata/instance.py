"""One instance's metadata sources, read from the database and kept briefly.

Cloud-init fetches a dozen paths at boot; one read serves them all for
``metadata_cache_expiration`` seconds (Nova caches the same way), so a guest
costs the database one query set per boot, not one per path.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import sqlalchemy as sa

from cirrus.compute import exception as cexc
from cirrus.compute import instance as inst
from cirrus.compute.queries import cached_network_info
from cirrus.db.engine import Database
from cirrus.network.model import VIF
from cirrus.network.models import floatingips


@dataclass(frozen=True)
class InstanceMetadata:
    """What the metadata trees are built from (Nova's ``InstanceMetadata``)."""

    instance: dict[str, Any]
    network_info: list[VIF]
    floating_ips: list[str] = field(default_factory=list)


def load(conn: sa.Connection, uuid: str) -> InstanceMetadata | None:
    """The live instance ``uuid``'s metadata sources, or None if there is none."""
    try:
        row = inst.get(conn, uuid)
    except cexc.InstanceNotFound:
        return None
    network_info = cached_network_info(conn, uuid)
    return InstanceMetadata(row, list(network_info),
                            floating_addresses(conn, [vif["id"] for vif in network_info]))


def floating_addresses(conn: sa.Connection, port_ids: list[str]) -> list[str]:
    """The floating IPs associated with any of ``port_ids``, sorted."""
    if not port_ids:
        return []
    found = conn.execute(sa.select(floatingips.c.floating_ip_address)
                         .where(floatingips.c.fixed_port_id.in_(port_ids))
                         .order_by(floatingips.c.floating_ip_address)).scalars()
    return [str(a) for a in found]


class MetadataCache:
    """Instances' metadata sources by uuid, each kept ``ttl`` seconds."""

    def __init__(self, db: Database, ttl: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self.ttl = ttl
        self.clock = clock
        self._entries: dict[str, tuple[float, InstanceMetadata]] = {}

    async def get(self, uuid: str) -> InstanceMetadata | None:
        """The sources of ``uuid`` (None: no such live instance, not cached)."""
        now = self.clock()
        hit = self._entries.get(uuid)
        if hit is not None and now - hit[0] < self.ttl:
            return hit[1]
        found: InstanceMetadata | None = await self.db.read(load, uuid)
        self._forget_expired(now)
        if found is not None and self.ttl > 0:
            self._entries[uuid] = (now, found)
        return found

    def invalidate(self, uuid: str) -> None:
        """Forget ``uuid`` (its row changed through this service)."""
        self._entries.pop(uuid, None)

    def _forget_expired(self, now: float) -> None:
        # Bounded by the instances that asked within one ttl.
        if len(self._entries) > 1024:
            self._entries = {k: v for k, v in self._entries.items() if now - v[0] < self.ttl}
