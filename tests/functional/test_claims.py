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


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
@pytest.mark.parametrize("case, want, memory_mb, expect", [
    ("no claim yet: claimed", None, TINY[1], (None, True)),
    ("no claim yet, no room: nothing left behind", None, 10 ** 9, (None, False)),
    ("held already: kept as it is, nothing added", "held", TINY[1], ("node", False)),
    ("held already, even where it no longer fits", "held", 10 ** 9, ("node", False)),
])
async def test_claim_unless_held(cloud: Cloud, case: str, want: str | None, memory_mb: int,
                                 expect: tuple[str | None, bool]) -> None:
    """The boot's claim (one statement on PostgreSQL, three on SQLite) gives
    what the look, then the claim, gave: the held node with nothing changed,
    a claim, or no room with no row left."""
    db = cloud.db
    assert db is not None
    node_id = await db.read(_node)
    consumer = str(uuid.uuid4())
    if want == "held":
        assert await db.run(claims.claim, node_id, consumer, *TINY)
    before = await db.read(_usage, node_id)
    got = await db.run(claims.claim_unless_held, node_id, consumer, TINY[0], memory_mb, TINY[2])
    assert got == claims.Attempt(node_id if expect[0] else None, expect[1]), case
    after = await db.read(_usage, node_id)
    assert after == ((before[0] + memory_mb,) * 2 if got.claimed else before), case
    held = await db.read(claims.held, consumer)
    assert held == (node_id if want == "held" or got.claimed else None), case


@pytest.mark.parametrize("settings_overrides", [{"computes": 1}])
async def test_claim_unless_held_meets_a_twin_mid_claim(cloud: Cloud) -> None:
    """A twin's claim made after the look, before the insert, raises
    AlreadyClaimed with nothing changed (on PostgreSQL: a twin's open
    transaction holds the row; the statement waits, then finds it)."""
    db = cloud.db
    assert db is not None
    node_id = await db.read(_node)
    consumer = str(uuid.uuid4())
    if db.is_sqlite:  # one writer: no twin can come between; the same answer as PostgreSQL's
        assert await db.run(claims.claim, node_id, consumer, *TINY)
        got = await db.run(claims.claim_unless_held, node_id, consumer, *TINY)
        assert got == claims.Attempt(node_id, False)
        return
    with db.engine.connect() as conn:
        with conn.begin():
            assert claims.claim(conn, node_id, consumer, *TINY)
            raced = asyncio.ensure_future(db.run(claims.claim_unless_held, node_id, consumer,
                                                 *TINY))
            # The racer waits on the twin's uncommitted row until this COMMIT.
            for _ in range(200):
                if await db.read(_waiting_on_a_lock):
                    break
                await asyncio.sleep(0.01)
            assert not raced.done()
    with pytest.raises(claims.AlreadyClaimed):
        await raced
    assert await db.read(_usage, node_id) == (TINY[1], TINY[1])


def _waiting_on_a_lock(conn: sa.Connection) -> bool:
    """Whether a backend of this database waits for a lock (PostgreSQL)."""
    return bool(conn.execute(sa.text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'")).scalar_one())
