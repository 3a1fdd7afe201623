"""Releasing an instance's ports (Nova's ``deallocate_for_instance``): the
ports cirrus created are deleted, the ones the user brought unbound, and the
info cache emptied, in the caller's transaction.

Which ports the user brought is the request's port ids and the info cache's
``preserve_on_delete`` marks. On PostgreSQL one statement reads the cache,
deletes the other ports (their floating IPs disassociated, their tags
forgotten, their addresses by the foreign key's cascade), empties the cache
and returns every port of the instance; SQLite, whose statements cost no
round trip, runs them one by one.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cirrus.compute.models import instance_info_caches
from cirrus.context import RequestContext
from cirrus.db.base import utcnow
from cirrus.db.rows import PreparedRead
from cirrus.network import exception as exc
from cirrus.network import info_cache
from cirrus.network import ports as port_db
from cirrus.network.models import floatingips, network_tags, ports
from cirrus.network.networks import network_by_id

UNBOUND = {"device_id": "", "device_owner": "", "binding_host_id": ""}


def _release_statement() -> PreparedRead:
    """PostgreSQL: every port of instance ``w_uuid`` of project ``w_project``
    as it was, each with ``preserved`` (in ``w_requested`` or marked in the
    info cache: left to the caller; the others are deleted). Every part reads
    the statement's one snapshot, so the final SELECT sees the deleted
    ports' rows, and each data-modifying part runs whether read or not."""
    cache = instance_info_caches
    vif = sa.func.json_array_elements(cache.c.network_info).table_valued("value").alias("vif")
    marked = sa.select(vif.c.value.op("->>")("id").label("id")).select_from(cache).join(
        vif, sa.true()).where(
        cache.c.instance_uuid == sa.bindparam("w_uuid"),
        vif.c.value.op("->>")("preserve_on_delete") == "true",
        vif.c.value.op("->>")("id").is_not(None))
    requested = sa.select(sa.func.unnest(sa.bindparam(
        "w_requested", type_=postgresql.ARRAY(sa.String))).label("id"))
    kept = sa.union_all(marked, requested).cte("kept")
    mine = (ports.c.device_id == sa.bindparam("w_uuid"),
            port_db.owned_by(ports.c.project_id, sa.bindparam("w_project")))
    gone = ports.delete().where(*mine, ports.c.id.not_in(sa.select(kept.c.id))).returning(
        ports.c.id).cte("gone")
    fips = floatingips.update().where(floatingips.c.fixed_port_id.in_(sa.select(gone.c.id))).values(
        fixed_port_id=None, fixed_ip_address=None, router_id=None, status="DOWN").cte("fips")
    tags = network_tags.delete().where(network_tags.c.resource_id.in_(
        sa.select(gone.c.id))).cte("tags")
    cleared = cache.update().where(cache.c.instance_uuid == sa.bindparam("w_uuid")).values(
        network_info=[], updated_at=sa.bindparam("v_now")).cte("cleared")
    return PreparedRead(
        sa.select(ports, ports.c.id.in_(sa.select(kept.c.id)).label("preserved"))
        .add_cte(gone, fips, tags, cleared).where(*mine).order_by(ports.c.seq))


_RELEASE = _release_statement()


def release_ports(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                  requested: set[str]) -> list[dict[str, Any]]:
    """Delete the instance's ports but those in ``requested`` or marked
    ``preserve_on_delete`` in its info cache, which are unbound; the cache
    emptied. The ports as they were, for the host backend."""
    if conn.dialect.name == "postgresql":
        return _release_in_one(conn, ctx, instance, requested)
    cache = info_cache.cache_of(conn, instance["uuid"])
    preserved = requested | {v["id"] for v in cache if v.get("preserve_on_delete")}
    rows = []
    for port in port_db.ports_of_device(conn, instance["uuid"], instance["project_id"]):
        if port["id"] in preserved:
            rows.append(port_db.update_port(conn, ctx.elevated(), port["id"], UNBOUND)[0])
        else:  # the row was just read (and an elevated context owns every port)
            rows.append(port_db.delete_port_row(conn, port))
    info_cache.store(conn, instance["uuid"], [])
    return rows


def _release_in_one(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                    requested: set[str]) -> list[dict[str, Any]]:
    """PostgreSQL: :data:`_RELEASE`, then the preserved ports unbound one by
    one (a user's own ports: seldom). A port deleted by another transaction
    meanwhile is returned as deleted, as the statement-by-statement path
    does."""
    rows = []
    for row in _RELEASE.all(conn, w_uuid=instance["uuid"], w_project=instance["project_id"],
                            w_requested=sorted(requested), v_now=utcnow()):
        if not row.pop("preserved"):
            rows.append(row)
            continue
        try:
            rows.append(port_db.update_port(conn, ctx.elevated(), row["id"], UNBOUND)[0])
        except exc.PortNotFound:
            rows.append(row)  # deleted meanwhile: told as released all the same
    return rows


def undo(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any], created: list[str],
         preexisting: list[str]) -> list[dict[str, Any]]:
    """A failed allocation's rollback: the ports it created deleted, the ones
    it was given unbound (each gone meanwhile skipped); the info cache then
    lists what is left. The ports as they were."""
    rows = []
    for pid in created:
        try:
            rows.append(port_db.delete_port(conn, ctx.elevated(), pid))
        except exc.PortNotFound:
            pass
    for pid in preexisting:
        try:
            rows.append(port_db.update_port(conn, ctx.elevated(), pid, UNBOUND)[0])
        except exc.PortNotFound:
            pass
    info_cache.build_network_info_model(conn, instance["uuid"], instance["project_id"], set())
    return rows


def release_port(conn: sa.Connection, ctx: RequestContext, instance: dict[str, Any],
                 port_id: str, preserve: bool) -> dict[str, Any]:
    """Detach one port of the instance (os-interface): deleted, or unbound if
    ``preserve``; PortNotFound if it is not the instance's (a stale cache).
    The port as it was."""
    port = port_db.port_by_id(conn, port_id)
    if port is None or port["device_id"] != instance["uuid"] \
            or port["project_id"] != instance["project_id"]:
        raise exc.PortNotFound(port_id=port_id)
    if preserve:
        return port_db.update_port(conn, ctx.elevated(), port_id, UNBOUND)[0]
    return port_db.delete_port(conn, ctx.elevated(), port_id)


def networks_to_tell(conn: sa.Connection, needed: bool,
                     rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The networks of ``rows`` by id, for the host backend's unbind; none
    unless ``needed`` (``Binder.unbind_needs_network``)."""
    if not needed:
        return {}
    return {net_id: network_by_id(conn, net_id) or {}
            for net_id in {r["network_id"] for r in rows}}
