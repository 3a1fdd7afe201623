"""Host aggregates as the API changes them (Nova's ``AggregateAPI``:
``create_aggregate``, ``update_aggregate``, ``update_aggregate_metadata``,
``delete_aggregate``, ``add_host_to_aggregate``, ``remove_host_from_aggregate``),
and a deleted compute service's host leaving them.

Each function is one unit of work on a connection: it applies the zone rules
of ``aggregates.py`` and, in the same transaction, writes the hosts' zones
into their compute service rows (``aggregates.sync_zones``).
"""
from __future__ import annotations

import datetime as dt
import uuid as uuidlib

import sqlalchemy as sa

from cirrus.compute import exception as exc
from cirrus.compute.aggregates import (AZ_KEY, COMPUTE, Aggregate, check_zone_change,
                                       check_zone_move, get_aggregate, sync_zones)
from cirrus.compute.models import aggregate_hosts, aggregate_metadata, aggregates
from cirrus.db.base import utcnow
from cirrus.service_models import services


# -- helpers ---------------------------------------------------------------------
def _name_free(conn: sa.Connection, name: str, aggregate_id: int | None = None) -> None:
    query = sa.select(aggregates.c.id).where(aggregates.c.name == name)
    if aggregate_id is not None:
        query = query.where(aggregates.c.id != aggregate_id)
    if conn.execute(query).first() is not None:
        raise exc.AggregateNameExists(aggregate_name=name)


def _touch(conn: sa.Connection, aggregate_id: int, now: dt.datetime) -> None:
    conn.execute(aggregates.update().where(aggregates.c.id == aggregate_id).values(updated_at=now))


def _apply_metadata(conn: sa.Connection, aggregate_id: int, metadata: dict[str, str | None],
                    now: dt.datetime) -> None:
    """Set each key to its value; a None value removes the key."""
    md = aggregate_metadata
    for key, value in metadata.items():
        conn.execute(md.delete().where(md.c.aggregate_id == aggregate_id, md.c.key == key))
        if value is not None:
            conn.execute(md.insert().values(aggregate_id=aggregate_id, key=key, value=value,
                                            created_at=now))


def create_aggregate(conn: sa.Connection, name: str, zone: str | None) -> Aggregate:
    """A new, empty aggregate; :class:`AggregateNameExists` (409) on a taken name."""
    _name_free(conn, name)
    now = utcnow()
    try:  # a create racing this one for the name: the unique index decides
        with conn.begin_nested():
            key = conn.execute(aggregates.insert().values(
                uuid=str(uuidlib.uuid4()), name=name, created_at=now)).inserted_primary_key
    except sa.exc.IntegrityError:
        raise exc.AggregateNameExists(aggregate_name=name) from None
    assert key is not None
    new_id = int(key[0])
    if zone:
        _apply_metadata(conn, new_id, {AZ_KEY: zone}, now)
    return get_aggregate(conn, new_id)


def update_aggregate(conn: sa.Connection, aggregate_id: int, name: str | None,
                     zone: dict[str, str | None], default_zone: str) -> Aggregate:
    """Rename and/or re-zone (``zone`` is ``{}`` or ``{"availability_zone": …}``)."""
    agg = get_aggregate(conn, aggregate_id)
    now = utcnow()
    if name is not None:
        _name_free(conn, name, aggregate_id)
        conn.execute(aggregates.update().where(aggregates.c.id == aggregate_id)
                     .values(name=name, updated_at=now))
    check_zone_change(conn, agg, zone, agg.hosts, exc.InvalidAggregateActionUpdate,
                      check_instances=True)
    if zone:
        _apply_metadata(conn, aggregate_id, zone, now)
        _touch(conn, aggregate_id, now)
        sync_zones(conn, agg.hosts, default_zone)
    return get_aggregate(conn, aggregate_id)


