"""The scheduler's move claims (cirrus/scheduler/moves.py) as a table: what
each node holds for the instance and its migration after a move's claim."""
from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa

from cirrus import claims
from cirrus.bootstrap import Cloud
from cirrus.compute.models import compute_nodes
from cirrus.scheduler.moves import MoveSpec, claim_move
from cirrus.scheduler.spec import Spec

TINY = (1, 512, 1)


def spec(memory_mb: int) -> Spec:
    return Spec(vcpus=1, memory_mb=memory_mb, disk_gb=1, availability_zone=None, image_props={})


def _nodes(conn: sa.Connection) -> list[int]:
    return list(conn.execute(sa.select(compute_nodes.c.id).order_by(compute_nodes.c.id)).scalars())


def _used(conn: sa.Connection) -> list[int]:
    return list(conn.execute(sa.select(compute_nodes.c.memory_mb_used).order_by(
        compute_nodes.c.id)).scalars())


# (wanted MiB on the destination, evacuation?) → (claimed?, instance holds (node index, MiB),
# migration holds (node index, MiB) or None, memory used per node)
CASES = [
    (1024, False, True, (1, 1024), (0, 512), [512, 1024]),
    (1024, True, True, (1, 1024), None, [0, 1024]),
    (10 ** 6, False, False, (0, 512), None, [512, 0]),  # nothing fits: as before
    (10 ** 6, True, False, (0, 512), None, [512, 0]),
]


@pytest.mark.parametrize("wanted, evacuation, claimed, instance, migration, used", CASES)
async def test_claim_move(cloud: Cloud, wanted: int, evacuation: bool, claimed: bool,
                          instance: tuple[int, int], migration: tuple[int, int] | None,
                          used: list[int]) -> None:
    db = cloud.db
    assert db is not None
    nodes = await db.read(_nodes)
    consumer, move_id = str(uuid.uuid4()), str(uuid.uuid4())
    assert await db.run(claims.claim, nodes[0], consumer, *TINY)
    move = MoveSpec(migration_uuid=move_id, release_source=evacuation)
    node, status, failed = await db.run(claim_move, consumer, [nodes[1]], spec(wanted),
                                        move=move)
    assert (node is not None) is claimed
    assert status == ("new" if claimed else "full")
    assert failed == ([] if claimed else [nodes[1]])
    held = await db.read(claims.of, consumer)
    assert held is not None and (nodes.index(held["node_id"]), held["memory_mb"]) == instance
    of_move = await db.read(claims.of, move_id)
    assert (None if of_move is None else
            (nodes.index(of_move["node_id"]), of_move["memory_mb"])) == migration
    assert await db.read(_used) == used


async def test_a_second_delivery_keeps_the_first_ones_claims(cloud: Cloud) -> None:
    db = cloud.db
    assert db is not None
    nodes = await db.read(_nodes)
    consumer, move_id = str(uuid.uuid4()), str(uuid.uuid4())
    assert await db.run(claims.claim, nodes[0], consumer, *TINY)
    move = MoveSpec(migration_uuid=move_id, release_source=False)
    first = await db.run(claim_move, consumer, [nodes[1]], spec(1024), move=move)
    again = await db.run(claim_move, consumer, [nodes[1]], spec(1024), move=move)
    assert first == (nodes[1], "new", []) and again == (nodes[1], "held", [])
    assert await db.read(_used) == [512, 1024]
