"""block device mappings of volumes: the columns Nova's mappings have for them

``volume_id``/``snapshot_id`` name the block storage objects a mapping uses,
``attachment_id`` the Cinder attachment that holds the volume for the
instance and ``connection_info`` (JSON) how this host reaches it, as
``attachment_update`` returned it. ``uuid`` is the mapping's id in the API
(2.89 ``bdm_uuid``). ``device_type`` (disk, cdrom), ``tag``
(2.42/2.49) and ``volume_type`` (2.67) are kept as the request gave them.

Revision ID: 0026
Revises: 0027
Create Date: 2026-11-26 01:40:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0026'
down_revision = '0027'
branch_labels = None
depends_on = None

COLUMNS = (
    ('uuid', sa.String(length=36)),
    ('volume_id', sa.String(length=36)),
    ('snapshot_id', sa.String(length=36)),
    ('attachment_id', sa.String(length=36)),
    ('connection_info', sa.JSON()),
    ('device_type', sa.String(length=32)),
    ('volume_type', sa.String(length=255)),
    ('tag', sa.String(length=60)),
)


def upgrade() -> None:
    for name, type_ in COLUMNS:
        op.add_column('block_device_mappings', sa.Column(name, type_, nullable=True))
    op.create_index('ix_block_device_mappings_volume_id', 'block_device_mappings',
                    ['volume_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_block_device_mappings_volume_id', table_name='block_device_mappings')
    with op.batch_alter_table('block_device_mappings') as batch:
        for name, _ in reversed(COLUMNS):
            batch.drop_column(name)
