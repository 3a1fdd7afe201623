"""agent_states_subnetpools: network agents' API state, subnet pools

``network_agent_states``: what the agents API changes on an agent (Neutron's
``agents`` columns ``admin_state_up`` and ``description``, and when an admin
deleted it); an agent with no row is up, undescribed and never deleted.
``network_agents.created_at``: when the host first reported.
``subnetpools`` and ``subnetpool_prefixes``: Neutron's subnet allocation
pools; ``subnets.subnetpool_id``: the pool a subnet was taken from.
``instances.auto_disk_config``: the server's ``OS-DCF:diskConfig`` (AUTO).

Revision ID: 0034
Revises: 0032
Create Date: 2026-11-26 08:10:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0034'
down_revision = '0032'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('network_agent_states',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('agent_type', sa.String(length=64), nullable=False),
                    sa.Column('admin_state_up', sa.Boolean(), nullable=False),
                    sa.Column('description', sa.String(length=255), nullable=False),
                    sa.Column('deleted_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_network_agent_states')))
    op.add_column('network_agents', sa.Column('created_at', sa.DateTime(), nullable=True))
    op.create_table('subnetpools',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('project_id', sa.String(length=64), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('description', sa.String(length=255), nullable=False),
                    sa.Column('ip_version', sa.Integer(), nullable=False),
                    sa.Column('default_prefixlen', sa.Integer(), nullable=False),
                    sa.Column('min_prefixlen', sa.Integer(), nullable=False),
                    sa.Column('max_prefixlen', sa.Integer(), nullable=False),
                    sa.Column('shared', sa.Boolean(), nullable=False),
                    sa.Column('is_default', sa.Boolean(), nullable=False),
                    sa.Column('default_quota', sa.Integer(), nullable=True),
                    sa.Column('revision_number', sa.Integer(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_subnetpools')))
    op.create_index(op.f('ix_subnetpools_project_id'), 'subnetpools', ['project_id'])
    op.create_table('subnetpool_prefixes',
                    sa.Column('subnetpool_id', sa.String(length=36), nullable=False),
                    sa.Column('cidr', sa.String(length=64), nullable=False),
                    sa.ForeignKeyConstraint(['subnetpool_id'], ['subnetpools.id'],
                                            name=op.f('fk_subnetpool_prefixes_subnetpool_id_subnetpools'),
                                            ondelete='CASCADE'),
                    sa.PrimaryKeyConstraint('subnetpool_id', 'cidr',
                                            name=op.f('pk_subnetpool_prefixes')))
    op.add_column('subnets', sa.Column('subnetpool_id', sa.String(length=36), nullable=True))
    op.create_index(op.f('ix_subnets_subnetpool_id'), 'subnets', ['subnetpool_id'])
    op.add_column('instances', sa.Column('auto_disk_config', sa.Boolean(), nullable=False,
                                         server_default=sa.false()))


def downgrade() -> None:
    op.drop_column('instances', 'auto_disk_config')
    op.drop_index(op.f('ix_subnets_subnetpool_id'), table_name='subnets')
    op.drop_column('subnets', 'subnetpool_id')
    op.drop_table('subnetpool_prefixes')
    op.drop_index(op.f('ix_subnetpools_project_id'), table_name='subnetpools')
    op.drop_table('subnetpools')
    op.drop_column('network_agents', 'created_at')
    op.drop_table('network_agent_states')
