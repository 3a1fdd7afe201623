"""migrations: Nova's record of an instance moving between hosts

Resize, cold migration, live migration and evacuation each write one row
(``GET /os-migrations``, ``GET /servers/{id}/migrations``); the flavors of a
resize are kept on it for a revert.

Revision ID: 0012
Revises: 0010
Create Date: 2026-11-25 19:00:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0012'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('migrations',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('uuid', sa.String(length=36), nullable=False),
                    sa.Column('instance_uuid', sa.String(length=36), nullable=False),
                    sa.Column('source_compute', sa.String(length=255), nullable=True),
                    sa.Column('dest_compute', sa.String(length=255), nullable=True),
                    sa.Column('source_node', sa.String(length=255), nullable=True),
                    sa.Column('dest_node', sa.String(length=255), nullable=True),
                    sa.Column('dest_host', sa.String(length=255), nullable=True),
                    sa.Column('old_instance_type_id', sa.Integer(), nullable=True),
                    sa.Column('new_instance_type_id', sa.Integer(), nullable=True),
                    sa.Column('old_flavor', sa.JSON(), nullable=True),
                    sa.Column('new_flavor', sa.JSON(), nullable=True),
                    sa.Column('migration_type', sa.String(length=32), nullable=False),
                    sa.Column('status', sa.String(length=255), nullable=False),
                    sa.Column('user_id', sa.String(length=64), nullable=True),
                    sa.Column('project_id', sa.String(length=64), nullable=True),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.Column('deleted', sa.Boolean(), nullable=False),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_migrations')),
                    sa.UniqueConstraint('uuid', name=op.f('uq_migrations_uuid')))
    op.create_index(op.f('ix_migrations_instance_uuid'), 'migrations', ['instance_uuid'])
    op.create_index('ix_migrations_created_at_id', 'migrations', ['created_at', 'id'])
    op.create_index('ix_migrations_updated_at', 'migrations', ['updated_at'])


def downgrade() -> None:
    op.drop_index('ix_migrations_updated_at', table_name='migrations')
    op.drop_index('ix_migrations_created_at_id', table_name='migrations')
    op.drop_index(op.f('ix_migrations_instance_uuid'), table_name='migrations')
    op.drop_table('migrations')
