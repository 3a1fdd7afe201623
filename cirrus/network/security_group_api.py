"""A server's security groups changed through its ports (Nova's
``network/security_group_api.py`` ``add_to_instance``/``remove_from_instance``,
which update the Neutron ports of the server): each function one transaction.

The group is looked up among the server's project's groups (by id or name);
the server's own list of group names (what the server view shows) follows
its ports."""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instances
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.network import exception as exc
from cirrus.network import ports as port_db
from cirrus.network import security_groups as sg_db
from cirrus.network.models import security_groups
from cirrus.network.validators import shown

Instance = dict[str, Any]


def _group_id(conn: sa.Connection, instance: Instance, name: str) -> str:
    try:
        return sg_db.resolve(conn, instance["project_id"], [name])[0]
    except exc.SecurityGroupNotFound:
        raise exc.SecurityGroupNotFound(f"Security group {shown(name)} is not found for project "
                                        f"{instance['project_id']}") from None


def _ports(conn: sa.Connection, instance: Instance) -> list[dict[str, Any]]:
    ports = port_db.ports_of_device(conn, instance["uuid"], instance["project_id"])
    if not ports:
        raise exc.SecurityGroupNotFound(f"instance_id {instance['uuid']} could not be found as "
                                        "device id on any ports")
    return ports


def add_to_instance(conn: sa.Connection, ctx: RequestContext, instance: Instance,
                    name: str) -> None:
    """Add the group to every port of the server (a port that has it keeps it once)."""
    group_id = _group_id(conn, instance, name)
    ports = _ports(conn, instance)
    if not all(port["port_security_enabled"] for port in ports):
        raise exc.SecurityGroupCannotBeApplied()
    for port in ports:
        groups = list(port["security_groups"] or [])
        if group_id not in groups:
            port_db.update_port(conn, ctx.elevated(), port["id"],
                                {"security_groups": [*groups, group_id]})
    _store_instance_groups(conn, instance["uuid"], instance["project_id"])


def remove_from_instance(conn: sa.Connection, ctx: RequestContext, instance: Instance,
                         name: str) -> None:
    """Remove the group from the ports of the server that have it; 404 if none has."""
    group_id = _group_id(conn, instance, name)
    found = False
    for port in _ports(conn, instance):
        groups = list(port["security_groups"] or [])
        if group_id in groups:
            groups.remove(group_id)
            port_db.update_port(conn, ctx.elevated(), port["id"], {"security_groups": groups})
            found = True
    if not found:
        raise exc.SecurityGroupNotFound(f"Security group {shown(name)} not associated with the "
                                        f"instance {instance['uuid']}")
    _store_instance_groups(conn, instance["uuid"], instance["project_id"])


def _store_instance_groups(conn: sa.Connection, uuid: str, project_id: str) -> None:
    """The server's group names: those of its ports' groups, in the order they
    were added, each once."""
    ids = list(dict.fromkeys(gid for port in port_db.ports_of_device(conn, uuid, project_id)
                             for gid in port["security_groups"] or []))
    names = dict(conn.execute(sa.select(security_groups.c.id, security_groups.c.name).where(
        security_groups.c.id.in_(ids))).tuples().all()) if ids else {}
    conn.execute(instances.update().where(instances.c.uuid == uuid).values(
        security_groups=[names[gid] for gid in ids if gid in names], updated_at=utcnow()))
