"""PostgreSQL's plans of the guarded saves (migration 0038): each finds its one
row through an index on ``uuid``, even when the table's statistics say no row
is live, building or on a host — the statistics a cloud's history of deleted
instances, or a fresh table's first autoanalyze, gives the planner."""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

import psycopg
import pytest
import sqlalchemy as sa

from cirrus.compute import instance as inst
from cirrus.compute.admission import count_backlog
from cirrus.db import migrate
from cirrus.db.engine import make_engine
from tests.databases import scratch_postgres
from tests.unit.test_compute_rules import insert_instance

HISTORY = 300  # deleted instances the statistics are taken over
LIVE = 40  # instances of each kind inserted after, unknown to the statistics


@pytest.fixture(scope="module")
def engine() -> Iterator[sa.Engine]:
    with scratch_postgres("cirrus_pgplans") as url:
        migrate.upgrade(url)
        engine = make_engine(url)
        _fill(engine)
        yield engine
        engine.dispose()


def _fill(engine: sa.Engine) -> None:
    """A history of deleted instances on three hosts, analysed; then live ones
    waiting for a host and building on one, which the statistics do not know."""
    with engine.begin() as conn:
        for n in range(HISTORY):
            insert_instance(conn, f"old-{n}", host=f"h{n % 3}", vm_state="deleted",
                            task_state=None, deleted=True)
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(sa.text("ANALYZE instances"))
    with engine.begin() as conn:
        for n in range(LIVE):
            insert_instance(conn, f"waiting-{n}")
            insert_instance(conn, f"placed-{n}", host="h1")
            insert_instance(conn, f"spawning-{n}", host="h1", task_state="spawning")


# The boot's saves (conductor, compute), as the services make them: the
# instance, the values, expected task state, vm state, host, and whether the
# row comes back (``save_and_get``).
SAVES: dict[str, tuple[Any, ...]] = {
    "host recorded": (f"waiting-{LIVE - 1}", {"host": "h2", "node": "h2"},
                      "scheduling", "building", None, False),
    "build started": (f"placed-{LIVE - 1}", {"task_state": "networking"},
                      "scheduling", "building", "h1", True),
    "active": (f"spawning-{LIVE - 1}", {"vm_state": "active", "task_state": None},
               "spawning", inst._UNSET, inst._UNSET, False),
}


def _sent(engine: sa.Engine, save: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """The UPDATE ``inst.save`` sends for ``save``, with its parameters."""
    key, params, _values = inst.save_params(*save)
    plan = inst._SAVES[key]._plan(engine.dialect)
    args = plan.bind(params)
    assert isinstance(args, dict)
    return plan.sql, args


def _plan(engine: sa.Engine, stmt: str, params: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    """The scans of ``stmt``'s plan in ``mode`` (a generic plan is the one a
    statement prepared on a pooled connection runs; custom, its first ones),
    executed by EXPLAIN ANALYZE in a transaction rolled back."""
    names = list(dict.fromkeys(re.findall(r"%\((\w+)\)s", stmt)))
    numbered = re.sub(r"%\((\w+)\)s", lambda m: f"${names.index(m.group(1)) + 1}", stmt)
    with engine.connect() as conn, conn.begin() as tx:
        raw = conn.connection.driver_connection
        assert isinstance(raw, psycopg.Connection)
        cur = psycopg.ClientCursor(raw)
        cur.execute(f"SET LOCAL plan_cache_mode = {mode}")
        cur.execute(f"PREPARE guarded AS {numbered}")
        args = ", ".join(cur.mogrify("%s", (params[n],)) for n in names)
        cur.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE guarded({args})")
        row = cur.fetchone()
        assert row is not None
        plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
        cur.execute("DEALLOCATE guarded")
        tx.rollback()
    return list(_scans(plan[0]["Plan"]))


def _scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "Scan" in node["Node Type"]:
        yield node
    for child in node.get("Plans", []):
        yield from _scans(child)


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
@pytest.mark.parametrize("name", sorted(SAVES))
def test_a_guarded_save_reads_its_row_alone(engine: sa.Engine, name: str, mode: str) -> None:
    stmt, params = _sent(engine, SAVES[name])
    scans = _plan(engine, stmt, params, mode)
    assert len(scans) == 1, scans
    scan = scans[0]
    assert scan["Node Type"] == "Index Scan", scan
    assert "uuid" in scan["Index Cond"], scan
    assert scan.get("Rows Removed by Filter", 0) == 0, scan
    assert scan["Actual Rows"] == 1, scan


def _explain(engine: sa.Engine, sql: str, mode: str) -> str:
    with engine.connect() as conn, conn.begin():
        conn.execute(sa.text(f"SET LOCAL plan_cache_mode = {mode}"))
        return "\n".join(r[0] for r in conn.execute(sa.text(sql)))


def test_the_backlog_count_reads_only_its_partial_index(engine: sa.Engine) -> None:
    """Build admission's count of waiting instances (migration 0004) reads the
    state index alone, which on PostgreSQL holds only those. Its statement is
    prepared on a pooled connection and run by its generic plan, as every
    statement there (``db.engine._planned_once``): with its states as
    literals, that plan still uses the index and never reads the table."""
    with engine.connect() as conn:
        for _ in range(3):
            assert count_backlog(conn) == 2 * LIVE  # waiting, and placed not started
        prepared = conn.execute(sa.text(
            "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE 'SELECT count(*)%instances.vm_state%'")).one()
        assert prepared.generic_plans > 0 and prepared.custom_plans == 0, prepared
        text = "\n".join(r[0] for r in conn.execute(sa.text(f"EXPLAIN EXECUTE {prepared.name}")))
    assert "Index Only Scan using ix_instances_vm_state_task_state_deleted_id_uuid" in text, text


def test_a_statement_is_prepared_and_planned_once(engine: sa.Engine) -> None:
    """Every statement on cirrus's PostgreSQL connections is prepared at its
    first execution and run by one generic plan from then on: never planned
    again per execution."""
    with engine.connect() as conn:
        for _ in range(7):
            conn.execute(sa.select(inst.instances.c.uuid).where(
                inst.instances.c.uuid == f"spawning-{LIVE - 1}")).all()
        prepared = conn.execute(sa.text(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE 'SELECT instances.uuid %'")).one()
    assert (prepared.generic_plans, prepared.custom_plans) == (7, 0), prepared


@pytest.mark.parametrize("mode", ["force_generic_plan", "force_custom_plan"])
def test_a_poll_for_changes_with_a_status_reads_the_changes_index(engine: sa.Engine,
                                                                   mode: str) -> None:
    """``changes-since`` with a status in a state the statistics have not seen
    (as early in a fresh cloud): the state index, whole, looked like one row
    and was read through; on PostgreSQL it no longer serves other states."""
    with engine.connect() as conn, conn.begin():
        conn.execute(sa.text(f"SET LOCAL plan_cache_mode = {mode}"))
        conn.execute(sa.text(
            "PREPARE poll(varchar, timestamp, varchar, int) AS SELECT id, uuid FROM instances "
            "WHERE project_id = $1 AND coalesce(updated_at, created_at) >= $2 "
            "AND vm_state IN ($3) ORDER BY created_at DESC, id DESC LIMIT $4"))
        text = "\n".join(r[0] for r in conn.execute(sa.text(
            "EXPLAIN EXECUTE poll('p1', '2026-01-01', 'active', 1000)")))
        conn.execute(sa.text("DEALLOCATE poll"))
    assert "ix_instances_vm_state" not in text, text
