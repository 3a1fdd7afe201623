"""Network quotas (Neutron's ``quotas``, ``quota_details``): the limits, the
usage they bound, and their changes.

A project's limit of a resource is its row in ``network_quotas`` if an admin
set one, else the cloud's default (``settings.quota_<resources>``; Neutron's
defaults for resources cirrus has no setting for). -1 is unlimited. Usage is
counted from the resources themselves; ports from their per-project counter
(migration 0008), the one the boot path reads.
"""
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from cirrus.config import Settings
from cirrus.db import pending
from cirrus.db.prepared import Prepared, statement_savepoint
from cirrus.network import exception as exc
from cirrus.network import ports as port_db
from cirrus.network import validators as v
from cirrus.network.models import (floatingips, network_quotas, networks, port_usages,
                                   routers, security_group_rules, security_groups, subnets)

MAX_LIMIT = 2 ** 31 - 1  # Neutron's DB_INTEGER_MAX_VALUE
# Resource → the setting holding its default; Neutron's default where cirrus
# has no such setting.
SETTINGS = {"network": "quota_networks", "subnet": "quota_subnets", "port": "quota_ports",
            "router": "quota_routers", "floatingip": "quota_floatingips",
            "security_group": "quota_security_groups",
            "security_group_rule": "quota_security_group_rules",
            "rbac_policy": "quota_rbac_policies", "subnetpool": "quota_subnetpools"}
NEUTRON_DEFAULTS = {"router": 10, "floatingip": 50, "rbac_policy": 10, "subnetpool": -1}
TABLES = {"network": networks, "subnet": subnets, "security_group": security_groups,
          "security_group_rule": security_group_rules, "router": routers,
          "floatingip": floatingips}
# Options of an update (``quota-check-limit``): ``force`` skips the usage check.
OPTIONS = ("force", "check_limit")

_OVERRIDE = sa.select(network_quotas.c.limit).where(
    network_quotas.c.project_id == sa.bindparam("w_project"),
    network_quotas.c.resource == sa.bindparam("w_resource"))


def _own_port_limit(project: Any) -> Any:
    """SQL: the project's own port limit (NULL: none set)."""
    return sa.select(network_quotas.c.limit).where(
        network_quotas.c.project_id == project, network_quotas.c.resource == "port"
    ).scalar_subquery()


def port_use_columns(project: Any) -> list[Any]:
    """SQL: the project's own port limit (``own_limit``, NULL: the default)
    and its committed ports (``ports``, 0 for none), read without a lock:
    what :func:`port_limit_and_use` reads, as columns of any statement (a
    server create's carries them on PostgreSQL). ``project``: its bind."""
    used = sa.select(sa.func.coalesce(sa.func.max(port_usages.c.ports), 0)).where(
        port_usages.c.project_id == project)
    return [_own_port_limit(project).label("own_limit"), used.scalar_subquery().label("ports")]


# Built once: every server create reads the project's port limit and use, in
# one statement (its own limit, NULL for none; its port counter, 0 for none).
_OWN_PORT_LIMIT = _own_port_limit(sa.bindparam("w_project"))
_PORT_LIMIT_AND_USE = Prepared(sa.select(*port_use_columns(sa.bindparam("w_project"))))
# PostgreSQL: the same, with the project's port counter row locked (made if it
# has none) by a no-op upsert; its count is the committed ports, without this
# transaction's (the counter changes at COMMIT, migration 0032).
def _lock_counter(insert: Any, name: str) -> Any:
    """The CTE ``name``: ``insert`` of the project's counter row made a no-op
    upsert, which locks the row and returns its ``ports``."""
    return insert.on_conflict_do_update(
        index_elements=[port_usages.c.project_id], set_={"ports": port_usages.c.ports}
    ).returning(port_usages.c.ports).cte(name)


_LOCKED_PORTS = _lock_counter(postgresql.insert(port_usages).values(
    project_id=sa.bindparam("w_project")), "locked_ports")
_PORT_LIMIT_AND_LOCKED_USE = Prepared(sa.select(_OWN_PORT_LIMIT, _LOCKED_PORTS.c.ports))


def defaults(settings: Settings) -> dict[str, int]:
    """The cloud's default limits."""
    return {res: int(getattr(settings, name, NEUTRON_DEFAULTS.get(res, -1)))
            for res, name in SETTINGS.items()}


def limits(conn: sa.Connection, settings: Settings, project_id: str) -> dict[str, int]:
    """The project's limits: defaults, overridden by what an admin set."""
    out = defaults(settings)
    for row in conn.execute(sa.select(network_quotas.c.resource, network_quotas.c.limit).where(
            network_quotas.c.project_id == project_id)):
        if row.resource in out:
            out[row.resource] = row.limit
    return out


