"""network segments: provider attributes on networks, the hosts' network agents

Revision ID: 0022
Revises: 0012
Create Date: 2026-11-25 22:30:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0022'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMNs: a batch copy of ``networks`` drops the table, which
    # its subnets' and ports' foreign keys refuse once it holds rows.
    op.add_column('networks', sa.Column('network_type', sa.String(length=16),
                                        server_default='local', nullable=False))
    op.add_column('networks', sa.Column('physical_network', sa.String(length=64),
                                        server_default='', nullable=False))
    op.add_column('networks', sa.Column('segmentation_id', sa.Integer(), nullable=True))
    op.create_index('ix_networks_segment', 'networks',
                    ['network_type', 'physical_network', 'segmentation_id'], unique=True)
    op.create_table('network_agents',
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('tunneling_ip', sa.String(length=64), nullable=False),
                    sa.Column('dhcp', sa.Boolean(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('host', name=op.f('pk_network_agents')))


def downgrade() -> None:
    op.drop_table('network_agents')
    op.drop_index('ix_networks_segment', table_name='networks')
    for column in ('segmentation_id', 'physical_network', 'network_type'):
        op.drop_column('networks', column)
