"""Compute services and hypervisors as the admin APIs show them."""
from __future__ import annotations

import datetime as dt
from typing import Any, TypedDict

import sqlalchemy as sa

from cirrus.compute.exception import HostNotFound
from cirrus.compute.models import compute_nodes, instances
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.db.rows import PreparedRead
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


def zone_of(row: dict[str, Any]) -> str:
    """A service's zone as the APIs show it: its host's for a compute service,
    ``internal`` for the others (Nova's ``internal_service_availability_zone``)."""
    return str(row["availability_zone"]) if row["binary"] == "cirrus-compute" else "internal"


def list_services(conn: sa.Connection, host: str | None = None,
                  binary: str | None = None) -> list[dict[str, Any]]:
    # The block storage service's rows are Cinder's os-services', not Nova's.
    q = sa.select(services).where(services.c.binary.not_like("cinder-%")).order_by(services.c.id)
    if host:
        q = q.where(services.c.host == host)
    if binary:
        q = q.where(services.c.binary == INTERNAL_BINARY.get(binary, binary))
    return fetch_all(conn, q)


# Asked for every server deleted (and moved): compiled once. Built per call,
# the Core statement cost ~0.5 ms of the API's CPU a delete (docs/performance.md,
# round ten), several times the read itself.
_COMPUTE_SERVICE = PreparedRead(
    sa.select(services.c.forced_down, services.c.last_seen_up)
    .where(services.c.host == sa.bindparam("w_host"), services.c.binary == "cirrus-compute"))


def compute_is_up(conn: sa.Connection, host: str, down_time: float) -> bool:
    """Whether ``host``'s compute service is up (see :func:`is_up`)."""
    return any(is_up(s, down_time) for s in _COMPUTE_SERVICE.all(conn, w_host=host))


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


class HostResource(TypedDict):
    """One row of ``os-hosts/{host}``: a total, a usage or one project's share."""

    host: str
    project: str
    cpu: int
    memory_mb: int
    disk_gb: int


def compute_service(conn: sa.Connection, host: str) -> dict[str, Any]:
    """The compute service on ``host``; :class:`HostNotFound` (404) if none."""
    rows = list_services(conn, host, "cirrus-compute")
    if not rows:
        raise HostNotFound(host=host)
    return rows[0]


def host_resources(conn: sa.Connection, host: str) -> list[HostResource]:
    """Nova's view of a host: its node's total and used now, the flavors of its
    live instances summed (``(used_max)``), then each project's part of that."""
    node = conn.execute(sa.select(compute_nodes).where(compute_nodes.c.host == host)
                        .order_by(compute_nodes.c.id).limit(1)).mappings().first()
    if node is None:
        raise HostNotFound(host=host)
    rows = [HostResource(host=host, project="(total)", cpu=node["vcpus"],
                         memory_mb=node["memory_mb"], disk_gb=node["local_gb"]),
            HostResource(host=host, project="(used_now)", cpu=node["vcpus_used"],
                         memory_mb=node["memory_mb_used"], disk_gb=node["local_gb_used"])]
    used_max = HostResource(host=host, project="(used_max)", cpu=0, memory_mb=0, disk_gb=0)
    projects: dict[str, HostResource] = {}
    query = (sa.select(instances.c.project_id, instances.c.vcpus, instances.c.memory_mb,
                       instances.c.root_gb, instances.c.ephemeral_gb)
             .where(instances.c.host == host, instances.c.deleted.is_(False))
             .order_by(instances.c.id))
    for inst in conn.execute(query):
        share = projects.setdefault(inst.project_id, HostResource(
            host=host, project=inst.project_id, cpu=0, memory_mb=0, disk_gb=0))
        for total in (used_max, share):
            total["cpu"] += inst.vcpus
            total["memory_mb"] += inst.memory_mb
            total["disk_gb"] += inst.root_gb + inst.ephemeral_gb
    return [*rows, used_max, *projects.values()]
