"""Who may write what in the network service: Neutron's policies with the
secure-RBAC defaults, enforced by the service itself whatever sits in front.

* A write needs the member role in the target's project (or admin); a reader
  who can see a thing and tries to change it gets 403, a caller who cannot
  see it 404 (Neutron hides what policy does not let you show).
* ``project_id`` in a body naming another project is for admins only.
* A subnet goes on a network of its own project; a port too, or on a shared
  network (Neutron's ``_validate_network_project_ownership``: 404 otherwise).
* A port is bound to a server (``device_owner`` ``compute:*`` with the
  server's uuid as ``device_id``) only by the server's project or an admin:
  otherwise another project's port would show up in, and be deleted with,
  the server.
* On a network it does not own, a project may not pick a port's MAC, fixed IP
  addresses or allowed address pairs, nor give it a ``network:*`` owner.
"""
from __future__ import annotations

from typing import Any, Mapping

import sqlalchemy as sa

from cirrus import policy
from cirrus.compute.models import instances
from cirrus.context import RequestContext
from cirrus.db.rows import PreparedRead
from cirrus.network import exception as exc

# cirrus rule → Neutron's name for it, in the 403 message
_NEUTRON_NAMES = {"network:create": "create", "network:update": "update",
                  "network:delete": "delete", "network:admin": "admin_only"}


def _refuse(rule: str, resource: str) -> exc.PolicyNotAuthorized:
    return exc.PolicyNotAuthorized(action=f"{_NEUTRON_NAMES.get(rule, rule)}_{resource}")


def enforce(ctx: RequestContext, rule: str, resource: str, target: Mapping[str, Any]) -> None:
    """403 unless ``ctx`` may apply ``rule`` to ``target`` (a row or a new
    resource's values, with its ``project_id``)."""
    if not ctx.is_admin and not ctx.project_id:
        raise _refuse(rule, resource)  # no project scope: no project's things to write
    if not policy.check(ctx, rule, {"project_id": target.get("project_id")}):
        raise _refuse(rule, resource)


def admin_only(ctx: RequestContext, action: str) -> None:
    """403 unless an admin asks (``action``: Neutron's rule name, for the message)."""
    if not ctx.is_admin:
        raise exc.PolicyNotAuthorized(action=action)


def owner_of_new(ctx: RequestContext, values: dict[str, Any], resource: str) -> str:
    """The project a new ``resource`` belongs to (the caller's, or for an admin
    the one named in the body), once the caller may create it there."""
    project = values.get("project_id") or ctx.project_id
    if not project:
        raise _refuse("network:create", resource)
    enforce(ctx, "network:create", resource, {"project_id": project})
    return project


def check_network_use(ctx: RequestContext, network: dict[str, Any], project: str,
                      resource: str) -> None:
    """A ``resource`` (subnet or port) of ``project`` may go on ``network``
    (one the caller can see)."""
    if ctx.is_admin or network["project_id"] == project:
        return
    if network["shared"]:
        if resource == "subnet":  # only the network's owner adds subnets
            raise _refuse("network:create", resource)
        return
    raise exc.NetworkNotFound(net_id=network["id"])


def check_port_fields(ctx: RequestContext, network: dict[str, Any], values: dict[str, Any],
                      creating: bool) -> None:
    """Neutron's field rules for a port on a network the caller does not own
    (a shared one): no MAC, IP address, address pairs or ``network:*`` owner."""
    if ctx.is_admin or network.get("project_id") == ctx.project_id:
        return
    verb = "create" if creating else "update"
    if "mac_address" in values:
        raise exc.PolicyNotAuthorized(action=f"{verb}_port:mac_address")
    if any("ip_address" in ip for ip in values.get("fixed_ips") or []):
        raise exc.PolicyNotAuthorized(action=f"{verb}_port:fixed_ips:ip_address")
    if values.get("allowed_address_pairs"):
        raise exc.PolicyNotAuthorized(action=f"{verb}_port:allowed_address_pairs")
    if str(values.get("device_owner", "")).startswith("network:"):
        raise exc.PolicyNotAuthorized(action=f"{verb}_port:device_owner")


_INSTANCE_PROJECT = PreparedRead(sa.select(instances.c.project_id).where(
    instances.c.uuid == sa.bindparam("w_uuid")))


def check_device(conn: sa.Connection, ctx: RequestContext, port: Mapping[str, Any],
                 creating: bool) -> None:
    """A port of project P (``port``: its values after the write) names a
    server as its compute device only if the server is P's, or an admin asks."""
    device_id, owner = port.get("device_id") or "", port.get("device_owner") or ""
    if ctx.is_admin or not device_id or not owner.startswith("compute:"):
        return
    found = _INSTANCE_PROJECT.first(conn, w_uuid=device_id)
    if found is not None and found["project_id"] != port["project_id"]:
        raise exc.PolicyNotAuthorized(action=f"{'create' if creating else 'update'}_port:device_id")
