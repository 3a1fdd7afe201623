"""``/os-security-groups`` and ``/os-security-group-rules`` (2.1–2.35): Nova's
deprecated proxy to the network service's security groups, in Nova's shapes
(``nova/api/openstack/compute/security_groups.py``). Every write goes through
the network service, so its roles, ownership and quotas apply; Nova's own
checks (ids as UUIDs, a rule's ports and protocol) come first."""
from __future__ import annotations

import ipaddress
import uuid
from typing import Any

import sqlalchemy as sa
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from cirrus.api.compute.microversion import VersionNotFoundForAPIMethod, api_version
from cirrus.api.compute.parameters import bad, text
from cirrus.api.compute.security_groups import ANY_ADDRESS, group_view, rule_view
from cirrus.api.wsgi import context, json_body, query_int, reply
from cirrus.context import RequestContext
from cirrus.exception import Forbidden, Invalid
from cirrus.network import exception as net_exc
from cirrus.network import security_groups as sg_db
from cirrus.network.models import security_groups

LAST_VERSION = (2, 35)  # from 2.36 the proxies are gone (Nova's MAX_PROXY_API_SUPPORT_VERSION)
MAX_LIMIT = 1000  # Nova's [api] max_limit
Group = dict[str, Any]


class SecurityGroupLimitExceeded(Forbidden):
    msg_fmt = "%(reason)s"


def _until_proxy_end(request: Request) -> None:
    if api_version(request) > LAST_VERSION:
        raise VersionNotFoundForAPIMethod()


def _uuid_like(value: Any) -> bool:
    try:
        uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        return False
    return True


def _path_id(request: Request, name: str) -> str:
    """Nova's ``validate_id``: an id that is no UUID is a 400."""
    value: str = request.path_params[name]
    if not _uuid_like(value):
        raise Invalid("Security group id should be uuid")
    return value


def _group_body(body: Any) -> dict[str, str]:
    """``{"security_group": {"name", "description"}}``: both strings of at most 255."""
    group = body.get("security_group") if isinstance(body, dict) else None
    if not isinstance(group, dict):
        raise bad("security_group", "is a required object")
    for field in ("name", "description"):
        if field not in group:
            raise bad(f"security_group/{field}", "is a required property")
    return {field: text(group[field], f"security_group/{field}") for field in ("name", "description")}


def _load(conn: sa.Connection, ctx: RequestContext, group_id: str) -> Group:
    """The group with its rules, if the caller may see it (404 otherwise)."""
    sg_db.get_group(conn, ctx, group_id)
    return sg_db.groups_with_rules(conn, [group_id])[group_id]


def _list(conn: sa.Connection, ctx: RequestContext, all_tenants: bool) -> list[Group]:
    """The caller's project's groups (its default made on first need, as
    Neutron's listing does), or an admin's every group with ``all_tenants``."""
    if ctx.project_id:
        sg_db.ensure_default(conn, ctx.project_id)
    q = sa.select(security_groups.c.id).order_by(security_groups.c.created_at, security_groups.c.id)
    if not (all_tenants and ctx.is_admin):
        q = q.where(security_groups.c.project_id == (ctx.project_id or ""))
    ids = list(conn.execute(q).scalars())
    found = sg_db.groups_with_rules(conn, ids)
    return [found[i] for i in ids if i in found]


async def index(request: Request) -> Response:
    _until_proxy_end(request)
    ctx = context(request)
    offset = query_int(request, "offset", 0) or 0
    limit = min(query_int(request, "limit", 0) or MAX_LIMIT, MAX_LIMIT)
    groups = await request.app.state.db.run(_list, ctx, "all_tenants" in request.query_params)
    views = [group_view(g) for g in groups[offset:offset + limit]]
    return reply({"security_groups": sorted(views, key=lambda g: (g["tenant_id"], g["name"]))})


async def show(request: Request) -> Response:
    _until_proxy_end(request)
    group_id = _path_id(request, "security_group_id")
    group = await request.app.state.db.read(_load, context(request), group_id)
    return reply({"security_group": group_view(group)})


