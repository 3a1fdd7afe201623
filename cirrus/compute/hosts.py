"""Compute services and hypervisors as the admin APIs show them."""
from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import compute_nodes, instances
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.exception import NotFound
from cirrus.service_models import services

# cirrus's binaries under the names OpenStack tooling looks for.
PUBLIC_BINARY = {"cirrus-compute": "nova-compute", "cirrus-conductor": "nova-conductor",
                 "cirrus-scheduler": "nova-scheduler"}
INTERNAL_BINARY = {v: k for k, v in PUBLIC_BINARY.items()}


class ServiceNotFound(NotFound):
    msg_fmt = "Service %(service_id)s could not be found."


def is_up(row: dict[str, Any], down_time: float, now: dt.datetime | None = None) -> bool:
    """Up = heartbeat within ``down_time`` seconds and not forced down."""
    if row.get("forced_down") or row.get("last_seen_up") is None:
        return False
    seen: dt.datetime = row["last_seen_up"]
    return ((now or utcnow()) - seen).total_seconds() <= down_time


def list_services(conn: sa.Connection, host: str | None = None,
                  binary: str | None = None) -> list[dict[str, Any]]:
    q = sa.select(services).order_by(services.c.id)
    if host:
        q = q.where(services.c.host == host)
    if binary:
        q = q.where(services.c.binary == INTERNAL_BINARY.get(binary, binary))
    return fetch_all(conn, q)


def get_service(conn: sa.Connection, service_id: str) -> dict[str, Any]:
    # An integer id before 2.53; a number too long for the column names nothing.
    numeric = service_id.isascii() and service_id.isdigit()
    if numeric and len(service_id) > 18:
        raise ServiceNotFound(service_id=service_id[:32])
    col = services.c.id if numeric else services.c.uuid
    rows = fetch_all(conn, sa.select(services).where(col == (int(service_id) if numeric
                                                             else service_id)))
    if not rows:
        raise ServiceNotFound(service_id=service_id)
    return rows[0]


def update_service(conn: sa.Connection, service_id: int, values: dict[str, Any]) -> None:
    conn.execute(services.update().where(services.c.id == service_id).values(
        updated_at=utcnow(), **values))


def list_nodes(conn: sa.Connection) -> list[dict[str, Any]]:
    """Compute nodes with their compute service row (as ``service``)."""
    nodes = fetch_all(conn, sa.select(compute_nodes).order_by(compute_nodes.c.id))
    svcs = {s["host"]: s for s in list_services(conn, binary="cirrus-compute")}
    for node in nodes:
        node["service"] = svcs.get(node["host"])
    return nodes


def servers_on_nodes(conn: sa.Connection, nodes: list[str]) -> dict[str, list[dict[str, str]]]:
    """The live instances on each of ``nodes``: ``{node: [{"uuid", "name"}]}``
    with Nova's instance names (``instance-%08x``); a node without any is absent."""
    query = (sa.select(instances.c.node, instances.c.uuid, instances.c.id)
             .where(instances.c.node.in_(nodes), instances.c.deleted.is_(False))
             .order_by(instances.c.id))
    found: dict[str, list[dict[str, str]]] = {}
    for row in conn.execute(query):
        found.setdefault(row.node, []).append({"uuid": row.uuid, "name": "instance-%08x" % row.id})
    return found
