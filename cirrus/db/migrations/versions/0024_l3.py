"""L3: routers, their static routes, floating IPs

A router's interfaces and gateway are ports (``device_owner``
``network:router_interface`` / ``network:router_gateway``, ``device_id`` the
router), as in Neutron, so they need no table of their own. ``routers.host``
is the host whose L3 agent serves the router (Neutron's
``routerl3agentbindings``, one agent per router).

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26 01:40:00.000000
"""
import sqlalchemy as sa
from alembic import op


revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('routers',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('name', sa.String(length=255), nullable=False),
                    sa.Column('project_id', sa.String(length=64), nullable=False),
                    sa.Column('description', sa.String(length=255), nullable=False),
                    sa.Column('admin_state_up', sa.Boolean(), nullable=False),
                    sa.Column('status', sa.String(length=16), nullable=False),
                    sa.Column('gw_port_id', sa.String(length=36), nullable=True),
                    sa.Column('enable_snat', sa.Boolean(), nullable=False),
                    sa.Column('host', sa.String(length=255), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(['gw_port_id'], ['ports.id'],
                                            name=op.f('fk_routers_gw_port_id_ports'),
                                            ondelete='SET NULL'),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_routers')))
    op.create_index(op.f('ix_routers_project_id'), 'routers', ['project_id'], unique=False)
    op.create_index(op.f('ix_routers_host'), 'routers', ['host'], unique=False)
    op.create_table('router_routes',
                    sa.Column('router_id', sa.String(length=36), nullable=False),
                    sa.Column('destination', sa.String(length=64), nullable=False),
                    sa.Column('nexthop', sa.String(length=64), nullable=False),
                    sa.ForeignKeyConstraint(['router_id'], ['routers.id'],
                                            name=op.f('fk_router_routes_router_id_routers'),
                                            ondelete='CASCADE'),
                    sa.PrimaryKeyConstraint('router_id', 'destination', 'nexthop',
                                            name=op.f('pk_router_routes')))
    op.create_table('floatingips',
                    sa.Column('id', sa.String(length=36), nullable=False),
                    sa.Column('project_id', sa.String(length=64), nullable=False),
                    sa.Column('description', sa.String(length=255), nullable=False),
                    sa.Column('floating_ip_address', sa.String(length=64), nullable=False),
                    sa.Column('floating_network_id', sa.String(length=36), nullable=False),
                    sa.Column('floating_port_id', sa.String(length=36), nullable=False),
                    sa.Column('fixed_port_id', sa.String(length=36), nullable=True),
                    sa.Column('fixed_ip_address', sa.String(length=64), nullable=True),
                    sa.Column('router_id', sa.String(length=36), nullable=True),
                    sa.Column('status', sa.String(length=16), nullable=False),
                    sa.Column('created_at', sa.DateTime(), nullable=False),
                    sa.Column('updated_at', sa.DateTime(), nullable=True),
                    sa.ForeignKeyConstraint(['floating_network_id'], ['networks.id'],
                                            name=op.f('fk_floatingips_floating_network_id_networks')),
                    sa.ForeignKeyConstraint(['floating_port_id'], ['ports.id'],
                                            name=op.f('fk_floatingips_floating_port_id_ports'),
                                            ondelete='CASCADE'),
                    sa.ForeignKeyConstraint(['fixed_port_id'], ['ports.id'],
                                            name=op.f('fk_floatingips_fixed_port_id_ports'),
                                            ondelete='SET NULL'),
                    sa.ForeignKeyConstraint(['router_id'], ['routers.id'],
                                            name=op.f('fk_floatingips_router_id_routers')),
                    sa.PrimaryKeyConstraint('id', name=op.f('pk_floatingips')),
                    sa.UniqueConstraint('floating_network_id', 'floating_ip_address',
                                        name=op.f('uq_floatingips_floating_network_id_floating_ip_address')),
                    sa.UniqueConstraint('fixed_port_id', 'fixed_ip_address',
                                        name=op.f('uq_floatingips_fixed_port_id_fixed_ip_address')))
    op.create_index(op.f('ix_floatingips_project_id'), 'floatingips', ['project_id'],
                    unique=False)
    op.create_index(op.f('ix_floatingips_fixed_port_id'), 'floatingips', ['fixed_port_id'],
                    unique=False)
    op.create_index(op.f('ix_floatingips_router_id'), 'floatingips', ['router_id'],
                    unique=False)


def downgrade() -> None:
    op.drop_table('floatingips')
    op.drop_table('router_routes')
    op.drop_table('routers')
