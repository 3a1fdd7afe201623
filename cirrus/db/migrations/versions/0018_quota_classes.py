"""quota classes: named sets of limits; the class "default" holds the
defaults of every project without its own limit (os-quota-class-sets)

Revision ID: 0018
Revises: 0012
Create Date: 2026-11-25 22:30:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0018'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('quota_classes',
                    sa.Column('class_name', sa.String(length=255), nullable=False),
                    sa.Column('resource', sa.String(length=255), nullable=False),
                    sa.Column('hard_limit', sa.Integer(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('class_name', 'resource',
                                            name=op.f('pk_quota_classes')))


def downgrade() -> None:
    op.drop_table('quota_classes')
