"""host aggregates and flavor access

Host aggregates (``aggregates``, their hosts and metadata) group compute hosts;
an aggregate's ``availability_zone`` metadata is its hosts' zone. Private
flavors are open to the projects in ``flavor_projects``.

Revision ID: 0014
Revises: 0016
Create Date: 2026-11-25 19:00:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0014'
down_revision = '0016'
branch_labels = None
depends_on = None


def _timestamps() -> list[sa.Column[object]]:
    return [sa.Column('created_at', sa.DateTime(), nullable=False),
            sa.Column('updated_at', sa.DateTime(), nullable=True)]


def upgrade() -> None:
    op.create_table('aggregates',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('uuid', sa.String(length=36), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    *_timestamps(),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_aggregates')),
                    sa.UniqueConstraint('name', name=op.f('uq_aggregates_name')),
                    sa.UniqueConstraint('uuid', name=op.f('uq_aggregates_uuid')))
    op.create_table('aggregate_hosts',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('aggregate_id', sa.Integer(), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    *_timestamps(),
                    sa.ForeignKeyConstraint(['aggregate_id'], ['aggregates.id'],
                                            name=op.f('fk_aggregate_hosts_aggregate_id_aggregates')),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_aggregate_hosts')),
                    sa.UniqueConstraint('aggregate_id', 'host',
                                        name=op.f('uq_aggregate_hosts_aggregate_id_host')))
    op.create_index(op.f('ix_aggregate_hosts_host'), 'aggregate_hosts', ['host'], unique=False)
    op.create_table('aggregate_metadata',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('aggregate_id', sa.Integer(), nullable=False),
                    sa.Column('key', sa.String(length=255), nullable=False),
                    sa.Column('value', sa.String(length=255), nullable=False),
                    *_timestamps(),
                    sa.ForeignKeyConstraint(['aggregate_id'], ['aggregates.id'],
                                            name=op.f('fk_aggregate_metadata_aggregate_id_aggregates')),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_aggregate_metadata')),
                    sa.UniqueConstraint('aggregate_id', 'key',
                                        name=op.f('uq_aggregate_metadata_aggregate_id_key')))
    op.create_table('flavor_projects',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('flavorid', sa.String(length=255), nullable=False),
                    sa.Column('project_id', sa.String(length=255), nullable=False),
                    *_timestamps(),
                    sa.ForeignKeyConstraint(['flavorid'], ['flavors.flavorid'],
                                            name=op.f('fk_flavor_projects_flavorid_flavors')),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_flavor_projects')),
                    sa.UniqueConstraint('flavorid', 'project_id',
                                        name=op.f('uq_flavor_projects_flavorid_project_id')))
    op.create_index(op.f('ix_flavor_projects_project_id'), 'flavor_projects', ['project_id'],
                    unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_flavor_projects_project_id'), table_name='flavor_projects')
    op.drop_table('flavor_projects')
    op.drop_table('aggregate_metadata')
    op.drop_index(op.f('ix_aggregate_hosts_host'), table_name='aggregate_hosts')
    op.drop_table('aggregate_hosts')
    op.drop_table('aggregates')
