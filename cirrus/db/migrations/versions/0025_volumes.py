"""Block storage: volumes, snapshots, attachments, volume types, quotas, messages

Revision ID: 0025
Revises: 0026
Create Date: 2026-11-26 01:45:00.000000
"""
import datetime

import sqlalchemy as sa
from alembic import op


revision = '0025'
down_revision = '0026'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('snapshots',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('volume_id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('description', sa.String(length=255), nullable=True),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('progress', sa.String(length=16), nullable=False),
    sa.Column('metadata', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('deleted', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_snapshots'))
    )
    op.create_index(op.f('ix_snapshots_project_id'), 'snapshots', ['project_id'], unique=False)
    op.create_index(op.f('ix_snapshots_volume_id'), 'snapshots', ['volume_id'], unique=False)
    op.create_table('volume_attachment',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('volume_id', sa.String(length=36), nullable=False),
    sa.Column('instance_uuid', sa.String(length=36), nullable=True),
    sa.Column('attached_host', sa.String(length=255), nullable=True),
    sa.Column('mountpoint', sa.String(length=255), nullable=True),
    sa.Column('attach_status', sa.String(length=32), nullable=False),
    sa.Column('attach_mode', sa.String(length=8), nullable=False),
    sa.Column('connector', sa.JSON(), nullable=True),
    sa.Column('connection_info', sa.JSON(), nullable=True),
    sa.Column('attach_time', sa.DateTime(), nullable=True),
    sa.Column('detach_time', sa.DateTime(), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('deleted', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_volume_attachment'))
    )
    op.create_index(op.f('ix_volume_attachment_instance_uuid'), 'volume_attachment', ['instance_uuid'], unique=False)
    op.create_index(op.f('ix_volume_attachment_volume_id'), 'volume_attachment', ['volume_id'], unique=False)
    op.create_table('volume_messages',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.Column('resource_type', sa.String(length=32), nullable=False),
    sa.Column('resource_uuid', sa.String(length=36), nullable=True),
    sa.Column('event_id', sa.String(length=32), nullable=False),
    sa.Column('message_level', sa.String(length=16), nullable=False),
    sa.Column('user_message', sa.String(length=1024), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_volume_messages'))
    )
    op.create_index(op.f('ix_volume_messages_project_id'), 'volume_messages', ['project_id'], unique=False)
    op.create_table('volume_transfers',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('volume_id', sa.String(length=36), nullable=False),
                    sa.Column('source_project_id', sa.String(length=64), nullable=False),
                    sa.Column('destination_project_id', sa.String(length=64), nullable=True),
                    sa.Column('name', sa.String(length=255), nullable=True),
                    sa.Column('salt', sa.String(length=32), nullable=False),
                    sa.Column('crypt_hash', sa.String(length=64), nullable=False),
                    sa.Column('no_snapshots', sa.Boolean(), nullable=False),
                    sa.Column('accepted', sa.Boolean(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.Column('deleted', sa.Boolean(), nullable=False),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_volume_transfers')))
    op.create_index(op.f('ix_volume_transfers_volume_id'), 'volume_transfers', ['volume_id'],
                    unique=False)
    op.create_index(op.f('ix_volume_transfers_source_project_id'), 'volume_transfers',
                    ['source_project_id'], unique=False)
    op.create_table('volume_group_types',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('description', sa.String(length=255), nullable=True),
                    sa.Column('is_public', sa.Boolean(), nullable=False),
                    sa.Column('group_specs', sa.JSON(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.Column('deleted', sa.Boolean(), nullable=False),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_volume_group_types')))
    op.create_table('volume_qos_specs',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('consumer', sa.String(length=16), nullable=False),
                    sa.Column('specs', sa.JSON(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.Column('deleted', sa.Boolean(), nullable=False),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_volume_qos_specs')))
    op.create_table('volume_quota_classes',
                    sa.Column('class_name', sa.String(length=255), nullable=False),
                    sa.Column('resource', sa.String(length=255), nullable=False),
                    sa.Column('hard_limit', sa.Integer(), nullable=False),
                    sa.PrimaryKeyConstraint('class_name', 'resource',
                                            name=op.f('pk_volume_quota_classes')))
    op.create_table('volume_quotas',
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.Column('resource', sa.String(length=64), nullable=False),
    sa.Column('hard_limit', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('project_id', 'resource', name=op.f('pk_volume_quotas'))
    )
    op.create_table('volume_types',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('description', sa.String(length=255), nullable=True),
    sa.Column('is_public', sa.Boolean(), nullable=False),
    sa.Column('extra_specs', sa.JSON(), nullable=False),
    sa.Column('qos_specs_id', sa.String(length=36), nullable=True),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('deleted', sa.Boolean(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_volume_types'))
    )
    op.create_table('volumes',
    sa.Column('id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=True),
    sa.Column('description', sa.String(length=255), nullable=True),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('attach_status', sa.String(length=32), nullable=False),
    sa.Column('availability_zone', sa.String(length=255), nullable=False),
    sa.Column('host', sa.String(length=255), nullable=True),
    sa.Column('bootable', sa.Boolean(), nullable=False),
    sa.Column('multiattach', sa.Boolean(), nullable=False),
    sa.Column('volume_type_id', sa.String(length=36), nullable=True),
    sa.Column('snapshot_id', sa.String(length=36), nullable=True),
    sa.Column('source_volid', sa.String(length=36), nullable=True),
    sa.Column('image_id', sa.String(length=36), nullable=True),
    sa.Column('format', sa.String(length=16), nullable=False),
    sa.Column('metadata', sa.JSON(), nullable=False),
    sa.Column('image_metadata', sa.JSON(), nullable=False),
    sa.Column('admin_metadata', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('updated_at', sa.DateTime(), nullable=True),
    sa.Column('deleted', sa.Boolean(), nullable=False),
    sa.Column('deleted_at', sa.DateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_volumes'))
    )
    types = sa.table('volume_types', sa.column('id', sa.String), sa.column('name', sa.String),
                     sa.column('description', sa.String), sa.column('is_public', sa.Boolean),
                     sa.column('extra_specs', sa.JSON), sa.column('created_at', sa.DateTime),
                     sa.column('deleted', sa.Boolean))
    # Cinder's default type (since Train): the type of a volume created without one.
    op.bulk_insert(types, [{'id': '00000000-0000-4000-8000-00000000d3f7', 'name': '__DEFAULT__',
                            'description': 'Default Volume Type', 'is_public': True,
                            'extra_specs': {}, 'created_at': datetime.datetime(2026, 11, 26),
                            'deleted': False}])
    op.create_index(op.f('ix_volumes_project_id'), 'volumes', ['project_id'], unique=False)
    op.create_index(op.f('ix_volumes_status'), 'volumes', ['status'], unique=False)
    op.create_table('volume_type_projects',
    sa.Column('volume_type_id', sa.String(length=36), nullable=False),
    sa.Column('project_id', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['volume_type_id'], ['volume_types.id'], name=op.f('fk_volume_type_projects_volume_type_id_volume_types')),
    sa.PrimaryKeyConstraint('volume_type_id', 'project_id', name=op.f('pk_volume_type_projects'))
    )


def downgrade() -> None:
    op.drop_table('volume_type_projects')
    op.drop_index(op.f('ix_volumes_status'), table_name='volumes')
    op.drop_index(op.f('ix_volumes_project_id'), table_name='volumes')
    op.drop_table('volumes')
    op.drop_table('volume_types')
    op.drop_table('volume_quotas')
    op.drop_table('volume_quota_classes')
    op.drop_table('volume_qos_specs')
    op.drop_table('volume_group_types')
    op.drop_index(op.f('ix_volume_transfers_source_project_id'), table_name='volume_transfers')
    op.drop_index(op.f('ix_volume_transfers_volume_id'), table_name='volume_transfers')
    op.drop_table('volume_transfers')
    op.drop_index(op.f('ix_volume_messages_project_id'), table_name='volume_messages')
    op.drop_table('volume_messages')
    op.drop_index(op.f('ix_volume_attachment_volume_id'), table_name='volume_attachment')
    op.drop_index(op.f('ix_volume_attachment_instance_uuid'), table_name='volume_attachment')
    op.drop_table('volume_attachment')
    op.drop_index(op.f('ix_snapshots_volume_id'), table_name='snapshots')
    op.drop_index(op.f('ix_snapshots_project_id'), table_name='snapshots')
    op.drop_table('snapshots')
