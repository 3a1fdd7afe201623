"""Host aggregates (Nova's ``AggregateAPI``): groups of compute hosts with
metadata; the ``availability_zone`` key makes an aggregate a zone.

A host's zone is the zone of its aggregate, else ``default_availability_zone``.
It is kept, as derived data, in its compute service row
(``services.availability_zone``), written here in the transaction that changes
membership or metadata: every reader (the zone listings, the services listing,
the create's zone check, the scheduler's host cache) then sees one value. The
write moves the service row's ``updated_at``, which is how the scheduler's
host cache learns of the change (cirrus/scheduler/host_manager.py); the
aggregate's own ``updated_at`` tells it to read the hosts' metadata again.

This module holds the aggregate as it is read (by the API, the scheduler's
host cache and the services listing) and the zone rules; the operations the
API asks for, which apply those rules, are in ``aggregate_api.py``. Each
function is one unit of work on a connection; the rules and their errors
(and HTTP codes) are Nova's.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.models import aggregate_hosts, aggregate_metadata, aggregates, instances
from cirrus.db.base import utcnow
from cirrus.exception import CirrusException
from cirrus.service_models import services

AZ_KEY = "availability_zone"
COMPUTE = "cirrus-compute"


@dataclass
class Aggregate:
    """An aggregate with its hosts and metadata."""

    id: int
    uuid: str
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime | None
    hosts: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def availability_zone(self) -> str | None:
        return self.metadata.get(AZ_KEY)


# -- reading ---------------------------------------------------------------------
def _load(conn: sa.Connection, where: sa.ColumnElement[bool] | None = None) -> list[Aggregate]:
    query = sa.select(aggregates).order_by(aggregates.c.id)
    if where is not None:
        query = query.where(where)
    found = {r.id: Aggregate(r.id, r.uuid, r.name, r.created_at, r.updated_at)
             for r in conn.execute(query)}
    if not found:
        return []
    ids = list(found)
    for aggregate_id, host in conn.execute(
            sa.select(aggregate_hosts.c.aggregate_id, aggregate_hosts.c.host)
            .where(aggregate_hosts.c.aggregate_id.in_(ids)).order_by(aggregate_hosts.c.id)):
        found[aggregate_id].hosts.append(host)
    for aggregate_id, key, value in conn.execute(
            sa.select(aggregate_metadata.c.aggregate_id, aggregate_metadata.c.key,
                      aggregate_metadata.c.value)
            .where(aggregate_metadata.c.aggregate_id.in_(ids))):
        found[aggregate_id].metadata[key] = value
    return list(found.values())


def list_aggregates(conn: sa.Connection) -> list[Aggregate]:
    return _load(conn)


def get_aggregate(conn: sa.Connection, aggregate_id: int) -> Aggregate:
    """The aggregate; :class:`AggregateNotFound` (404) if there is none."""
    found = _load(conn, aggregates.c.id == aggregate_id)
    if not found:
        raise exc.AggregateNotFound(aggregate_id=aggregate_id)
    return found[0]


def aggregates_of_host(conn: sa.Connection, host: str) -> list[Aggregate]:
    member = sa.select(aggregate_hosts.c.aggregate_id).where(aggregate_hosts.c.host == host)
    return _load(conn, aggregates.c.id.in_(member))


def metadata_by_host(conn: sa.Connection) -> dict[str, dict[str, str]]:
    """Per host, per aggregate key, the values of every aggregate the host is
    in, joined by commas (the scheduler splits them as Nova's filters do)."""
    rows = conn.execute(sa.select(aggregate_hosts.c.host, aggregate_metadata.c.key,
                                  aggregate_metadata.c.value)
                        .join(aggregate_metadata,
                              aggregate_metadata.c.aggregate_id == aggregate_hosts.c.aggregate_id)
                        .order_by(aggregate_hosts.c.host, aggregate_metadata.c.id))
    out: dict[str, dict[str, str]] = {}
    for host, key, value in rows:
        keys = out.setdefault(host, {})
        keys[key] = f"{keys[key]},{value}" if key in keys else value
    return out


def changed_since(conn: sa.Connection, since: dt.datetime) -> bool:
    """Whether any aggregate was created or changed since ``since``."""
    stamp = sa.func.coalesce(aggregates.c.updated_at, aggregates.c.created_at)
    return conn.execute(sa.select(sa.func.count()).select_from(aggregates)
                        .where(stamp >= since)).scalar_one() > 0


def host_zones(conn: sa.Connection, hosts: Iterable[str]) -> dict[str, str]:
    """The zone of each of these hosts that an aggregate gives one."""
    rows = conn.execute(sa.select(aggregate_hosts.c.host, aggregate_metadata.c.value)
                        .join(aggregate_metadata,
                              aggregate_metadata.c.aggregate_id == aggregate_hosts.c.aggregate_id)
                        .where(aggregate_hosts.c.host.in_(list(hosts)),
                               aggregate_metadata.c.key == AZ_KEY))
    return {host: zone for host, zone in rows}


# -- the rules ---------------------------------------------------------------------
def _instances_on(conn: sa.Connection, hosts: list[str]) -> int:
    if not hosts:
        return 0
    return conn.execute(sa.select(sa.func.count()).select_from(instances).where(
        instances.c.host.in_(hosts), instances.c.deleted.is_(False))).scalar_one()


def check_zone_change(conn: sa.Connection, agg: Aggregate, metadata: dict[str, str | None],
                      hosts: list[str], error: type[CirrusException],
                      check_instances: bool = False) -> None:
    """Nova's ``is_safe_to_update_az``: a zone may not be empty, may not put a
    host in two zones, and (``check_instances``) may not move instances."""
    if AZ_KEY not in metadata:
        return
    zone = metadata[AZ_KEY]
    if not zone:
        raise error(aggregate_id=agg.id,
                    reason=f"Aggregate {agg.name} does not support empty named availability zone")
    conflicting = sorted({other.availability_zone or "" for other in
                          _others_with_zone(conn, agg.id, hosts)
                          if other.availability_zone != zone})
    if conflicting:
        raise error(aggregate_id=agg.id,
                    reason=f"One or more hosts already in availability zone(s) {conflicting}")
    if check_instances and agg.availability_zone != zone and _instances_on(conn, hosts):
        raise error(aggregate_id=agg.id,
                    reason="One or more hosts contain instances in this zone")


def _others_with_zone(conn: sa.Connection, aggregate_id: int, hosts: list[str]
                      ) -> list[Aggregate]:
    if not hosts:
        return []
    member = sa.select(aggregate_hosts.c.aggregate_id).where(aggregate_hosts.c.host.in_(hosts))
    others = sa.and_(aggregates.c.id.in_(member), aggregates.c.id != aggregate_id)
    return [a for a in _load(conn, others)
            if a.availability_zone is not None]


def check_zone_move(conn: sa.Connection, agg: Aggregate, host: str, adding: bool) -> None:
    """Nova's ``ensure_no_instances_need_to_move_az_when_host_added/removed``:
    a host with instances keeps its zone."""
    count = _instances_on(conn, [host])
    if not count or not agg.availability_zone:
        return
    others = {a.availability_zone for a in aggregates_of_host(conn, host)
              if a.id != agg.id and a.availability_zone}
    before = next(iter(others), None)
    old, new = (before, agg.availability_zone) if adding else (agg.availability_zone, before)
    if old != new:
        verb, error = (("added to", exc.InvalidAggregateActionAdd) if adding
                       else ("removed from", exc.InvalidAggregateActionRemoveHost))
        raise error(aggregate_id=agg.id, reason=(
            f"The host cannot be {verb} the aggregate as the availability zone of the host "
            f"would change from '{old}' to '{new}' but the host already has {count} "
            f"instance(s). Changing the AZ of an existing instance is not supported by this "
            f"action. Move the instances away from this host then try again. If you need to "
            f"move the instances between AZs then you can use shelve_offload and unshelve to "
            f"achieve this."))


# -- the zones written --------------------------------------------------------------
def sync_zones(conn: sa.Connection, hosts: Iterable[str], default_zone: str) -> None:
    """Write each host's zone into its compute service row (and so move the
    row's ``updated_at``, which the scheduler's host cache follows)."""
    hosts = sorted(set(hosts))
    if not hosts:
        return
    zones = host_zones(conn, hosts)
    now = utcnow()
    for host in hosts:
        conn.execute(services.update().where(services.c.host == host, services.c.binary == COMPUTE)
                     .values(availability_zone=zones.get(host, default_zone), updated_at=now))
