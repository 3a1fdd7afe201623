"""Create-time checks of where a server may go and what it joins, that Nova
makes at the API rather than after a reschedule on every host: the compute
node an admin named at microversion 2.74, and the security groups asked for.

Plain functions of a connection, run in the create's lookup transaction.
"""
from __future__ import annotations

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import compute_nodes
from cirrus.db.rows import PreparedRead
from cirrus.network.models import security_groups

_COMPUTE_NODES = PreparedRead(sa.select(compute_nodes.c.host, compute_nodes.c.hypervisor_hostname))
_PROJECT_GROUPS = PreparedRead(sa.select(security_groups.c.id, security_groups.c.name).where(
    security_groups.c.project_id == sa.bindparam("project")))

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


def check_security_groups(conn: sa.Connection, project_id: str, names: list[str]) -> None:
    """Every requested group (by name or id) is one of the project's (Nova's
    ``_check_requested_secgroups``): :class:`SecurityGroupNotFoundForProject`
    (400) or :class:`SecurityGroupNotUnique` (409) otherwise."""
    wanted = [n for n in names if n != "default"]
    if not wanted:
        return  # the default group is made on first need: nothing to look up
    groups = _PROJECT_GROUPS.all(conn, project=project_id)
    for ref in wanted:
        if any(g["id"] == ref for g in groups):
            continue
        named = sum(1 for g in groups if g["name"] == ref)
        if named > 1:
            raise exc.SecurityGroupNotUnique(name=ref)
        if not named:
            raise exc.SecurityGroupNotFoundForProject(security_group_id=ref,
                                                      project_id=project_id)
