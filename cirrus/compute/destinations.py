"""Create-time check of where a server may go, that Nova makes at the API
rather than after a reschedule on every host: the compute node an admin named
at microversion 2.74. (The security groups asked for are the network API's to
check: ``validate_networks``.)

Plain functions of a connection, run in the create's lookup transaction.
"""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import compute_nodes
from cirrus.db.rows import PreparedRead

_COMPUTE_NODES = PreparedRead(sa.select(compute_nodes.c.host, compute_nodes.c.hypervisor_hostname))

Destination = dict[str, str | None]


def requested_destination(conn: sa.Connection, host: str | None,
                          node: str | None) -> Destination | None:
    """The compute node an admin named (``host``, ``hypervisor_hostname``):
    ``{"host": …, "node": …}`` with the host filled in from the node; None if
    neither was named. :class:`ComputeHostNotFound` (400) if no compute node
    matches both (Nova's ``_validate_host_or_node``)."""
    if not host and not node:
        return None
    for row in _COMPUTE_NODES.all(conn):
        if (not host or row["host"] == host) and \
                (not node or row["hypervisor_hostname"] == node):
            return {"host": row["host"], "node": node}
    raise exc.ComputeHostNotFound(host=host or node)
