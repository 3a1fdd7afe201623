"""instance changes index: polls with changes-since read a range of an index

``GET /servers?changes-since=T`` filters on ``coalesce(updated_at,
created_at) >= T``; no index had that expression, so SQLite read every row of
the project (or every row in the status's vm_state) for each poll: ~9 ms at
9,000 servers, for an answer of a few rows.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 15:40:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_instances_project_id_changed', 'instances',
                    ['project_id', sa.text('coalesce(updated_at, created_at)')], unique=False)


def downgrade() -> None:
    op.drop_index('ix_instances_project_id_changed', table_name='instances')
