"""Subnet pools (Neutron's ``subnet_allocation`` and ``default-subnetpools``
extensions): the rows, their rules and the allocation of a subnet's prefix.

A pool holds prefixes of one IP version (overlapping ones merged, as
Neutron compacts them) and the bounds of the subnets taken from it:
``min_prefixlen`` ≤ ``default_prefixlen`` ≤ ``max_prefixlen`` (defaults: 8
or 64, the minimum, 32 or 128). A subnet names its pool with
``subnetpool_id`` (or ``use_default_subnetpool``) and either a ``cidr``
inside it or a ``prefixlen`` (default the pool's); the first free block of
that size is taken, first prefix first. A pool's prefixes may grow, never
shrink; a pool with subnets is not deleted. Address scopes and the
``default_quota`` of addresses a project may take are not kept.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Union

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_one
from cirrus.network import authz
from cirrus.network import exception as exc
from cirrus.network.common import new_id, owned, timestamps_view
from cirrus.network.models import subnetpool_prefixes, subnetpools, subnets

Net = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
# ip version → (the default min_prefixlen, the longest prefix)
BOUNDS = {4: (8, 32), 6: (64, 128)}
COLUMNS = {"id": "id", "name": "name", "project_id": "project_id", "tenant_id": "project_id",
           "ip_version": "ip_version", "shared": "shared", "is_default": "is_default",
           "default_prefixlen": "default_prefixlen", "min_prefixlen": "min_prefixlen",
           "max_prefixlen": "max_prefixlen", "description": "description"}


def _bad(reason: str) -> exc.BadRequest:
    return exc.BadRequest(reason=reason)


# -- rules ------------------------------------------------------------------------------
def compact(prefixes: list[str]) -> list[Net]:
    """The prefixes as networks (host bits dropped), overlapping ones merged;
    400 if they mix IP versions or there are none."""
    nets = [ipaddress.ip_network(p, strict=False) for p in prefixes]
    if not nets:
        raise _bad("Empty subnet pool prefix list.")
    if len({n.version for n in nets}) > 1:
        raise _bad("Cannot mix IPv4 and IPv6 prefixes in a subnet pool.")
    return list(ipaddress.collapse_addresses(nets))  # type: ignore[type-var]


def _bounds(version: int, values: dict[str, Any], current: dict[str, Any]) -> dict[str, int]:
    """``min_prefixlen``, ``max_prefixlen`` and ``default_prefixlen`` after
    ``values`` (over ``current``, or the defaults), checked against each other."""
    low, longest = BOUNDS[version]
    out = {"min_prefixlen": values.get("min_prefixlen", current.get("min_prefixlen", low)),
           "max_prefixlen": values.get("max_prefixlen", current.get("max_prefixlen", longest))}
    out["default_prefixlen"] = values.get("default_prefixlen",
                                          current.get("default_prefixlen", out["min_prefixlen"]))
    if out["max_prefixlen"] > longest:
        raise _bad(f"Illegal prefix bounds: max_prefixlen={out['max_prefixlen']}, "
                   f"ip_version_max={longest}.")
    if out["min_prefixlen"] > out["max_prefixlen"]:
        raise _bad(f"Illegal prefix bounds: min_prefixlen={out['min_prefixlen']}, "
                   f"max_prefixlen={out['max_prefixlen']}.")
    default = out["default_prefixlen"]
    for base, outside in (("min_prefixlen", default < out["min_prefixlen"]),
                          ("max_prefixlen", default > out["max_prefixlen"])):
        if outside:
            raise _bad(f"Illegal prefix bounds: default_prefixlen={default}, {base}={out[base]}.")
    return out


def _check_default(conn: sa.Connection, version: int, pool_id: str) -> None:
    """One default pool per IP version (Neutron's ``default-subnetpools``)."""
    other = conn.execute(sa.select(subnetpools.c.id).where(
        subnetpools.c.is_default.is_(True), subnetpools.c.ip_version == version,
        subnetpools.c.id != pool_id)).first()
    if other is not None:
        raise _bad("Invalid input for operation: A default subnetpool for this IP family "
                   "has already been set. Only one default may exist per IP family.")


def _admin_fields(ctx: RequestContext, values: dict[str, Any], verb: str) -> None:
    for field in ("shared", "is_default"):
        if values.get(field):
            authz.admin_only(ctx, f"{verb}_subnetpool:{field}")


# -- rows -------------------------------------------------------------------------------
def visible_clause(ctx: RequestContext) -> Any:
    """The pools a caller may list: its project's and the shared ones."""
    if ctx.is_admin:
        return None
    if not ctx.project_id:
        return sa.false()
    return sa.or_(subnetpools.c.project_id == ctx.project_id, subnetpools.c.shared.is_(True))


def get_subnetpool(conn: sa.Connection, ctx: RequestContext, pool_id: str,
                   lock: bool = False) -> dict[str, Any]:
    """Pool ``pool_id`` if the caller sees it (its own or a shared one), else 404;
    ``lock``: held until the unit of work ends (allocations from it queue)."""
    q = sa.select(subnetpools).where(subnetpools.c.id == pool_id)
    row = fetch_one(conn, q.with_for_update() if lock else q)
    if row is None or not (owned(ctx, row) or row["shared"]):
        raise exc.SubnetPoolNotFound(subnetpool_id=pool_id)
    return row


def prefixes_of(conn: sa.Connection, pool_ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {pid: [] for pid in pool_ids}
    if pool_ids:
        for row in conn.execute(sa.select(subnetpool_prefixes).where(
                subnetpool_prefixes.c.subnetpool_id.in_(pool_ids))):
            out[row.subnetpool_id].append(row.cidr)
    for pid, cidrs in out.items():
        cidrs.sort(key=_sort_key)
    return out


def _sort_key(cidr: str) -> tuple[int, int, int]:
    net = ipaddress.ip_network(cidr)
    return net.version, int(net.network_address), net.prefixlen


def subnetpool_view(row: dict[str, Any], prefixes: list[str]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "tenant_id": row["project_id"],
            "project_id": row["project_id"], "prefixes": prefixes,
            "default_prefixlen": row["default_prefixlen"], "min_prefixlen": row["min_prefixlen"],
            "max_prefixlen": row["max_prefixlen"], "ip_version": row["ip_version"],
            "shared": row["shared"], "is_default": row["is_default"],
            "default_quota": row["default_quota"], "address_scope_id": None,
            "description": row["description"],
            **timestamps_view(row), "revision_number": row["revision_number"]}


def _set_prefixes(conn: sa.Connection, pool_id: str, nets: list[Net]) -> None:
    conn.execute(subnetpool_prefixes.delete().where(subnetpool_prefixes.c.subnetpool_id == pool_id))
    conn.execute(subnetpool_prefixes.insert(), [{"subnetpool_id": pool_id, "cidr": str(n)}
                                                for n in nets])


def create_subnetpool(conn: sa.Connection, ctx: RequestContext, values: dict[str, Any],
                      project: str) -> dict[str, Any]:
    """A pool of ``project`` from ``values`` (``prefixes`` given: the schema requires it)."""
    _admin_fields(ctx, values, "create")
    nets = compact(values["prefixes"])
    version = nets[0].version
    row = {"id": new_id(), "project_id": project, "name": values.get("name", ""),
           "description": values.get("description", ""), "ip_version": version,
           **_bounds(version, values, {}), "shared": values.get("shared", False),
           "is_default": values.get("is_default", False),
           "default_quota": values.get("default_quota"), "revision_number": 0,
           "created_at": utcnow()}
    if row["is_default"]:
        _check_default(conn, version, row["id"])
    conn.execute(subnetpools.insert().values(**row))
    _set_prefixes(conn, row["id"], nets)
    return row


def update_subnetpool(conn: sa.Connection, ctx: RequestContext, pool_id: str,
                      values: dict[str, Any]) -> dict[str, Any]:
    """Apply ``values``: 404 unless the caller sees the pool, 403 unless it may
    change it; its prefixes may only grow."""
    row = get_subnetpool(conn, ctx, pool_id, lock=True)
    authz.enforce(ctx, "network:update", "subnetpool", row)
    _admin_fields(ctx, values, "update")
    changes: dict[str, Any] = {k: values[k] for k in ("name", "description", "is_default",
                                                      "default_quota") if k in values}
    changes.update(_bounds(row["ip_version"], values, row))
    if "prefixes" in values:
        nets = compact(values["prefixes"])
        if nets[0].version != row["ip_version"]:
            raise _bad("Cannot mix IPv4 and IPv6 prefixes in a subnet pool.")
        old = [ipaddress.ip_network(c) for c in prefixes_of(conn, [row["id"]])[row["id"]]]
        if any(not any(o.subnet_of(n) for n in nets) for o in old):  # type: ignore[arg-type]
            raise _bad("Illegal update to prefixes: Existing prefixes must be a subset "
                       "of the new prefixes")
        _set_prefixes(conn, row["id"], nets)
    if changes.get("is_default"):
        _check_default(conn, row["ip_version"], row["id"])
    changes.update(updated_at=utcnow(), revision_number=row["revision_number"] + 1)
    conn.execute(subnetpools.update().where(subnetpools.c.id == row["id"]).values(**changes))
    return {**row, **changes}


def delete_subnetpool(conn: sa.Connection, ctx: RequestContext, pool_id: str) -> None:
    """Delete the pool: 409 while a subnet holds a prefix of it."""
    row = get_subnetpool(conn, ctx, pool_id, lock=True)
    authz.enforce(ctx, "network:delete", "subnetpool", row)
    if conn.execute(sa.select(subnets.c.id).where(subnets.c.subnetpool_id == row["id"])).first():
        raise exc.SubnetPoolInUse(subnetpool_id=row["id"])
    conn.execute(subnetpools.delete().where(subnetpools.c.id == row["id"]))


# -- allocation -------------------------------------------------------------------------
def default_pool(conn: sa.Connection, version: int) -> dict[str, Any]:
    """The default pool of ``version`` (``use_default_subnetpool``); 400 if none."""
    row = fetch_one(conn, sa.select(subnetpools).where(
        subnetpools.c.is_default.is_(True), subnetpools.c.ip_version == version))
    if row is None:
        raise _bad(f"No default subnetpool found for IPv{version}")
    return row


def _free_blocks(prefixes: list[Net], used: list[Net]) -> list[Net]:
    """What of ``prefixes`` no network of ``used`` covers, as blocks."""
    free = list(prefixes)
    for taken in used:
        left: list[Net] = []
        for block in free:
            if taken.subnet_of(block):  # type: ignore[arg-type]
                left.extend(block.address_exclude(taken))  # type: ignore[arg-type]
            elif not block.subnet_of(taken):  # type: ignore[arg-type]
                left.append(block)
        free = left
    return sorted(free, key=lambda n: (n.network_address, n.prefixlen))


def allocate(conn: sa.Connection, pool: dict[str, Any], cidr: str | None,
             prefixlen: int | None) -> str:
    """The prefix a new subnet takes from ``pool`` (read with its lock): the
    ``cidr`` asked if it is free inside the pool, else the first free block
    of ``prefixlen`` (default the pool's); 400 if the pool cannot give it."""
    prefixes = [ipaddress.ip_network(c) for c in prefixes_of(conn, [pool["id"]])[pool["id"]]]
    used = [ipaddress.ip_network(c) for c in conn.execute(sa.select(subnets.c.cidr).where(
        subnets.c.subnetpool_id == pool["id"])).scalars()]
    wanted = ipaddress.ip_network(cidr, strict=False) if cidr else None
    length = wanted.prefixlen if wanted else (prefixlen or pool["default_prefixlen"])
    if length < pool["min_prefixlen"] or length > pool["max_prefixlen"]:
        raise _bad(f"Unable to allocate subnet with prefix length {length}, allowed prefix "
                   f"lengths are {pool['min_prefixlen']} to {pool['max_prefixlen']}.")
    free = _free_blocks(prefixes, used)
    if wanted is not None:
        if wanted.version != pool["ip_version"] or not any(
                wanted.subnet_of(block) for block in free):  # type: ignore[arg-type]
            raise _bad("Failed to allocate subnet: Cannot allocate requested subnet from the "
                       "available set of prefixes.")
        return str(wanted)
    for block in free:
        if block.prefixlen <= length:
            return str(next(block.subnets(new_prefix=length)))
    raise _bad(f"Failed to allocate subnet: Insufficient prefix space to allocate subnet "
               f"size /{length}.")


def pool_for_subnet(conn: sa.Connection, ctx: RequestContext,
                    values: dict[str, Any]) -> dict[str, Any] | None:
    """The pool a new subnet asks for (locked), if any."""
    if values.get("subnetpool_id"):
        return get_subnetpool(conn, ctx, values["subnetpool_id"], lock=True)
    if values.get("use_default_subnetpool"):
        version = values.get("ip_version") or 4
        found = default_pool(conn, version)
        return get_subnetpool(conn, ctx, found["id"], lock=True)
    return None


def list_views(conn: sa.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    prefixes = prefixes_of(conn, [r["id"] for r in rows])
    return [subnetpool_view(r, prefixes[r["id"]]) for r in rows]

