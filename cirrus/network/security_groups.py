"""Security groups and rules; a ``default`` group per project on first need."""
from __future__ import annotations

import ipaddress
from typing import Any

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all, fetch_one
from cirrus.db.prepared import Prepared
from cirrus.db.rows import PreparedRead
from cirrus.network import exception as exc
from cirrus.network import tags
from cirrus.network.common import new_id, owned, timestamps_view
from cirrus.network.models import (default_security_groups, ports, security_group_rules,
                                   security_groups)
from cirrus.network.validators import ip_or_cidr, shown

PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58, "ipv6-icmp": 58, "sctp": 132}


def _network_of(prefix: str | None) -> str | None:
    return str(ipaddress.ip_interface(prefix).network) if prefix else None


def rule_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "security_group_id": row["security_group_id"],
            "tenant_id": row["project_id"], "project_id": row["project_id"],
            "direction": row["direction"], "ethertype": row["ethertype"],
            "protocol": row["protocol"], "port_range_min": row["port_range_min"],
            "port_range_max": row["port_range_max"], "remote_ip_prefix": row["remote_ip_prefix"],
            "remote_group_id": row["remote_group_id"], "remote_address_group_id": None,
            "normalized_cidr": _network_of(row["remote_ip_prefix"]), "belongs_to_default_sg": None,
            "description": row["description"], **timestamps_view(row)}


def group_view(row: dict[str, Any], rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "tenant_id": row["project_id"],
            "project_id": row["project_id"], "description": row["description"],
            "stateful": row["stateful"], "shared": False,
            "security_group_rules": [rule_view(r) for r in rules], **timestamps_view(row)}


def _insert_rule(conn: sa.Connection, group_id: str, project_id: str | None,
                 **values: Any) -> dict[str, Any]:
    row = {"id": new_id(), "security_group_id": group_id, "project_id": project_id,
           "direction": values["direction"], "ethertype": values.get("ethertype", "IPv4"),
           "protocol": values.get("protocol"), "port_range_min": values.get("port_range_min"),
           "port_range_max": values.get("port_range_max"),
           "remote_ip_prefix": values.get("remote_ip_prefix"),
           "remote_group_id": values.get("remote_group_id"),
           "description": values.get("description", ""), "created_at": utcnow()}
    conn.execute(security_group_rules.insert().values(**row))
    return row


def create_group(conn: sa.Connection, ctx: RequestContext, name: str, description: str = "",
                 project_id: str | None = None) -> dict[str, Any]:
    """A group with Neutron's default egress rules."""
    project = project_id or ctx.project_id
    group_id = new_id()
    row = {"id": group_id, "name": name, "project_id": project, "description": description,
           "stateful": True, "created_at": utcnow()}
    conn.execute(security_groups.insert().values(**row))
    for ethertype in ("IPv4", "IPv6"):
        _insert_rule(conn, group_id, project, direction="egress", ethertype=ethertype)
    return row


def ensure_default(conn: sa.Connection, project_id: str) -> dict[str, Any]:
    """The project's ``default`` group (egress all, ingress from members)."""
    row = fetch_one(conn, sa.select(security_groups).where(
        security_groups.c.id == ensure_default_id(conn, project_id)))
    assert row is not None
    return row


# Built once: every boot resolves its groups.
_DEFAULT_ID = Prepared(sa.select(default_security_groups.c.security_group_id).where(
    default_security_groups.c.project_id == sa.bindparam("w_project")))
# The project's default group id with the id and name of each of its groups, in
# one read; no row at all while the project has no default group yet.
_GROUPS_WITH_DEFAULT = PreparedRead(
    sa.select(default_security_groups.c.security_group_id.label("default_id"),
              security_groups.c.id, security_groups.c.name)
    .select_from(default_security_groups.outerjoin(
        security_groups, security_groups.c.project_id == default_security_groups.c.project_id))
    .where(default_security_groups.c.project_id == sa.bindparam("w_project")))


