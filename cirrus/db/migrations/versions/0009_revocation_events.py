"""revocation events: Keystone's, replacing the revoked audit ids

A token kept working after its user was disabled, deleted or given a new
password, after its role was removed or its project disabled or deleted: only
``DELETE /v3/auth/tokens`` revoked anything, by audit id. Revocation events
(user, project, domain, role, audit id or audit chain, each set or not) cover
all of these; ``revocation_generation`` is the one row each API process reads
per token validation to know whether its copy of the events is current.

The revoked audit ids become audit-id events of generation 1.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 10:00:00.000000
"""
import datetime

import sqlalchemy as sa
from alembic import op


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('revocation_events',
                    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
                    sa.Column('generation', sa.BigInteger(), nullable=False),
                    sa.Column('user_id', sa.String(length=64), nullable=True),
                    sa.Column('project_id', sa.String(length=64), nullable=True),
                    sa.Column('domain_id', sa.String(length=64), nullable=True),
                    sa.Column('role', sa.String(length=255), nullable=True),
                    sa.Column('audit_id', sa.String(length=64), nullable=True),
                    sa.Column('audit_chain_id', sa.String(length=64), nullable=True),
                    sa.Column('issued_before', sa.DateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_revocation_events')))
    op.create_index(op.f('ix_revocation_events_generation'), 'revocation_events',
                    ['generation'], unique=False)
    op.create_index(op.f('ix_revocation_events_issued_before'), 'revocation_events',
                    ['issued_before'], unique=False)
    op.create_table('revocation_generation',
                    sa.Column('id', sa.Integer(), autoincrement=False, nullable=False),
                    sa.Column('generation', sa.BigInteger(), nullable=False),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_revocation_generation')))
    # A revoked token expires by its expires_at: kept until then (and a token
    # lifetime more, as every event is), long enough.
    op.execute("INSERT INTO revocation_events (generation, audit_id, issued_before) "
               "SELECT 1, audit_id, expires_at FROM revoked_tokens")
    op.execute("INSERT INTO revocation_generation (id, generation) VALUES (1, 1)")
    op.drop_table('revoked_tokens')


def downgrade() -> None:
    op.create_table('revoked_tokens',
                    sa.Column('audit_id', sa.String(length=64), nullable=False),
                    sa.Column('expires_at', sa.DateTime(), nullable=False),
                    sa.PrimaryKeyConstraint('audit_id', name=op.f('pk_revoked_tokens')))
    # A revoked token lives at most a token lifetime past its revocation;
    # 0001's table wants its expiry: a day covers any lifetime a cloud uses.
    bind = op.get_bind()
    rows = bind.execute(sa.text("SELECT audit_id, max(issued_before) FROM revocation_events "
                                "WHERE audit_id IS NOT NULL GROUP BY audit_id")).all()
    for audit_id, issued_before in rows:
        if isinstance(issued_before, str):  # SQLite's text, through a text() query
            issued_before = datetime.datetime.fromisoformat(issued_before)
        bind.execute(sa.text("INSERT INTO revoked_tokens (audit_id, expires_at) VALUES (:a, :e)"),
                     {"a": audit_id, "e": issued_before + datetime.timedelta(days=1)})
    op.drop_table('revocation_generation')
    op.drop_index(op.f('ix_revocation_events_issued_before'), table_name='revocation_events')
    op.drop_index(op.f('ix_revocation_events_generation'), table_name='revocation_events')
    op.drop_table('revocation_events')
