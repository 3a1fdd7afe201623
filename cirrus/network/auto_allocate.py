"""get-me-a-network: the project's auto-allocated network and subnet."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.network.models import auto_allocated_networks, networks
from cirrus.network.networks import (BootRead, boot_read, boot_read_of, create_network,
                                     create_subnet, network_by_id)
from cirrus.network.segments import SegmentConfig

AUTO_NAME = "auto_allocated_network"


# Built once: an ``auto`` boot's first read (networks.boot_read_of).
_AUTO_NETWORK_FOR_BOOT = boot_read_of(
    auto_allocated_networks.join(networks, auto_allocated_networks.c.network_id == networks.c.id),
    auto_allocated_networks.c.project_id == sa.bindparam("w_project"))


def find_auto_network_and_subnets(conn: sa.Connection, project_id: str) -> BootRead | None:
    """The project's auto-allocated network, its subnets and the project's
    default security group, in one read; None if the project has no auto
    network yet."""
    return boot_read(_AUTO_NETWORK_FOR_BOOT, conn, w_project=project_id)


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
