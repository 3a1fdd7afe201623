"""get-me-a-network: the project's auto-allocated network and subnet."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.engine import fetch_one
from cirrus.network.models import networks
from cirrus.network.networks import create_network, create_subnet

AUTO_NAME = "auto_allocated_network"


def get_or_create_auto_network(conn: sa.Connection, settings: Any, project_id: str) -> dict[str, Any]:
    """Find or create (in this transaction) the project's auto-allocated network."""
    row = fetch_one(conn, sa.select(networks).where(networks.c.project_id == project_id,
                                                    networks.c.auto_allocated.is_(True)))
    if row is not None:
        return row
    ctx = RequestContext(project_id=project_id, roles=["admin"])
    net = create_network(conn, ctx, {"name": AUTO_NAME, "project_id": project_id,
                                     "auto_allocated": True})
    create_subnet(conn, ctx, {"network_id": net["id"], "cidr": settings.auto_allocate_cidr,
                              "ip_version": 4, "name": "auto_allocated_subnet_v4",
                              "project_id": project_id})
    return net
