"""build_event_steps: a build event's boot timeline on its own row

The steps of a build (claim, network allocation, block devices, spawn, the
vif-plugged wait) were five rows of ``instance_actions_events`` inserted in
the boot's last transaction; they are now one JSON text on the build event
(``steps``), which the API lists as events of their own. Rows written before
keep their step events as rows and list as before.

Revision ID: 0037
Revises: 0036
Create Date: 2026-11-26 08:10:00.000000
"""
import sqlalchemy as sa
from alembic import op

revision = '0037'
down_revision = '0036'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('instance_actions_events', schema=None) as batch_op:
        batch_op.add_column(sa.Column('steps', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('instance_actions_events', schema=None) as batch_op:
        batch_op.drop_column('steps')
