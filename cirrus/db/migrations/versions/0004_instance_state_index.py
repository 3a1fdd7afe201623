"""instance state index: build admission counts the instances waiting to build

While creates wait for admission (cirrus/compute/admission.py) the API counts
the live instances in BUILD/SCHEDULING every 20 ms; this index answers from
those rows alone instead of every live row.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 14:20:00.000000
"""
from alembic import op


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_instances_vm_state_task_state_deleted', 'instances',
                    ['vm_state', 'task_state', 'deleted'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_instances_vm_state_task_state_deleted', table_name='instances')
