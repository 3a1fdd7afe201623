"""An instance's ports moved between hosts (Nova's
``setup_instance_network_on_host``, ``cleanup_instance_network_on_host``,
``migrate_instance_finish``): their binding's host changes, the ports and
their addresses stay the instance's."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.network import ports as port_db


def bind_ports_to(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                  host: str | None) -> list[dict[str, Any]]:
    """Each of the instance's ports bound to ``host`` (None: unbound); the
    ports as they are after (bound) or were before (unbound)."""
    out = []
    for port in port_db.ports_of_device(conn, instance["uuid"], instance["project_id"]):
        before, after = port_db.update_port(conn, ctx.elevated(), port["id"],
                                            {"binding_host_id": host or ""})
        out.append(after if host else before)
    return out


def rebind_to(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
              host: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The instance's ports not bound to ``host`` bound to it; each port
    before and after."""
    return [port_db.update_port(conn, ctx.elevated(), port["id"], {"binding_host_id": host})
            for port in port_db.ports_of_device(conn, instance["uuid"], instance["project_id"])
            if port["binding_host_id"] != host]