async def create(request: Request) -> Response:
    _until_proxy_end(request)
    ctx = context(request)
    values = _group_body(await json_body(request))
    try:
        row = await request.app.state.network.create_security_group(ctx, values)
    except net_exc.OverQuota as exc:
        raise SecurityGroupLimitExceeded(reason=exc.format_message()) from None
    except net_exc.SecurityGroupDefaultAlreadyExists as exc:  # Nova's 400 for it
        raise Invalid(exc.format_message()) from None
    group = await request.app.state.db.read(_load, ctx, row["id"])
    return reply({"security_group": group_view(group)})


async def update(request: Request) -> Response:
    _until_proxy_end(request)
    ctx = context(request)
    group_id = _path_id(request, "security_group_id")
    await request.app.state.db.read(sg_db.get_group, ctx, group_id)  # 404 before the body
    values = _group_body(await json_body(request))
    await request.app.state.network.update_security_group(ctx, group_id, values)
    group = await request.app.state.db.read(_load, ctx, group_id)
    return reply({"security_group": group_view(group)})


async def delete(request: Request) -> Response:
    """202; a group still on a port, or a project's default, is Nova's 400
    (it turns the network service's 409 into ``Invalid``)."""
    _until_proxy_end(request)
    ctx = context(request)
    group_id = _path_id(request, "security_group_id")
    group = await request.app.state.db.read(sg_db.get_group, ctx, group_id)
    if group["name"] == "default" and not ctx.is_admin:
        raise Invalid("Insufficient rights for removing default security group.")
    try:
        await request.app.state.network.delete_security_group(ctx, group_id)
    except net_exc.SecurityGroupInUse as exc:
        raise Invalid(exc.format_message()) from None
    return Response(status_code=202)


# -- rules -------------------------------------------------------------------------
def _ports(protocol: str, from_port: Any, to_port: Any) -> tuple[int, int]:
    """Nova's ``_new_ingress_rule`` checks of a rule's ports for ``protocol``."""
    kind = protocol.upper()
    try:
        low, high = int(from_port), int(to_port)
    except (TypeError, ValueError):
        raise Invalid("Type and Code must be integers for ICMP protocol type" if kind == "ICMP"
                      else "To and From ports must be integers") from None
    if kind not in ("TCP", "UDP", "ICMP"):
        raise Invalid(f"Invalid IP protocol {protocol[:64]}.")
    if kind in ("TCP", "UDP") and low > high:
        raise Invalid(f"Invalid port range {low}:{high}. Former value cannot be greater than "
                      "the later")
    if kind in ("TCP", "UDP") and (low < 1 or high > 65535):
        raise Invalid(f"Invalid port range {low}:{high}. Valid {kind} ports should be "
                      "between 1-65535")
    if kind == "ICMP" and not (-1 <= low <= 255 and -1 <= high <= 255):
        raise Invalid(f"Invalid port range {low}:{high}. For ICMP, the type:code must be valid")
    return low, high


def _cidr(value: Any) -> str:
    """Nova's ``parse_cidr``: none is any address; otherwise an address with a prefix."""
    if not value:
        return ANY_ADDRESS
    if not isinstance(value, str) or "/" not in value or value.endswith("/"):
        raise Invalid(f"Invalid cidr {str(value)[:64]}.")
    try:
        net = ipaddress.ip_interface(value)
    except ValueError:
        raise Invalid(f"Invalid cidr {value[:64]}.") from None
    if net.network.prefixlen == 0 and str(net.ip) not in ("0.0.0.0", "::"):
        raise Invalid(f"Bad prefix for network in cidr {value}")
    return value


