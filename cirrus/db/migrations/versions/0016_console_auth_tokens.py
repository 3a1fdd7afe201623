"""console auth tokens: the serial console's proxy checks a token against these

Revision ID: 0016
Revises: 0009
Create Date: 2026-11-25 19:30:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('console_auth_tokens',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('token_hash', sa.String(length=64), nullable=False),
                    sa.Column('console_type', sa.String(length=32), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('port', sa.Integer(), nullable=False),
                    sa.Column('netns', sa.String(length=255), server_default='', nullable=False),
                    sa.Column('instance_uuid', sa.String(length=36), nullable=False),
                    sa.Column('access_url_base', sa.String(length=255), nullable=False),
                    sa.Column('expires', sa.Integer(), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_console_auth_tokens')),
                    sa.UniqueConstraint('token_hash', name=op.f('uq_console_auth_tokens_token_hash')))
    op.create_index(op.f('ix_console_auth_tokens_instance_uuid'), 'console_auth_tokens',
                    ['instance_uuid'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_console_auth_tokens_instance_uuid'), table_name='console_auth_tokens')
    op.drop_table('console_auth_tokens')