def ensure_default_id(conn: sa.Connection, project_id: str) -> str:
    """The id of the project's ``default`` group, created on first use.

    Concurrent first uses race on the ``default_security_groups`` primary key:
    the loser's savepoint rolls back and it returns the winner's group.
    """
    dsg = default_security_groups
    found = _DEFAULT_ID.execute(conn, w_project=project_id).fetchone()
    if found is not None:
        existing: str = found[0]
        return existing
    try:
        with conn.begin_nested():
            group_id = new_id()
            conn.execute(security_groups.insert().values(
                id=group_id, name="default", project_id=project_id,
                description="Default security group", stateful=True, created_at=utcnow()))
            conn.execute(dsg.insert().values(project_id=project_id, security_group_id=group_id))
            for ethertype in ("IPv4", "IPv6"):
                _insert_rule(conn, group_id, project_id, direction="egress", ethertype=ethertype)
                _insert_rule(conn, group_id, project_id, direction="ingress",
                             ethertype=ethertype, remote_group_id=group_id)
            return group_id
    except sa.exc.IntegrityError:
        winner: str = conn.execute(sa.select(dsg.c.security_group_id).where(
            dsg.c.project_id == project_id)).scalar_one()
        return winner


def get_group(conn: sa.Connection, ctx: RequestContext, group_id: str) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(security_groups).where(security_groups.c.id == group_id))
    if row is None or not owned(ctx, row):
        raise exc.SecurityGroupNotFound(id=group_id)
    return row


