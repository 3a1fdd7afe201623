"""first_run_defaults: which defaults a fresh cloud was given (made once each)

Revision ID: 0027
Revises: 0024
Create Date: 2026-11-26 02:00:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0027'
down_revision = '0024'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('first_run_defaults',
                    sa.Column('name', sa.String(length=64), nullable=False),
                    sa.Column('resource_id', sa.String(length=64), nullable=True),
                    sa.Column('created_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('name', name=op.f('pk_first_run_defaults')))


def downgrade() -> None:
    op.drop_table('first_run_defaults')