def _rule_values(rule: dict[str, Any]) -> dict[str, Any]:
    """The network service's ingress rule for Nova's rule body (protocol and
    ports are needed with an address range; with a remote group, a TCP/UDP or
    ICMP rule without ports covers all of them)."""
    group_id, protocol = rule.get("group_id"), rule.get("ip_protocol")
    from_port, to_port = rule.get("from_port"), rule.get("to_port")
    cidr = None if group_id is not None else _cidr(rule.get("cidr"))
    if group_id is not None and from_port is None and to_port is None:
        kind = str(protocol).upper() if protocol else ""
        from_port, to_port = {"ICMP": (-1, -1), "TCP": (1, 65535), "UDP": (1, 65535)}.get(
            kind, (None, None))
    values: dict[str, Any] = {
        "direction": "ingress", "remote_group_id": group_id, "remote_ip_prefix": cidr,
        "ethertype": "IPv6" if cidr and ipaddress.ip_interface(cidr).version == 6 else "IPv4"}
    if protocol and from_port is not None and to_port is not None:
        low, high = _ports(str(protocol), from_port, to_port)
        values.update(protocol=str(protocol).lower(), port_range_min=None if low == -1 else low,
                      port_range_max=None if high == -1 else high)
    elif cidr:
        raise Invalid("Not enough parameters to build a valid rule.")
    return values


def _rule_body(body: Any) -> dict[str, Any]:
    rule = body.get("security_group_rule") if isinstance(body, dict) else None
    if not isinstance(rule, dict):
        raise bad("security_group_rule", "is a required object")
    if not _uuid_like(rule.get("parent_group_id")) or not isinstance(rule["parent_group_id"], str):
        raise bad("security_group_rule/parent_group_id", "is required, a UUID")
    group_id = rule.get("group_id")
    if group_id is not None and not (isinstance(group_id, str) and _uuid_like(group_id)):
        raise bad("security_group_rule/group_id", "is not a UUID")
    return rule


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("direction", "ethertype", "protocol", "port_range_min", "port_range_max",
            "remote_group_id")
    if any(a.get(k) != b.get(k) for k in keys):
        return False
    nets = [ipaddress.ip_interface(r["remote_ip_prefix"]).network if r.get("remote_ip_prefix")
            else None for r in (a, b)]
    return nets[0] == nets[1]


def _check_new_rule(conn: sa.Connection, ctx: RequestContext, parent_id: str,
                    values: dict[str, Any]) -> Group | None:
    """404 for an unknown parent or remote group, 400 for a rule the parent
    has already; the remote group (name and project) if there is one."""
    parent = _load(conn, ctx, parent_id)
    remote = None
    if values["remote_group_id"] is not None:
        remote = sg_db.get_group(conn, ctx, values["remote_group_id"])
    if any(_same(existing, values) for existing in parent["rules"]):
        raise Invalid(f"This rule already exists in group {parent_id}")
    return remote


async def create_rule(request: Request) -> Response:
    _until_proxy_end(request)
    ctx = context(request)
    rule = _rule_body(await json_body(request))
    parent_id = rule["parent_group_id"]
    await request.app.state.db.read(_load, ctx, parent_id)  # 404 before the rule's checks
    values = {**_rule_values(rule), "security_group_id": parent_id}
    remote = await request.app.state.db.read(_check_new_rule, ctx, parent_id, values)
    try:
        row = await request.app.state.network.create_rule(ctx, values)
    except net_exc.OverQuota as exc:
        raise SecurityGroupLimitExceeded(reason=exc.format_message()) from None
    except net_exc.SecurityGroupRuleExists:
        raise Invalid(f"This rule already exists in group {parent_id}") from None
    shown = rule_view({**row, "remote_group": remote and {
        "name": remote["name"], "project_id": remote["project_id"]}})
    return reply({"security_group_rule": shown})


async def delete_rule(request: Request) -> Response:
    _until_proxy_end(request)
    rule_id = _path_id(request, "rule_id")
    await request.app.state.network.delete_rule(context(request), rule_id)
    return Response(status_code=202)


ROUTES = [
    Route("/v2.1/os-security-groups", index, methods=["GET"]),
    Route("/v2.1/os-security-groups", create, methods=["POST"]),
    Route("/v2.1/os-security-groups/{security_group_id}", show, methods=["GET"]),
    Route("/v2.1/os-security-groups/{security_group_id}", update, methods=["PUT"]),
    Route("/v2.1/os-security-groups/{security_group_id}", delete, methods=["DELETE"]),
    Route("/v2.1/os-security-group-rules", create_rule, methods=["POST"]),
    Route("/v2.1/os-security-group-rules/{rule_id}", delete_rule, methods=["DELETE"]),
]
