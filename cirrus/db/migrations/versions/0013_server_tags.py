"""server tags: Nova's ``tags`` table instead of a JSON column on ``instances``

The listing filters ``tags``, ``tags-any``, ``not-tags`` and ``not-tags-any``
(2.26) read every server of the project when tags lived in a JSON column; one
row per (server, tag), keyed by server and indexed by tag, lets the database
answer them with index lookups and stop at the page. The tags of live servers
move to the table; the column goes.

Revision ID: 0013
Revises: 0014
Create Date: 2026-11-25 19:00:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0013'
down_revision = '0014'
branch_labels = None
depends_on = None

_instances = sa.table('instances', sa.column('uuid', sa.String), sa.column('tags', sa.JSON),
                      sa.column('deleted', sa.Boolean))
_tags = sa.table('tags', sa.column('resource_id', sa.String), sa.column('tag', sa.String))


def upgrade() -> None:
    op.create_table('tags',
                    sa.Column('resource_id', sa.String(length=36), nullable=False),
                    sa.Column('tag', sa.String(length=60), nullable=False),
                    sa.PrimaryKeyConstraint('resource_id', 'tag', name=op.f('pk_tags')))
    op.create_index('ix_tags_tag', 'tags', ['tag', 'resource_id'], unique=False)
    conn = op.get_bind()
    rows = conn.execute(sa.select(_instances.c.uuid, _instances.c.tags).where(
        _instances.c.deleted.is_(False))).fetchall()
    moved = [{'resource_id': uuid, 'tag': tag} for uuid, tags in rows
             for tag in dict.fromkeys(tags or [])]
    if moved:
        conn.execute(_tags.insert(), moved)
    op.drop_column('instances', 'tags')


def downgrade() -> None:
    op.add_column('instances', sa.Column('tags', sa.JSON(), nullable=False,
                                         server_default='[]'))
    op.drop_index('ix_tags_tag', table_name='tags')
    op.drop_table('tags')
