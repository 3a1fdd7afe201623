"""catalog generation: the API processes' flavor and image lookups kept, safely

Every create read its flavor and its image (two statements, and on PostgreSQL
a read transaction on a DB thread), though flavors and images change rarely.
Each API process now keeps what it read, keyed by ``catalog_generation``: a
column of the one ``revocation_generation`` row that every authenticated
request reads anyway (``cirrus/identity/generation.py``), so knowing the
catalog's generation costs no statement.

Triggers, not code, bump it: in the statement that changes a flavor, a
flavor's access, an image or an image's members, whatever code or script
runs it, so the bump commits (or rolls back) with the change. A request whose
token check read the generation after such a change was committed finds its
process's copy out of date and reads again; no process can boot from a
deleted, deactivated or newly private image, or a deleted or withdrawn
flavor, once the change has committed.

Revision ID: 0042
Revises: 0038
Create Date: 2026-11-26 14:40:00.000000
"""
import sqlalchemy as sa
from alembic import op

from cirrus.db.triggers import Trigger, create, drop

revision = '0042'
down_revision = '0038'
branch_labels = None
depends_on = None

_BUMP = ("UPDATE revocation_generation SET catalog_generation = catalog_generation + 1 "
         "WHERE id = 1")
_TABLES = ("flavors", "flavor_projects", "images", "image_members")
_TRIGGERS = tuple(Trigger(f"{table}_catalog_{event.lower()}", table, event, None, _BUMP)
                  for table in _TABLES for event in ("INSERT", "UPDATE", "DELETE"))


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.add_column('revocation_generation',
                  sa.Column('catalog_generation', sa.BigInteger(), server_default='0',
                            nullable=False))
    for trigger in _TRIGGERS:
        create(op.execute, dialect, trigger)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for trigger in reversed(_TRIGGERS):
        drop(op.execute, dialect, trigger)
    op.drop_column('revocation_generation', 'catalog_generation')
