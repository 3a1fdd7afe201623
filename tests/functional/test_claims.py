"""Claims against the other writers of a node's usage.

Regression (PostgreSQL): the usage heal summed the node's allocations, then
wrote the sum; a claim that committed in between was lost from ``*_used``,
and the node later took more than it has.
"""
from __future__ import annotations

import asyncio
import uuid

import pytest
import sqlalchemy as sa

from cirrus.bootstrap import Cloud
from cirrus.compute.models import allocations, compute_nodes
from cirrus.compute.resource_tracker import _heal_usage
from cirrus import claims

TINY = (1, 512, 1)  # vcpus, MiB, GB


def _usage(conn: sa.Connection, node_id: int) -> tuple[int, int]:
    """(memory_mb_used, what the node's allocations add up to)."""
    used = conn.execute(sa.select(compute_nodes.c.memory_mb_used).where(
        compute_nodes.c.id == node_id)).scalar_one()
    held = conn.execute(sa.select(sa.func.coalesce(sa.func.sum(allocations.c.memory_mb), 0)).where(
        allocations.c.node_id == node_id)).scalar_one()
    return used, held


def _node(conn: sa.Connection) -> int:
    return conn.execute(sa.select(compute_nodes.c.id)).scalar_one()


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_heal_during_a_claim_keeps_the_claim(cloud: Cloud) -> None:
    """A heal that starts while a claim is in flight counts that claim."""
    db = cloud.db
    assert db is not None
    node_id = await db.read(_node)
    for _ in range(2):
        assert await db.run(claims.claim, node_id, str(uuid.uuid4()), *TINY)
    with db.engine.connect() as conn:
        with conn.begin():
            assert claims.claim(conn, node_id, str(uuid.uuid4()), *TINY)
            heal = asyncio.ensure_future(db.run(_heal_usage, node_id))
            await asyncio.sleep(0.5)  # the heal reads (and waits) while the claim is open
            assert not heal.done()
    await heal
    assert await db.read(_usage, node_id) == (3 * TINY[1], 3 * TINY[1])


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_release_gives_back_what_it_deleted(cloud: Cloud) -> None:
    db = cloud.db
    assert db is not None
    node_id = await db.read(_node)
    consumer = str(uuid.uuid4())
    assert await db.run(claims.claim, node_id, consumer, *TINY)
    await asyncio.gather(*[db.run(claims.release, consumer) for _ in range(4)])
    assert await db.read(_usage, node_id) == (0, 0)


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_prepared_claim_twin_held_release(cloud: Cloud) -> None:
    """The prepared statements: a twin claim changes nothing and raises,
    ``held`` names the node, a full node refuses, release gives all back and
    ``updated_at`` is a datetime the host cache can compare."""
    db = cloud.db
    assert db is not None
    node_id = await db.read(_node)
    consumer = str(uuid.uuid4())
    assert await db.run(claims.claim, node_id, consumer, *TINY)
    with pytest.raises(claims.AlreadyClaimed):
        await db.run(claims.claim, node_id, consumer, *TINY)
    assert await db.read(_usage, node_id) == (TINY[1], TINY[1])
    assert await db.read(claims.held, consumer) == node_id
    assert await db.read(claims.held, str(uuid.uuid4())) is None
    assert not await db.run(claims.claim, node_id, str(uuid.uuid4()), 1, 10 ** 9, 1)
    updated = await db.read(lambda conn: conn.execute(sa.select(compute_nodes.c.updated_at).where(
        compute_nodes.c.id == node_id)).scalar_one())
    assert updated is not None and updated.year >= 2000
    await db.run(claims.release, consumer)
    assert await db.read(_usage, node_id) == (0, 0)
    assert await db.read(claims.held, consumer) is None