def rules_of(conn: sa.Connection, group_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {g: [] for g in group_ids}
    if group_ids:
        for r in fetch_all(conn, sa.select(security_group_rules).where(
                security_group_rules.c.security_group_id.in_(group_ids))
                .order_by(security_group_rules.c.created_at)):
            out[r["security_group_id"]].append(r)
    return out


def groups_with_rules(conn: sa.Connection, group_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The groups of ``group_ids`` that exist, by id, each with its ``rules``;
    a rule's ``remote_group`` is the name and project of its remote group
    (None if it has none, or it is gone)."""
    if not group_ids:
        return {}
    groups = fetch_all(conn, sa.select(security_groups).where(security_groups.c.id.in_(group_ids)))
    rules = rules_of(conn, [g["id"] for g in groups])
    remote_ids = {r["remote_group_id"] for found in rules.values() for r in found
                  if r["remote_group_id"]}
    remotes = {r.id: {"name": r.name, "project_id": r.project_id} for r in conn.execute(
        sa.select(security_groups.c.id, security_groups.c.name, security_groups.c.project_id)
        .where(security_groups.c.id.in_(remote_ids)))} if remote_ids else {}
    return {g["id"]: {**g, "rules": [{**r, "remote_group": remotes.get(r["remote_group_id"])}
                                     for r in rules[g["id"]]]} for g in groups}


def delete_group(conn: sa.Connection, ctx: RequestContext, group_id: str) -> None:
    row = get_group(conn, ctx, group_id)
    for port in conn.execute(sa.select(ports.c.security_groups).where(
            ports.c.project_id == row["project_id"])):
        if group_id in (port.security_groups or []):
            raise exc.SecurityGroupInUse(id=group_id)
    conn.execute(security_group_rules.delete().where(sa.or_(
        security_group_rules.c.security_group_id == group_id,
        security_group_rules.c.remote_group_id == group_id)))  # Neutron's cascade on the remote group
    tags.delete_tags(conn, [group_id])
    conn.execute(security_groups.delete().where(security_groups.c.id == group_id))


def create_rule(conn: sa.Connection, ctx: RequestContext, values: dict[str, Any]) -> dict[str, Any]:
    group = get_group(conn, ctx, values["security_group_id"])
    if values.get("direction") not in ("ingress", "egress"):
        raise exc.InvalidInput(reason="direction must be ingress or egress")
    ethertype = values.get("ethertype", "IPv4")
    if ethertype not in ("IPv4", "IPv6"):
        raise exc.InvalidInput(reason="ethertype must be IPv4 or IPv6")
    protocol = values.get("protocol")
    if protocol is not None:
        protocol = str(protocol).lower()
        number = protocol.isascii() and protocol.isdigit() and len(protocol) <= 3
        if protocol not in PROTOCOLS and not (number and int(protocol) <= 255):
            raise exc.InvalidInput(reason=f"Security group rule protocol {shown(protocol)} "
                                          f"not supported.")
    if values.get("remote_ip_prefix") is not None and values.get("remote_group_id") is not None:
        raise exc.InvalidInput(reason="Only remote_ip_prefix or remote_group_id may be provided.")
    pmin, pmax = values.get("port_range_min"), values.get("port_range_max")
    for value in (pmin, pmax):
        if value is not None and (not isinstance(value, int) or not 0 <= value <= 65535):
            raise exc.SecurityGroupInvalidPortValue(port=shown(value))
    if (pmin is not None or pmax is not None) and protocol is None:
        raise exc.InvalidInput(reason="Must also specify protocol if port range is given.")
    check_port_range(protocol, pmin, pmax)
    prefix = values.get("remote_ip_prefix")
    if prefix is not None:
        if ip_or_cidr(prefix):
            raise exc.InvalidInput(reason=f"'{shown(prefix)}' is not a valid IP prefix")
        net = ipaddress.ip_interface(prefix)
        if (net.version == 4) != (ethertype == "IPv4"):
            raise exc.InvalidInput(reason=f"Conflicting value ethertype {ethertype} for CIDR {prefix}")
        prefix = str(net)  # as given, with its prefix (Neutron keeps host bits, as Nova shows)
    if values.get("remote_group_id"):
        get_group(conn, ctx, values["remote_group_id"])
    for existing in rules_of(conn, [group["id"]])[group["id"]]:
        if (existing["direction"], existing["ethertype"], existing["protocol"],
                existing["port_range_min"], existing["port_range_max"],
                _network_of(existing["remote_ip_prefix"]), existing["remote_group_id"]) == (
                values["direction"], ethertype, protocol, pmin, pmax, _network_of(prefix),
                values.get("remote_group_id")):
            raise exc.SecurityGroupRuleExists(rule_id=existing["id"])
    return _insert_rule(conn, group["id"], group["project_id"], direction=values["direction"],
                        ethertype=ethertype, protocol=protocol, port_range_min=pmin,
                        port_range_max=pmax, remote_ip_prefix=prefix,
                        remote_group_id=values.get("remote_group_id"),
                        description=values.get("description", ""))


_PORTED = ("tcp", "udp", "sctp", "dccp", "udplite", "6", "17", "132", "33", "136")
_ICMP = ("icmp", "icmpv6", "ipv6-icmp", "1", "58")


def check_port_range(protocol: str | None, pmin: int | None, pmax: int | None) -> None:
    """Neutron's ``_validate_port_range``: for protocols with ports both ends,
    neither 0, in order; for ICMP a type and code of 0-255, a code only
    with a type."""
    if pmin is None and pmax is None:
        return
    if protocol in _PORTED:
        if pmin == 0 or pmax == 0:
            raise exc.SecurityGroupInvalidPortValue(port=0)
        if pmin is None or pmax is None or pmin > pmax:
            raise exc.SecurityGroupInvalidPortRange()
    elif protocol in _ICMP:
        for value, attr, field in ((pmin, "port_range_min", "type"),
                                   (pmax, "port_range_max", "code")):
            if value is not None and not 0 <= value <= 255:
                raise exc.SecurityGroupInvalidIcmpValue(field=field, attr=attr, value=value)
        if pmin is None:
            raise exc.SecurityGroupMissingIcmpType(value=pmax)


def get_rule(conn: sa.Connection, ctx: RequestContext, rule_id: str) -> dict[str, Any]:
    row = fetch_one(conn, sa.select(security_group_rules).where(security_group_rules.c.id == rule_id))
    if row is None or not owned(ctx, row):
        raise exc.SecurityGroupRuleNotFound(id=rule_id)
    return row


def resolve(conn: sa.Connection, project_id: str, requested: list[str]) -> list[str]:
    """Group names or ids → ids (seed 001: NoUniqueMatch, SecurityGroupNotFound).

    The project's ``default`` group is created first if it has none yet."""
    return _match(_project_groups(conn, project_id), requested)


def resolve_made(conn: sa.Connection, project_id: str, requested: list[str]) -> list[str] | None:
    """:func:`resolve` without writing: None while the project has no
    default group yet (``resolve`` makes it)."""
    groups = _groups_once_made(conn, project_id)
    return None if groups is None else _match(groups, requested)


def _match(groups: list[dict[str, Any]], requested: list[str]) -> list[str]:
    """The ids of ``requested`` (names or ids) among ``groups``, each once; a
    name matching two groups is NoUniqueMatch, one matching none SecurityGroupNotFound."""
    ids = []
    for ref in requested:
        if any(g["id"] == ref for g in groups):
            ids.append(ref)
            continue
        by_name = [g for g in groups if g["name"] == ref]
        if len(by_name) > 1:
            raise exc.NoUniqueMatch(name=shown(ref))
        if not by_name:
            raise exc.SecurityGroupNotFound(id=shown(ref))
        ids.append(by_name[0]["id"])
    return list(dict.fromkeys(ids))


_GROUPS_OF_PROJECT = PreparedRead(sa.select(security_groups.c.id, security_groups.c.name).where(
    security_groups.c.project_id == sa.bindparam("w_project")))


# ``resolve(["default"])`` as three columns a boot's first read carries
# (``networks.boot_read_of``) instead of a read of its
# own: whether the project has its default group yet, and its groups named
# ``default`` (one, unless made behind the API's back).
_NAMED_DEFAULT = sa.and_(security_groups.c.project_id == sa.bindparam("w_project"),
                         security_groups.c.name == "default")
DEFAULT_GROUP_COLUMNS = (
    sa.exists().where(default_security_groups.c.project_id == sa.bindparam("w_project"))
    .label("sg_has_default"),
    sa.select(sa.func.count()).where(_NAMED_DEFAULT).scalar_subquery().label("sg_defaults"),
    sa.select(sa.func.min(security_groups.c.id)).where(_NAMED_DEFAULT).scalar_subquery()
    .label("sg_default_id"))


def resolved_default(row: dict[str, Any]) -> list[str] | None:
    """:func:`resolve` of ``["default"]`` from :data:`DEFAULT_GROUP_COLUMNS` of
    ``row``; None while the project has no default group (``resolve`` makes it)."""
    if not row["sg_has_default"]:
        return None
    if row["sg_defaults"] > 1:
        raise exc.NoUniqueMatch(name="default")
    if not row["sg_defaults"]:
        raise exc.SecurityGroupNotFound(id="default")
    return [row["sg_default_id"]]


def check_groups(conn: sa.Connection, project_id: str, requested: list[str]) -> None:
    """:func:`resolve` without creating anything: whether ``project_id`` has a
    group for each of ``requested`` (``default`` always, it is made on first
    use). For a server create's check before its 202."""
    others = [ref for ref in requested if ref != "default"]
    if others:
        _match(_GROUPS_OF_PROJECT.all(conn, w_project=project_id), others)


def _groups_once_made(conn: sa.Connection, project_id: str) -> list[dict[str, Any]] | None:
    """Id and name of each group of the project; None while it has no
    default group yet."""
    rows = _GROUPS_WITH_DEFAULT.all(conn, w_project=project_id)
    return [r for r in rows if r["id"] is not None] if rows else None


def _project_groups(conn: sa.Connection, project_id: str) -> list[dict[str, Any]]:
    """Id and name of each group of the project, its default group ensured:
    one read once the default exists (every boot but a project's first)."""
    groups = _groups_once_made(conn, project_id)
    if groups is None:
        ensure_default_id(conn, project_id)
        groups = _groups_once_made(conn, project_id) or []
    return groups
