"""The boot's claim on PostgreSQL is one statement in autocommit
(``claims.claim_unless_held``): it writes nothing unless it claims. Claims
racing for the last room on a node: exactly as many as fit win, each winner's
row and its share of the node's usage go in together, and no loser leaves a
row behind (no transaction would take it back)."""
from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import pytest
import sqlalchemy as sa

from cirrus import claims
from cirrus.compute.models import allocations, compute_nodes
from cirrus.db import migrate
from tests.databases import scratch_postgres

ROOM = 5  # vCPUs on the node (allocation ratio 1): five claims of one fit
RACERS = 16


@pytest.fixture(scope="module")
def engine() -> Iterator[sa.Engine]:
    """A connection of its own for every racer (no pool for them to queue on)."""
    with scratch_postgres("cirrus_claimrace") as url:
        migrate.upgrade(url)
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        yield engine
        engine.dispose()


def _node(engine: sa.Engine, name: str) -> int:
    with engine.begin() as conn:
        return int(conn.execute(compute_nodes.insert().values(
            uuid=str(uuid.uuid4()), host=name, hypervisor_hostname=name, vcpus=ROOM,
            memory_mb=10 ** 6, local_gb=10 ** 4, cpu_allocation_ratio=1.0,
            ram_allocation_ratio=1.0, disk_allocation_ratio=1.0).returning(
            compute_nodes.c.id)).scalar_one())


def test_racing_claims_take_the_room_exactly_and_losers_leave_nothing(
        engine: sa.Engine) -> None:
    node_id = _node(engine, "race-1")
    start = threading.Barrier(RACERS)

    def racer(_: int) -> claims.Attempt:
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            start.wait(30)
            return claims.claim_unless_held(conn, node_id, str(uuid.uuid4()), 1, 512, 1)

    with ThreadPoolExecutor(RACERS) as pool:
        attempts = list(pool.map(racer, range(RACERS)))
    assert sum(a.claimed for a in attempts) == ROOM
    assert all(a.held is None for a in attempts)
    with engine.connect() as conn:
        used, vms = conn.execute(sa.select(compute_nodes.c.vcpus_used, compute_nodes.c.running_vms)
                                 .where(compute_nodes.c.id == node_id)).one()
        rows = conn.execute(sa.select(sa.func.count()).select_from(allocations).where(
            allocations.c.node_id == node_id)).scalar_one()
    assert (used, vms, rows) == (ROOM, ROOM, ROOM)


def test_twins_racing_for_one_consumer_claim_once(engine: sa.Engine) -> None:
    """Deliveries of one request claiming at once: one claims, the others
    find its claim (held) or meet it mid-statement (AlreadyClaimed)."""
    node_id = _node(engine, "race-2")
    consumer = str(uuid.uuid4())
    start = threading.Barrier(8)

    def twin(_: int) -> claims.Attempt | str:
        with engine.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT")
            start.wait(30)
            try:
                return claims.claim_unless_held(conn, node_id, consumer, 1, 512, 1)
            except claims.AlreadyClaimed:
                return "twin"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(twin, range(8)))
    assert sum(1 for o in outcomes if isinstance(o, claims.Attempt) and o.claimed) == 1
    assert all(o == "twin" or o.claimed or o.held == node_id for o in outcomes)
    with engine.connect() as conn:
        assert conn.execute(sa.select(compute_nodes.c.vcpus_used).where(
            compute_nodes.c.id == node_id)).scalar_one() == 1
