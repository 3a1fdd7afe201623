"""port usages: a project's ports, kept by triggers like migration 0006's counters

The port quota bounds server creates and interface attaches (seed 000:
``validate_networks``, PortLimitExceeded) and the allocation of a build's ports,
which checks it again inside its transaction. Counting the project's ports
there would grow with the project, as the quota count did before 0006; the
count is kept instead, per project, by triggers on ``ports`` in the statement
that changes them (cascades and scripts included).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 21:55:00.000000
"""
import sqlalchemy as sa
from alembic import op

from cirrus.db.triggers import Trigger, create, drop


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def _count(row: str) -> str:
    return ("INSERT INTO port_usages (project_id, ports) "
            f"VALUES ({row}.project_id, 1) "
            "ON CONFLICT (project_id) DO UPDATE SET ports = port_usages.ports + 1")


def _uncount(row: str) -> str:
    return f"UPDATE port_usages SET ports = ports - 1 WHERE project_id = {row}.project_id"


_TRIGGERS = (
    Trigger("ports_usage_insert", "ports", "INSERT", None, _count("NEW")),
    Trigger("ports_usage_delete", "ports", "DELETE", None, _uncount("OLD")),
    Trigger("ports_usage_uncount", "ports", "UPDATE OF project_id", None, _uncount("OLD")),
    Trigger("ports_usage_count", "ports", "UPDATE OF project_id", None, _count("NEW")),
)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table('port_usages',
                    sa.Column('project_id', sa.String(length=64), nullable=False),
                    sa.Column('ports', sa.Integer(), server_default='0', nullable=False),
                    sa.PrimaryKeyConstraint('project_id', name=op.f('pk_port_usages')))
    for trigger in _TRIGGERS:  # before the backfill, as in 0006
        create(op.execute, dialect, trigger)
    op.execute("INSERT INTO port_usages (project_id, ports) "
               "SELECT project_id, count(*) FROM ports GROUP BY project_id")


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for trigger in reversed(_TRIGGERS):
        drop(op.execute, dialect, trigger)
    op.drop_table('port_usages')
