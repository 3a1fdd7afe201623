"""``/servers/{id}/os-security-groups``: the security groups on a server's
ports, as Nova shows Neutron's (its ingress rules only, each rule's ports,
and a remote group or an address range)."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.wsgi import context, reply

ANY_ADDRESS = "0.0.0.0/0"  # Nova's parse_cidr of a rule without a prefix


def _ports(rule: dict[str, Any]) -> tuple[int | None, int | None]:
    """A rule's from and to port; a protocol without a range covers all of its
    ports (1–65535 for TCP and UDP, -1 otherwise)."""
    protocol = rule["protocol"]
    if protocol and rule["port_range_min"] is None and rule["port_range_max"] is None:
        return (1, 65535) if protocol.upper() in ("TCP", "UDP") else (-1, -1)
    return rule["port_range_min"], rule["port_range_max"]


def rule_view(rule: dict[str, Any]) -> dict[str, Any] | None:
    """Nova's rule; None for one whose remote group is gone (Nova skips it)."""
    from_port, to_port = _ports(rule)
    out: dict[str, Any] = {"id": rule["id"], "parent_group_id": rule["security_group_id"],
                           "ip_protocol": rule["protocol"], "from_port": from_port,
                           "to_port": to_port, "group": {}, "ip_range": {}}
    if rule["remote_group_id"]:
        remote = rule["remote_group"]
        if remote is None:
            return None
        out["group"] = {"name": remote["name"], "tenant_id": remote["project_id"]}
    else:
        out["ip_range"] = {"cidr": rule["remote_ip_prefix"] or ANY_ADDRESS}
    return out


def group_view(group: dict[str, Any]) -> dict[str, Any]:
    rules = [rule_view(r) for r in group["rules"] if r["direction"] == "ingress"]
    return {"id": group["id"], "name": group["name"], "description": group["description"],
            "tenant_id": group["project_id"], "rules": [r for r in rules if r is not None]}


async def index(request: Request) -> Response:
    ctx = context(request)
    compute_api = request.app.state.compute_api
    row = await compute_api.get(ctx, request.path_params["server_id"])
    found = await compute_api.network.get_instance_security_groups(ctx, row["uuid"])
    views = sorted((group_view(g) for g in found), key=lambda g: (g["tenant_id"], g["name"]))
    return reply({"security_groups": views})


ROUTES = [
    Route("/v2.1/servers/{server_id}/os-security-groups", index, methods=["GET"]),
]
