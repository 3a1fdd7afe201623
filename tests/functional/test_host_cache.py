"""The scheduler's host cache follows the database (cirrus/scheduler/host_manager.py)."""
from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import compute_nodes
from cirrus import claims
from cirrus.scheduler.host_manager import HostManager
from cirrus.scheduler.manager import FilterScheduler

TINY = {"flavorid": "1", "name": "m1.tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
        "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}


def request(consumer: str) -> dict[str, Any]:
    return {"flavor": TINY, "image": {"id": None, "properties": {}}, "scheduler_hints": {},
            "retry": {"num_attempts": 1, "hosts": []}, "instance_uuids": [consumer]}


def _stamp_back(conn: sa.Connection) -> None:
    """As if the last write had committed long after it stamped the row."""
    conn.execute(compute_nodes.update().values(updated_at=dt.datetime(2000, 1, 1)))


@pytest.mark.parametrize("settings_overrides", [{
    "computes": 1, "ram_allocation_ratio": 1.0, "fake_host_memory_mb": 1024}])
async def test_changes_made_elsewhere_are_seen(cloud: Cloud) -> None:
    db = cloud.db
    assert db is not None
    hm = HostManager(cloud.settings, db)
    scheduler = FilterScheduler(cloud.settings, db, hm)
    placed = [str(uuid.uuid4()) for _ in range(2)]
    for consumer in placed:
        await scheduler.select_destinations(request(consumer))
    node = hm.hosts[0]
    assert node.free_ram_mb == 0

    await db.run(claims.release, placed[0])  # a delete on the compute
    await hm.refresh()
    assert node.free_ram_mb == 512  # read back incrementally
    placed[0] = str(uuid.uuid4())
    await scheduler.select_destinations(request(placed[0]))
    assert node.free_ram_mb == 0

    # A release whose stamp an incremental look cannot see: the request that
    # finds no host loads every host again, and gets it.
    await db.run(claims.release, placed[1])
    await db.run(_stamp_back)
    await hm.refresh()
    assert node.free_ram_mb == 0  # missed, as designed
    result = await scheduler.select_destinations(request(str(uuid.uuid4())))
    assert [d["host"] for d in result["destinations"]] == [node.host]
