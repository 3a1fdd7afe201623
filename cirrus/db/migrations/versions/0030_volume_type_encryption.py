"""volume_type_encryption: Cinder's encryption specs of a volume type

One row per encrypted type (``provider``, ``cipher``, ``key_size``,
``control_location``); a volume of such a type shows ``encrypted: true``.
Only the API is kept: no compute driver of cirrus plugs an encrypted volume
(the compute API refuses the attach with a 400).

Revision ID: 0030
Revises: 0025
Create Date: 2026-11-26 05:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0030'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('volume_type_encryption',
                    sa.Column('volume_type_id', sa.String(length=36), nullable=False),
                    sa.Column('encryption_id', sa.String(length=36), nullable=False),
                    sa.Column('provider', sa.String(length=255), nullable=False),
                    sa.Column('cipher', sa.String(length=255), nullable=True),
                    sa.Column('key_size', sa.Integer(), nullable=True),
                    sa.Column('control_location', sa.String(length=255), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('volume_type_id',
                                            name=op.f('pk_volume_type_encryption')))


def downgrade() -> None:
    op.drop_table('volume_type_encryption')
