"""image_tasks_metadefs: Glance's tasks and metadata definitions

``image_tasks`` holds the tasks of interoperable image import (and
``POST /v2/tasks``); ``metadef_namespaces``, ``metadef_resource_types`` and
``metadef_items`` (a namespace's objects, properties, tags and resource type
associations) hold ``/v2/metadefs``. The resource types Glance ships with are
seeded, protected, as Glance's own migration does.

Revision ID: 0035
Revises: 0034
Create Date: 2026-11-26 08:30:00.000000
"""
import datetime

import sqlalchemy as sa
from alembic import op

revision = '0035'
down_revision = '0034'
branch_labels = None
depends_on = None

RESOURCE_TYPES = ("OS::Glance::Image", "OS::Cinder::Volume", "OS::Nova::Flavor",
                  "OS::Nova::Aggregate", "OS::Nova::Server")


def upgrade() -> None:
    op.create_table('image_tasks',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('type', sa.String(length=30), nullable=False),
                    sa.Column('status', sa.String(length=30), nullable=False),
                    sa.Column('owner', sa.String(length=64), nullable=True),
                    sa.Column('image_id', sa.String(length=36), nullable=True),
                    sa.Column('request_id', sa.String(length=64), nullable=True),
                    sa.Column('user_id', sa.String(length=64), nullable=True),
                    sa.Column('input', sa.JSON(), nullable=False),
                    sa.Column('result', sa.JSON(), nullable=True),
                    sa.Column('message', sa.Text(), nullable=False),
                    sa.Column('expires_at', sa.DateTime(), nullable=True),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_image_tasks')))
    op.create_index(op.f('ix_image_tasks_owner'), 'image_tasks', ['owner'])
    op.create_index(op.f('ix_image_tasks_image_id'), 'image_tasks', ['image_id'])
    op.create_table('metadef_namespaces',
                    sa.Column('namespace', sa.String(length=80), nullable=False),
                    sa.Column('display_name', sa.String(length=80), nullable=True),
                    sa.Column('description', sa.Text(), nullable=True),
                    sa.Column('visibility', sa.String(length=32), nullable=False),
                    sa.Column('protected', sa.Boolean(), nullable=False),
                    sa.Column('owner', sa.String(length=255), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('namespace', name=op.f('pk_metadef_namespaces')))
    types = op.create_table('metadef_resource_types',
                            sa.Column('name', sa.String(length=80), nullable=False),
                            sa.Column('protected', sa.Boolean(), nullable=False),
                            sa.Column('created_at', sa.DateTime(), nullable=False),
                            sa.Column('updated_at', sa.DateTime(), nullable=True),
                            sa.PrimaryKeyConstraint('name', name=op.f('pk_metadef_resource_types')))
    op.create_table('metadef_items',
                    sa.Column('namespace', sa.String(length=80), nullable=False),
                    sa.Column('kind', sa.String(length=16), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('body', sa.JSON(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(['namespace'], ['metadef_namespaces.namespace'],
                                            name=op.f('fk_metadef_items_namespace_metadef_namespaces'),
                                            ondelete='CASCADE'),
                    sa.PrimaryKeyConstraint('namespace', 'kind', 'name',
                                            name=op.f('pk_metadef_items')))
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    op.bulk_insert(types, [{"name": name, "protected": True, "created_at": now}
                           for name in RESOURCE_TYPES])


def downgrade() -> None:
    op.drop_table('metadef_items')
    op.drop_table('metadef_resource_types')
    op.drop_table('metadef_namespaces')
    op.drop_index(op.f('ix_image_tasks_image_id'), table_name='image_tasks')
    op.drop_index(op.f('ix_image_tasks_owner'), table_name='image_tasks')
    op.drop_table('image_tasks')
