"""instance listing indexes: a project's servers, newest first, straight from an index

GET /servers and /servers/detail list a project's live servers newest first
(``project_id = ? AND deleted = false ORDER BY created_at DESC, id DESC``), and
all projects' for an admin. With single-column indexes only, SQLite chose
ix_instances_deleted, read every live row of every project and sorted them
(~150 ms for a page of 1,000 out of 10,000 servers). These let it walk the
index in order and stop at the page (the row id, which is ``id``, is the last
key of every SQLite index, so the tie-break needs no sort either).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 21:20:00.000000
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_instances_project_id_deleted_created_at', 'instances',
                    ['project_id', 'deleted', 'created_at'], unique=False)
    op.create_index('ix_instances_deleted_created_at', 'instances',
                    ['deleted', 'created_at'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_instances_deleted_created_at', table_name='instances')
    op.drop_index('ix_instances_project_id_deleted_created_at', table_name='instances')
