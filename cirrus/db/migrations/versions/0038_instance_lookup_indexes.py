"""instance lookup indexes: a guarded save reads one row, whatever the statistics

Every state change of an instance is a guarded ``UPDATE … WHERE uuid = :u AND
deleted IS false AND task_state IN (…) [AND vm_state IN (…)] [AND host …]``
(``compute/instance.py``). PostgreSQL planned some of them on another index
than the uuid's: when its statistics say a condition matches no row — all rows
``deleted`` (a cloud's history, or a table analysed between a benchmark's
runs), no instance yet ``building``, every ``host`` still NULL (a fresh
table's first autoanalyze) — an index on ``deleted``, on ``(vm_state,
task_state, deleted)`` or on ``host`` is estimated at one row, as the uuid's
is, and is a little cheaper. The save then reads every live, building or
same-host instance to find its one: in the boot benchmark 61–87 buffers for
the compute's first save instead of ~24, and ~270 entries of
``ix_instances_host`` read per scan; on a copy of the benchmark's table with
its statistics taken after the deletes, 85–181 buffers (0.12–0.40 ms) for two
of a boot's four saves against 22–26 (0.07–0.10 ms) after
(docs/performance.md, "Round five"). It grows with the table.

So no index a save can use ends before the row is found:

- ``(deleted, created_at)`` becomes ``(created_at, deleted)``: the listing of
  every project's live servers, newest first, walks the same index in order
  and checks ``deleted`` in it; a save has no ``created_at`` to start from.
- ``(vm_state, task_state, deleted)`` gains ``id`` and ``uuid``, and on
  PostgreSQL holds only the instances waiting to build (``building``/
  ``scheduling``, live). Build admission's count of them reads it as before
  (a plan with its values, which PostgreSQL keeps choosing for that statement
  over a generic one that could not use the index), in ``id`` order, which is
  about the order of the rows in the table: with ``uuid`` right after the
  states the count read the rows in random order, one buffer per entry (250
  a count in one run against ~30). A save that names those states and picks
  this index reads only its entries, and the row whose ``uuid`` matches. No
  other statement can use it: the ``changes-since`` poll with a status had
  picked the whole index by the same mistake, reading every instance in that
  state per poll. SQLite, whose partial indexes do not serve statements with
  bound values, keeps it whole.
- ``(host)`` gains ``uuid``: a host's instances as before; a save that names
  its host (or ``host IS NULL``) finds its row.

The same on SQLite but for the partial index (whose planner already preferred
the unique index), so the models stay one description for both.

Revision ID: 0038
Revises: 0037
Create Date: 2026-11-26 11:40:00.000000
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0038'
down_revision = '0037'
branch_labels = None
depends_on = None

# What build admission counts (``compute/admission.py``), written as it
# writes it: PostgreSQL proves a statement matches by comparing the forms.
_WAITING = "vm_state = 'building' AND task_state = 'scheduling' AND deleted IS false"

# (old name, old columns), (new name, new columns)
_RESHAPED = (
    (('ix_instances_deleted_created_at', ['deleted', 'created_at']),
     ('ix_instances_created_at_deleted', ['created_at', 'deleted'])),
    (('ix_instances_vm_state_task_state_deleted', ['vm_state', 'task_state', 'deleted']),
     ('ix_instances_vm_state_task_state_deleted_id_uuid', ['vm_state', 'task_state', 'deleted', 'id', 'uuid'])),
    (('ix_instances_host', ['host']),
     ('ix_instances_host_uuid', ['host', 'uuid'])),
)


def upgrade() -> None:
    for (old, _), (new, columns) in _RESHAPED:
        waiting = sa.text(_WAITING) if new.startswith('ix_instances_vm_state') else None
        op.create_index(new, 'instances', columns, unique=False, postgresql_where=waiting)
        op.drop_index(old, table_name='instances')


def downgrade() -> None:
    for (old, columns), (new, _) in _RESHAPED:
        op.create_index(old, 'instances', columns, unique=False)
        op.drop_index(new, table_name='instances')
