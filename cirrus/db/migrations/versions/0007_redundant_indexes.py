"""redundant indexes: three single-column indexes that a composite one covers

``instances.project_id`` leads ``ix_instances_project_id_deleted_created_at``
(and the changes index), ``instances.deleted`` leads
``ix_instances_deleted_created_at``, and ``ports.network_id`` leads the
``(network_id, mac_address)`` unique key: every lookup by those columns can
use the composite one, on SQLite and PostgreSQL alike. Each index still cost
every insert and delete of its table, and every soft delete an update of
``ix_instances_deleted``. Without the two instance indexes an instance insert
took 34–52 µs instead of 54–76, a soft delete 48–69 instead of 61–92 (SQLite,
on 10,000 rows, 20 a commit, three alternating rounds).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 21:20:00.000000
"""
from alembic import op


revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

# (index, table, its one column)
_REDUNDANT = (
    ('ix_instances_project_id', 'instances', 'project_id'),
    ('ix_instances_deleted', 'instances', 'deleted'),
    ('ix_ports_network_id', 'ports', 'network_id'),
)


def upgrade() -> None:
    for name, table, _column in _REDUNDANT:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, column in _REDUNDANT:
        op.create_index(name, table, [column], unique=False)
