"""network API: resource tags, per-project network quotas, DNS domains

Neutron's ``standard-attr-tag`` keeps one row per (resource, tag); the
networks, subnets, ports and security groups it tags all have uuid ids, so the
id alone names the resource (``resource_type`` says which table, for
cleanups and a reader). The tag index answers the ``tags``/``tags-any``
listing filters. ``network_quotas`` holds the limits set through
``PUT /v2.0/quotas/{project_id}``: a project without a row has the defaults.
``dns_domain`` is the ``dns-integration`` attribute of networks and the
``dns-domain-ports`` one of ports.

Revision ID: 0023
Revises: 0012
Create Date: 2026-11-25 22:20:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0023'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('network_tags',
                    sa.Column('resource_id', sa.String(length=36), nullable=False),
                    sa.Column('tag', sa.String(length=255), nullable=False),
                    sa.Column('resource_type', sa.String(length=32), nullable=False),
                    sa.PrimaryKeyConstraint('resource_id', 'tag', name=op.f('pk_network_tags')))
    op.create_index('ix_network_tags_tag', 'network_tags', ['tag', 'resource_id'], unique=False)
    op.create_table('network_quotas',
                    sa.Column('project_id', sa.String(length=64), nullable=False),
                    sa.Column('resource', sa.String(length=32), nullable=False),
                    sa.Column('limit', sa.Integer(), nullable=False),
                    sa.PrimaryKeyConstraint('project_id', 'resource',
                                            name=op.f('pk_network_quotas')))
    # A plain ADD COLUMN: a batch copy of ``ports`` would lose its usage triggers.
    for table in ('networks', 'ports'):
        op.add_column(table, sa.Column('dns_domain', sa.String(length=255), nullable=False,
                                       server_default=''))


def downgrade() -> None:
    for table in ('ports', 'networks'):
        op.drop_column(table, 'dns_domain')
    op.drop_table('network_quotas')
    op.drop_index('ix_network_tags_tag', table_name='network_tags')
    op.drop_table('network_tags')
