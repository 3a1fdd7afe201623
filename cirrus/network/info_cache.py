"""An instance's network info cache: built from its ports, stored, read.

Nova keeps the VIF model of an instance in ``instance_info_caches``
(``get_instance_nw_info``); the network API reads and writes it here, and
a fresh allocation stores it from what its transaction wrote
(:func:`fresh_network_info`) instead of reading it back.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cirrus.compute.models import instance_info_caches
from cirrus.db.base import utcnow
from cirrus.db.engine import fetch_all
from cirrus.db.prepared import Prepared
from cirrus.db.rows import PreparedRead
from cirrus.network import ports as port_db
from cirrus.network import quotas
from cirrus.network.model import NetworkInfo, build_vif
from cirrus.network.models import networks
from cirrus.network.models import ports as port_table


_CACHE_OF = PreparedRead(sa.select(instance_info_caches.c.network_info).where(
    instance_info_caches.c.instance_uuid == sa.bindparam("w_uuid")))
_STORE_CACHE = Prepared(instance_info_caches.update().where(
    instance_info_caches.c.instance_uuid == sa.bindparam("w_uuid")).values(
    network_info=sa.bindparam("v_info"), updated_at=sa.bindparam("v_now")))
# The info cache of an instance whose ports are exactly the ``w_count`` ports
# the caller wrote in this transaction (device_id = the instance, of its
# project): otherwise no row changes and the caller builds the model from
# what is stored.
_STORE_FRESH_CACHE = Prepared(instance_info_caches.update().where(
    instance_info_caches.c.instance_uuid == sa.bindparam("w_uuid"),
    sa.select(sa.func.count()).select_from(port_table).where(
        port_table.c.device_id == sa.bindparam("w_uuid"),
        port_db.owned_by(port_table.c.project_id, sa.bindparam("w_project"))).scalar_subquery()
    == sa.bindparam("w_count")).values(
    network_info=sa.bindparam("v_info"), updated_at=sa.bindparam("v_now")))


# PostgreSQL: _STORE_FRESH_CACHE carried by the allocation's last statement,
# the port quota's recheck (quotas.locked_use_with); its third value is 1 if
# the cache was stored.
STORE_FRESH_CACHE_LOCKING_PORTS = quotas.locked_use_with(
    sa.select(sa.func.count()).select_from(_STORE_FRESH_CACHE.stmt.returning(
        instance_info_caches.c.instance_uuid).cte("stored")).scalar_subquery())


def cache_of(conn: sa.Connection, uuid: str) -> list[dict[str, Any]]:
    """The instance's stored network info (VIF dicts; empty if none)."""
    row = _CACHE_OF.first(conn, w_uuid=uuid)
    return list((row or {}).get("network_info") or [])


def fresh_network_info(device_ports: list[dict[str, Any]],
                       fixed: dict[str, list[dict[str, str]]], nets: dict[str, dict[str, Any]],
                       subnets: dict[str, list[dict[str, Any]]]) -> NetworkInfo:
    """``build_network_info_model`` for ports this transaction just created,
    from what it wrote instead of reading it back — if they are the
    instance's only ports, which storing it checks (``_STORE_FRESH_CACHE``).

    Equal to the general build then: the ports in creation (``seq``) order,
    which is request order; their fixed IPs in allocation order; none of them
    in the old cache (new ids) nor preserved (cirrus created them)."""
    subnet_rows = {s["id"]: s for rows in subnets.values() for s in rows}
    return NetworkInfo(build_vif(port, fixed[port["id"]], nets[port["network_id"]], subnet_rows,
                                 False) for port in device_ports)


def fresh_cache_params(instance: dict[str, Any], info: NetworkInfo) -> dict[str, Any]:
    return {"w_uuid": instance["uuid"], "w_project": instance["project_id"],
            "w_count": len(info), "v_info": list(info), "v_now": utcnow()}


def store_fresh_network_info(conn: sa.Connection, instance: dict[str, Any],
                             info: NetworkInfo) -> NetworkInfo | None:
    """Store :func:`fresh_network_info`'s ``info``; None (nothing stored) if
    the instance has other ports too."""
    stored = _STORE_FRESH_CACHE.execute(conn, **fresh_cache_params(instance, info))
    return info if stored.rowcount == 1 else None


def store(conn: sa.Connection, uuid: str, info: list[Any]) -> None:
    """Replace the instance's stored network info."""
    _STORE_CACHE.execute(conn, w_uuid=uuid, v_info=info, v_now=utcnow())


def build_network_info_model(conn: sa.Connection, uuid: str, project_id: str,
                             preserve: set[str],
                             known_networks: dict[str, dict[str, Any]] | None = None,
                             known_subnets: dict[str, list[dict[str, Any]]] | None = None
                             ) -> NetworkInfo:
    """The instance ``uuid`` of ``project_id`` (only that project's ports are
    its ports). ``known_*``: network rows by id and subnet rows by network
    id that the caller read in this transaction already; the rest is read
    here."""
    old = {vif["id"]: vif for vif in cache_of(conn, uuid)}
    device_ports = port_db.ports_of_device(conn, uuid, project_id)
    fixed = port_db.fixed_ips_of(conn, [p["id"] for p in device_ports])
    net_rows = dict(known_networks or {})
    missing = {p["network_id"] for p in device_ports} - set(net_rows)
    if missing:
        net_rows.update((r["id"], r) for r in fetch_all(conn, sa.select(networks).where(
            networks.c.id.in_(missing))))
    subnet_rows = {s["id"]: s for rows in (known_subnets or {}).values() for s in rows}
    missing = {ip["subnet_id"] for ips in fixed.values() for ip in ips} - set(subnet_rows)
    subnet_rows.update(port_db.subnets_by_id(conn, list(missing)))
    info = NetworkInfo()
    for port in device_ports:
        keep = port["id"] in preserve or old.get(port["id"], {}).get("preserve_on_delete", False)
        info.append(build_vif(port, fixed[port["id"]], net_rows[port["network_id"]],
                              subnet_rows, keep))
    store(conn, uuid, list(info))
    return info
