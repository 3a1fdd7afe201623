"""get-me-a-network: the project's auto-allocated network and subnet."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.rows import PreparedRead
from cirrus.network.models import auto_allocated_networks, networks, subnets
from cirrus.network.networks import create_network, create_subnet, network_by_id
from cirrus.network.security_groups import DEFAULT_GROUP_COLUMNS, resolved_default
from cirrus.network.segments import SegmentConfig

AUTO_NAME = "auto_allocated_network"


# Built once: an ``auto`` boot's first read. The network, each of its subnets
# (a row each, the subnet's columns as ``subnet_<name>``; one row of NULLs
# without any), and the project's default group (security_groups.resolved_default).
_SUBNET_PREFIX = "subnet_"
_AUTO_NETWORK_AND_SUBNETS = PreparedRead(
    sa.select(networks, *(c.label(_SUBNET_PREFIX + c.name) for c in subnets.c),
              *DEFAULT_GROUP_COLUMNS)
    .select_from(auto_allocated_networks.join(
        networks, auto_allocated_networks.c.network_id == networks.c.id).outerjoin(
        subnets, subnets.c.network_id == networks.c.id))
    .where(auto_allocated_networks.c.project_id == sa.bindparam("w_project"))
    .order_by(subnets.c.created_at, subnets.c.id))


@dataclass
class AutoNetwork:
    """The project's auto-allocated network as a boot reads it, in one statement."""

    network: dict[str, Any]
    subnets: list[dict[str, Any]]  # as networks.subnets_of gives them
    # resolve(["default"]): the default group's id (None: not made yet)
    default_groups: list[str] | None


def find_auto_network_and_subnets(conn: sa.Connection, project_id: str) -> AutoNetwork | None:
    """The project's auto-allocated network, its subnets and the project's
    default security group, in one read; None if the project has no auto
    network yet."""
    rows = _AUTO_NETWORK_AND_SUBNETS.all(conn, w_project=project_id)
    if not rows:
        return None
    network = {c.name: rows[0][c.name] for c in networks.c}
    found = [{c.name: row[_SUBNET_PREFIX + c.name] for c in subnets.c} for row in rows
             if row[_SUBNET_PREFIX + "id"] is not None]
    return AutoNetwork(network, found, resolved_default(rows[0]))


def get_or_create_auto_network(conn: sa.Connection, settings: Any, project_id: str,
                               segments: SegmentConfig) -> dict[str, Any]:
    """Find or create (in this transaction) the project's auto-allocated network
    (on the tenant type's next free segment); the ``auto_allocated_networks``
    primary key settles concurrent first uses."""
    aan = auto_allocated_networks
    existing = conn.execute(sa.select(aan.c.network_id).where(aan.c.project_id == project_id)).scalar()
    if existing is None:
        ctx = RequestContext(project_id=project_id, roles=["admin"])
        try:
            with conn.begin_nested():
                net = create_network(conn, ctx, {"name": AUTO_NAME, "project_id": project_id,
                                                 "auto_allocated": True}, segments)
                conn.execute(aan.insert().values(project_id=project_id, network_id=net["id"]))
                create_subnet(conn, ctx, {"network_id": net["id"], "cidr": settings.auto_allocate_cidr,
                                          "ip_version": 4, "name": "auto_allocated_subnet_v4",
                                          "project_id": project_id})
                return net
        except sa.exc.IntegrityError:
            existing = conn.execute(sa.select(aan.c.network_id).where(
                aan.c.project_id == project_id)).scalar_one()
    row = network_by_id(conn, existing)
    assert row is not None
    return row


def adopt_as_auto_network(conn: sa.Connection, project_id: str, network_id: str) -> None:
    """Make ``network_id`` the project's auto-allocated network: what a boot
    with ``networks: auto`` uses (a fresh cloud's demo network, first_run.py)."""
    conn.execute(auto_allocated_networks.insert().values(project_id=project_id,
                                                         network_id=network_id))