def limit_of(conn: sa.Connection, settings: Settings, project_id: str, resource: str) -> int:
    """The project's limit of one resource (one keyed read)."""
    found = conn.execute(_OVERRIDE, {"w_project": project_id, "w_resource": resource}).first()
    return int(found[0]) if found is not None else defaults(settings)[resource]


def port_limit_and_use(conn: sa.Connection, settings: Settings,
                       project_id: str) -> tuple[int, int]:
    """The project's port limit and how many ports it has, in one read."""
    return _limit_and_use(settings, _PORT_LIMIT_AND_USE.execute(conn, w_project=project_id))


def port_limit_and_locked_use(conn: sa.Connection, settings: Settings,
                              project_id: str) -> tuple[int, int]:
    """PostgreSQL: :func:`port_limit_and_use`, the project's port counter row
    locked until this transaction ends, so no other port of the project can
    be committed before it. Take it as the transaction's last statement."""
    result = _PORT_LIMIT_AND_LOCKED_USE.execute(conn, w_project=project_id)
    pending.hot_row_taken(conn)  # a group commit ends its transaction here
    return _limit_and_use(settings, result)


def ports_over_limit(conn: sa.Connection, settings: Settings, project_id: str,
                     added: int) -> bool:
    """Whether the project's ports, with the ``added`` this transaction
    created, are over its limit. The allocation's last statement, on either
    database: PostgreSQL's counter changes at COMMIT (migration 0032), so the
    committed ports are read with the counter row locked and ``added`` put on
    top; SQLite's counter holds this transaction's ports already, and its one
    write lock orders the allocations anyway."""
    if conn.dialect.name == "postgresql":
        limit, used = port_limit_and_locked_use(conn, settings, project_id)
        used += added
    else:
        limit, used = port_limit_and_use(conn, settings, project_id)
    return 0 <= limit < used


def locked_port_room(source: Any) -> Any:
    """PostgreSQL: a CTE ``port_room`` of the project's own port limit
    (``own_limit``, NULL: the default) and its committed ports (``ports``),
    the counter row locked to the transaction's end (made if it has none) —
    taken only once ``source`` (a CTE) yields a row. So a statement that
    inserts first takes the row after its inserts and any wait they had on
    a racer's row, as the allocation's transaction takes it last: holding
    the counter while waiting on a row whose transaction updates the counter
    at its COMMIT would be a deadlock (``allocate_at_once``)."""
    locked = _lock_counter(postgresql.insert(port_usages).from_select(
        ["project_id"], sa.select(sa.bindparam("w_project", type_=sa.String)).select_from(
            source).limit(1)), "locked_after")
    return sa.select(_OWN_PORT_LIMIT.label("own_limit"), locked.c.ports).cte("port_room")


def ports_fit(room: Any, added: Any, default_limit: Any) -> Any:
    """SQL: whether ``added`` (a number or a bind) more ports fit in ``room``
    (:func:`locked_port_room`, or columns of :func:`port_use_columns`),
    ``default_limit`` the limit where the project has none of its own; as
    :func:`over_limit` decides."""
    limit = sa.func.coalesce(room.c.own_limit, default_limit)
    return sa.or_(limit < 0, room.c.ports + added <= limit)


def over_limit(settings: Settings, own: Any, in_use: int, added: int) -> bool:
    """Whether ``added`` ports more than ``in_use`` exceed the project's limit
    (its ``own``, None for the default)."""
    return 0 <= limit_of_own(settings, own) < in_use + added


def locked_use_with(column: Any) -> Prepared[Any]:
    """PostgreSQL: :func:`port_limit_and_locked_use`'s statement with
    ``column`` a third value (a scalar subquery of a data-modifying CTE: a
    write that the allocation's last statement carries instead of a statement
    of its own). For :func:`ports_over_limit_with`; built once."""
    return Prepared(sa.select(_OWN_PORT_LIMIT, _LOCKED_PORTS.c.ports, column))


def ports_over_limit_with(conn: sa.Connection, settings: Settings, project_id: str, added: int,
                          statement: Prepared[Any], **params: Any) -> tuple[bool, Any]:
    """PostgreSQL: :func:`ports_over_limit` by ``statement``
    (:func:`locked_use_with`, run with ``params``), and its third value."""
    result = statement.execute(conn, **{**params, "w_project": project_id})
    pending.hot_row_taken(conn)  # a group commit ends its transaction here
    limit, in_use, value = result.fetchone()
    return over_limit(settings, limit, int(in_use), added), value