def set_metadata(conn: sa.Connection, aggregate_id: int, metadata: dict[str, str | None],
                 default_zone: str) -> Aggregate:
    """Nova's ``update_aggregate_metadata``: keys set, None values removed."""
    agg = get_aggregate(conn, aggregate_id)
    check_zone_change(conn, agg, metadata, agg.hosts, exc.InvalidAggregateActionUpdateMeta,
                      check_instances=True)
    now = utcnow()
    _apply_metadata(conn, aggregate_id, metadata, now)
    _touch(conn, aggregate_id, now)
    sync_zones(conn, agg.hosts, default_zone)
    return get_aggregate(conn, aggregate_id)


def delete_aggregate(conn: sa.Connection, aggregate_id: int) -> None:
    """Only an empty aggregate goes (:class:`InvalidAggregateActionDelete`, 400)."""
    agg = get_aggregate(conn, aggregate_id)
    if agg.hosts:
        raise exc.InvalidAggregateActionDelete(aggregate_id=aggregate_id,
                                               reason="Host aggregate is not empty")
    md = aggregate_metadata
    conn.execute(md.delete().where(md.c.aggregate_id == aggregate_id))
    conn.execute(aggregates.delete().where(aggregates.c.id == aggregate_id))


def _compute_host(conn: sa.Connection, host: str) -> bool:
    # Compared in Python too: a case-insensitive collation must not match.
    rows = conn.execute(sa.select(services.c.host).where(
        services.c.host == host, services.c.binary == COMPUTE)).scalars().all()
    return host in rows


def add_host(conn: sa.Connection, aggregate_id: int, host: str, default_zone: str) -> Aggregate:
    """Put a compute host in the aggregate: 404 for an unknown host or
    aggregate, 409 when it is there already or its zone would conflict."""
    if not _compute_host(conn, host):
        raise exc.ComputeHostMissing(host=host)
    agg = get_aggregate(conn, aggregate_id)
    if host in agg.hosts:
        raise exc.AggregateHostExists(aggregate_id=aggregate_id, host=host)
    check_zone_change(conn, agg, dict(agg.metadata), [host], exc.InvalidAggregateActionAdd)
    check_zone_move(conn, agg, host, adding=True)
    now = utcnow()
    try:
        with conn.begin_nested():
            conn.execute(aggregate_hosts.insert().values(aggregate_id=aggregate_id, host=host,
                                                         created_at=now))
    except sa.exc.IntegrityError:
        raise exc.AggregateHostExists(aggregate_id=aggregate_id, host=host) from None
    _touch(conn, aggregate_id, now)
    sync_zones(conn, [host], default_zone)
    return get_aggregate(conn, aggregate_id)


def remove_host(conn: sa.Connection, aggregate_id: int, host: str, default_zone: str) -> Aggregate:
    """Take a host out: 404 unless it is in the aggregate, 409 when its
    instances would change zone."""
    try:
        agg = get_aggregate(conn, aggregate_id)
    except exc.AggregateNotFound:
        raise exc.AggregateHostRemoveFailed(host=host, id=aggregate_id) from None
    if host not in agg.hosts:
        raise exc.AggregateHostRemoveFailed(host=host, id=aggregate_id)
    check_zone_move(conn, agg, host, adding=False)
    conn.execute(aggregate_hosts.delete().where(aggregate_hosts.c.aggregate_id == aggregate_id,
                                                aggregate_hosts.c.host == host))
    _touch(conn, aggregate_id, utcnow())
    sync_zones(conn, [host], default_zone)
    return get_aggregate(conn, aggregate_id)


def forget_host(conn: sa.Connection, host: str) -> None:
    """A compute service deleted: its host leaves every aggregate (as Nova's
    service delete does), so that a new service there starts in no zone."""
    now = utcnow()
    ids = conn.execute(sa.select(aggregate_hosts.c.aggregate_id)
                       .where(aggregate_hosts.c.host == host)).scalars().all()
    conn.execute(aggregate_hosts.delete().where(aggregate_hosts.c.host == host))
    for aggregate_id in ids:
        _touch(conn, aggregate_id, now)
