"""instance lock: who locked a server and why (Nova's ``locked_by`` and ``locked_reason``)

``locked`` has been a column since 0001; the lock API (issue #19) also needs
who holds the lock (``owner`` or ``admin``: an owner cannot lift an admin's
lock) and the reason given at 2.73.

Revision ID: 0010
Revises: 0013
Create Date: 2026-11-25 19:00:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0010'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('instances', sa.Column('locked_by', sa.String(length=5), nullable=True))
    op.add_column('instances', sa.Column('locked_reason', sa.String(length=255), nullable=True))


def downgrade() -> None:
    # Not a batch (table copy): that would drop the instances table's usage
    # triggers (0006) along with it.
    op.drop_column('instances', 'locked_reason')
    op.drop_column('instances', 'locked_by')