def _limit_and_use(settings: Settings, result: Any) -> tuple[int, int]:
    limit, in_use = result.fetchone()
    return limit_of_own(settings, limit), int(in_use)


def limit_of_own(settings: Settings, own: Any) -> int:
    """The project's port limit: its ``own`` (None: none set) or the default."""
    return int(own) if own is not None else int(settings.quota_ports)


def used(conn: sa.Connection, resource: str, project_id: str) -> int:
    """How many of ``resource`` the project has."""
    if resource == "port":
        return port_db.ports_of_project(conn, project_id)
    table = TABLES.get(resource)
    if table is None:
        return 0
    return int(conn.execute(sa.select(sa.func.count()).select_from(table).where(
        table.c.project_id == project_id)).scalar_one())


def check(conn: sa.Connection, settings: Settings, resource: str, project_id: str,
          adding: int = 1) -> None:
    """409 OverQuota unless the project may have ``adding`` more ``resource``."""
    limit = limit_of(conn, settings, project_id, resource)
    if limit >= 0 and used(conn, resource, project_id) + adding > limit:
        raise exc.OverQuota(resource=resource)


def details(conn: sa.Connection, settings: Settings, project_id: str) -> dict[str, Any]:
    """``quota_details``: each resource's limit, use and (always 0) reservations."""
    return {res: {"limit": limit, "used": used(conn, res, project_id), "reserved": 0}
            for res, limit in limits(conn, settings, project_id).items()}


def all_quotas(conn: sa.Connection, settings: Settings) -> list[dict[str, Any]]:
    """Every project with a limit of its own, with all its limits (``GET /quotas``)."""
    projects = conn.execute(sa.select(network_quotas.c.project_id).distinct()
                            .order_by(network_quotas.c.project_id)).scalars().all()
    return [{**limits(conn, settings, p), "project_id": p, "tenant_id": p} for p in projects]


def parse_update(body: Any) -> tuple[dict[str, int], bool]:
    """``{"quota": {resource: limit, "force": bool, "check_limit": bool}}`` →
    the limits and whether to skip the usage check; 400 on anything else.
    Limits may be numbers or their decimal strings (Neutron converts)."""
    if not isinstance(body, dict) or not isinstance(body.get("quota"), dict):
        raise exc.BadRequest(reason="Resource body required: 'quota' must be an object")
    out: dict[str, int] = {}
    force = False
    for key, value in body["quota"].items():
        if key in OPTIONS:
            if v.boolean(value):
                raise exc.BadRequest(reason=f"Invalid input for {key}. Reason: "
                                            f"{v.boolean(value)}.")
            force = force or (key == "force" and value)
            continue
        if key not in SETTINGS:
            raise exc.BadRequest(reason=f"Unrecognized attribute(s) '{v.shown(key)}'")
        limit = _as_limit(value)
        if limit is None:
            raise exc.BadRequest(reason=f"Invalid input for {key}. Reason: '{v.shown(value)}' "
                                        f"is not an integer in range -1 through {MAX_LIMIT}.")
        out[key] = limit
    return out, force


def _as_limit(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) <= 12:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and -1 <= value <= MAX_LIMIT:
        return value
    return None


def update(conn: sa.Connection, settings: Settings, project_id: str, values: dict[str, int],
           force: bool) -> dict[str, int]:
    """Set the project's limits; unless ``force``, none below its use (400).
    The project's limits after."""
    if not force:
        for resource, limit in values.items():
            in_use = used(conn, resource, project_id)
            if limit != -1 and in_use > limit:
                raise exc.BadRequest(reason=f"Quota limit {limit} for {resource} must be "
                                            f"greater than or equal to already used {in_use}")
    for resource, limit in values.items():
        _set_limit(conn, project_id, resource, limit)
    return limits(conn, settings, project_id)


def _set_limit(conn: sa.Connection, project_id: str, resource: str, limit: int) -> None:
    """Update the project's row of ``resource``, or insert it; a concurrent
    insert of the same row (the key clash) is followed by the update."""
    key = (network_quotas.c.project_id == project_id, network_quotas.c.resource == resource)
    if conn.execute(network_quotas.update().where(*key).values(limit=limit)).rowcount:
        return
    try:
        with statement_savepoint(conn):
            conn.execute(network_quotas.insert().values(project_id=project_id,
                                                        resource=resource, limit=limit))
    except sa.exc.IntegrityError:
        conn.execute(network_quotas.update().where(*key).values(limit=limit))


def reset(conn: sa.Connection, project_id: str) -> None:
    """Back to the defaults: the project's own limits forgotten."""
    conn.execute(network_quotas.delete().where(network_quotas.c.project_id == project_id))
