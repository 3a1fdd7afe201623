"""counters at commit: on PostgreSQL the usage counters change at COMMIT

The triggers of migrations 0006 (``project_usages``, ``subnets.allocated``)
and 0008 (``port_usages``) updated their counter row in the statement that
changed an instance, an address or a port, so the row stayed locked until
that transaction committed, round trips later: every boot of a project queued
behind the one before it (99 % of PostgreSQL's statement time was these waits;
docs/performance.md, "Distributed (issue 22)"). On PostgreSQL they become
constraint triggers, ``DEFERRABLE INITIALLY DEFERRED``: the same functions,
fired at COMMIT, so a counter row is locked only while its transaction
commits. A transaction no longer sees its own changes in a counter; the quota
checks that must (``compute/quotas.py``, the port allocation's recheck) lock
the row themselves as their transaction's last statement and add what they
inserted. SQLite, one writer, keeps its triggers as they are.

Revision ID: 0032
Revises: 0025
Create Date: 2026-11-26 05:10:00.000000
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from alembic import op

from cirrus.db.triggers import Trigger, defer


revision = '0032'
down_revision = '0030'
branch_labels = None
depends_on = None


def _triggers_of(filename: str) -> tuple[Trigger, ...]:
    """The counter triggers as the migration ``filename`` made them."""
    spec = importlib.util.spec_from_file_location(f"_cirrus_{Path(filename).stem}",
                                                  Path(__file__).with_name(filename))
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module._TRIGGERS)


def _counters() -> tuple[Trigger, ...]:
    return _triggers_of("0006_usage_counters.py") + _triggers_of("0008_port_usages.py")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for trigger in _counters():
        defer(op.execute, trigger)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for trigger in _counters():
        defer(op.execute, trigger, deferred=False)
