"""The ports L3 makes for itself: a router's gateway and interfaces, a
floating IP's address holder. Made with the caller's rights raised (they sit
on networks the caller may not attach to), without security groups (a
router's traffic is not a guest's), and deleted only through the L3 API."""
from __future__ import annotations

import dataclasses
from typing import Any

import sqlalchemy as sa

from cirrus.config import Settings
from cirrus.context import RequestContext
from cirrus.network import exception as exc
from cirrus.network import ports as port_db
from cirrus.network.l3 import exception as l3_exc
from cirrus.network.l3.owners import L3_OWNERS
from cirrus.network.models import floatingips


def create_service_port(conn: sa.Connection, ctx: RequestContext, settings: Settings,
                        network: dict[str, Any], owner: str, device_id: str, project: str,
                        fixed_ips: list[dict[str, Any]] | None) -> tuple[dict[str, Any],
                                                                         list[dict[str, str]]]:
    """A port of ``owner`` for ``device_id`` on ``network`` and its fixed IPs."""
    values = {"network_id": network["id"], "device_owner": owner, "device_id": device_id,
              "project_id": project, "security_groups": [], "port_security_enabled": False,
              "fixed_ips": fixed_ips}
    if fixed_ips is None:
        del values["fixed_ips"]
    # Raised rights, and the port's own project ("" for gateways and floating
    # IPs: Neutron shows those to admins only).
    owner_ctx = dataclasses.replace(ctx.elevated(), project_id=project)
    return port_db.create_port_with_ips(conn, owner_ctx, values, settings.base_mac, None,
                                        status="ACTIVE", network=network)


def prevent_l3_port_deletion(port: dict[str, Any]) -> None:
    """409 for a port only the L3 API may delete (Neutron's ``ServicePortInUse``)."""
    if port["device_owner"] in L3_OWNERS:
        raise l3_exc.ServicePortInUse(
            port_id=port["id"],
            reason=f"has device owner {port['device_owner']}")


def disassociate_floatingips(conn: sa.Connection, port_id: str) -> None:
    """A deleted port's floating IPs stay, associated with nothing (Neutron's
    ``disassociate_floatingips``)."""
    conn.execute(floatingips.update().where(floatingips.c.fixed_port_id == port_id).values(
        fixed_port_id=None, fixed_ip_address=None, router_id=None, status="DOWN"))


def no_address(network_id: str) -> exc.BadRequest:
    return exc.BadRequest(reason=f"No IPs available for external network {network_id}")
