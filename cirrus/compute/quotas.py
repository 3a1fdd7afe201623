"""Counted quotas: usage is counted from the records, limits per project.

Counting (instead of reserving) means nothing to leak: an instance that is
deleted stops counting. The database keeps the count: triggers on
``instances`` change the project's ``project_usages`` row (migration 0006),
so reading the usage is one row however many servers the project has, and a
create that rolls back takes its count with it. The check runs inside the
transaction that creates the records, before the insert and again after it,
so concurrent creates cannot both pass:

- SQLite has one writer: nothing changes between the first read and the
  commit, so the check after the insert adds what was inserted to that read.
- PostgreSQL fires the counter's triggers at COMMIT (migration 0032), so no
  create holds the row across its round trips. The check after the insert
  locks the row as the create's last statement (:meth:`InstanceQuota.recheck`)
  and adds what was inserted to what it holds then: every other create or
  delete of the project commits either before that read (and is in it) or
  after this transaction (and waits for the row).
- PostgreSQL, a create of a fixed count: the lock, the check and the inserts
  are one statement in autocommit (:func:`locked_gate`,
  ``provision.create_in_one_statement``): the row is held for that statement
  only.
"""
from __future__ import annotations

from typing import Any, Callable

import sqlalchemy as sa

from sqlalchemy.dialects import postgresql

from cirrus.compute.exception import TooManyInstances
from cirrus.compute.models import (instance_groups, key_pairs, project_usages, quota_classes,
                                   quota_limits)
from cirrus.db import pending
from cirrus.db.base import utcnow
from cirrus.db.prepared import Cursor, Prepared

INSTANCE_RESOURCES = ("instances", "cores", "ram")
ALL_RESOURCES = ("instances", "cores", "ram", "key_pairs", "server_groups",
                 "server_group_members")
# Quotas cirrus shows but does not enforce, at these values unless a quota
# class says otherwise (Nova's nova-network ones are unlimited).
UNENFORCED = {"metadata_items": 128, "injected_files": 5, "injected_file_content_bytes": 10240,
              "injected_file_path_bytes": 255, "fixed_ips": -1, "floating_ips": -1,
              "security_groups": -1, "security_group_rules": -1}
DEFAULT_CLASS = "default"  # the quota class whose limits are every project's defaults


# Built once: quota reads (limits, usage) come with every create.
_LIMITS = Prepared(sa.select(quota_limits.c.resource, quota_limits.c.hard_limit).where(
    quota_limits.c.project_id == sa.bindparam("w_project")))
_CLASS_LIMITS = Prepared(sa.select(quota_classes.c.resource, quota_classes.c.hard_limit).where(
    quota_classes.c.class_name == sa.bindparam("w_class")))


def _own_limit(resource: str, project: str = "w_project") -> sa.ColumnElement[Any]:
    """The project's own limit of ``resource`` (the project bound as
    ``project``), else the default class's (NULL: neither)."""
    own = sa.select(quota_limits.c.hard_limit).where(
        quota_limits.c.project_id == sa.bindparam(project),
        quota_limits.c.resource == resource).scalar_subquery()
    default = sa.select(quota_classes.c.hard_limit).where(
        quota_classes.c.class_name == DEFAULT_CLASS,
        quota_classes.c.resource == resource).scalar_subquery()
    return sa.func.coalesce(own, default)


def _usage_of_project(*extra: Any) -> Prepared[Any]:
    """The project's live instances, vCPUs and RAM (then ``extra`` columns):
    its usage row, read through an aggregate so that a project without a row
    still gives one row, of zeros."""
    return Prepared(sa.select(
        *(sa.func.coalesce(sa.func.max(project_usages.c[r]), 0) for r in INSTANCE_RESOURCES),
        *extra).where(project_usages.c.project_id == sa.bindparam("w_project")))


_INSTANCE_USAGE = _usage_of_project()
# A create's usage and the project's own limits of the instance resources (NULL
# where it has none) in one statement.
_INSTANCE_QUOTA = _usage_of_project(*(_own_limit(r) for r in INSTANCE_RESOURCES))


def class_limits(conn: sa.Connection, settings: Any, class_name: str) -> dict[str, int]:
    """Every quota of the class ``class_name``: the configured ones where the
    class sets none (Nova's ``get_class_quotas``; -1 is unlimited)."""
    out = {**{r: int(getattr(settings, f"quota_{r}")) for r in ALL_RESOURCES}, **UNENFORCED}
    for resource, hard_limit in _CLASS_LIMITS.execute(conn, w_class=class_name).fetchall():
        if resource in out:
            out[resource] = hard_limit
    return out


def limits(conn: sa.Connection, settings: Any, project_id: str) -> dict[str, int]:
    """Every quota of ``project_id``: its own limits, else the default class's
    (-1 is unlimited)."""
    out = class_limits(conn, settings, DEFAULT_CLASS)
    for resource, hard_limit in _LIMITS.execute(conn, w_project=project_id).fetchall():
        out[resource] = hard_limit
    return out


def instance_usage(conn: sa.Connection, project_id: str) -> dict[str, int]:
    row = _INSTANCE_USAGE.execute(conn, w_project=project_id).fetchone()
    return {"instances": int(row[0]), "cores": int(row[1]), "ram": int(row[2])}


# PostgreSQL: the project's usage row locked (made if it has none) and read:
# the latest committed usage, without this transaction's own instances (its
# triggers fire at COMMIT). The no-op SET is what makes the upsert lock the row.
_LOCK_USAGE = Prepared(postgresql.insert(project_usages).values(
    project_id=sa.bindparam("v_project")).on_conflict_do_update(
    index_elements=[project_usages.c.project_id],
    set_={"instances": project_usages.c.instances}).returning(
    *(project_usages.c[r] for r in INSTANCE_RESOURCES)))


def locked_gate(extra: list[Any] | None = None,
                extra_fits: Callable[[sa.CTE], Any] | None = None) -> tuple[sa.CTE, sa.CTE]:
    """PostgreSQL, for a create of a fixed count as one statement: the CTE
    ``quota`` (the project's usage row locked as by :data:`_LOCK_USAGE`, the
    committed usage and the limits: the project's own, else the default
    class's, else the settings' bound as ``q_default_<resource>``) and the
    CTE ``gate``, one row if ``q_want_<resource>`` more (count × the
    flavor's amount) fit, as :meth:`InstanceQuota.allowed` of the count says
    it, else none. Parameters: ``v_project`` and those above. The row stays
    locked for the statement only (in autocommit, it is its transaction).
    ``extra``: more columns of ``quota`` (after those), ``extra_fits`` a
    condition on them the gate also needs (the port quota's first look)."""
    locked = _LOCK_USAGE.stmt.cte("locked")
    quota = sa.select(
        *(locked.c[r] for r in INSTANCE_RESOURCES),
        *(sa.func.coalesce(_own_limit(r, "v_project"),
                           sa.bindparam(f"q_default_{r}", type_=sa.Integer)).label(f"limit_{r}")
          for r in INSTANCE_RESOURCES), *(extra or ())).cte("quota")
    zero = sa.literal_column("0", sa.Integer)
    # As allowed(): an unlimited resource, or one the flavor takes none of
    # (even if the project is over its limit already), does not count.
    fits = [sa.or_(quota.c[f"limit_{r}"] < zero,
                   sa.bindparam(f"q_want_{r}", type_=sa.Integer) == zero,
                   quota.c[r] + sa.bindparam(f"q_want_{r}", type_=sa.Integer)
                   <= quota.c[f"limit_{r}"])
            for r in INSTANCE_RESOURCES]
    if extra_fits is not None:
        fits.append(extra_fits(quota))
    return quota, sa.select(sa.literal_column("1").label("fits")).select_from(quota).where(
        *fits).cte("gate")


def gate_params(settings: Any, project_id: str, flavor: dict[str, Any],
                count: int) -> dict[str, Any]:
    """The parameters of :func:`locked_gate` for ``count`` servers of ``flavor``."""
    per = {"instances": 1, "cores": flavor["vcpus"], "ram": flavor["memory_mb"]}
    return {"v_project": project_id,
            **{f"q_default_{r}": int(getattr(settings, f"quota_{r}")) for r in INSTANCE_RESOURCES},
            **{f"q_want_{r}": per[r] * count for r in INSTANCE_RESOURCES}}


def locked_usage(conn: sa.Connection, project_id: str) -> dict[str, int]:
    """PostgreSQL: the project's committed usage, its row locked until this
    transaction ends. Take it last, just before COMMIT: every create and
    delete of the project waits for it."""
    return locked_usage_of(conn, send_lock_usage(conn, project_id))


def send_lock_usage(conn: sa.Connection, project_id: str) -> Cursor:
    """:func:`locked_usage`'s statement, sent (in a pipeline, with others);
    its result read by :func:`locked_usage_of`."""
    return _LOCK_USAGE.execute(conn, v_project=project_id)


def locked_usage_of(conn: sa.Connection, cursor: Cursor) -> dict[str, int]:
    """The usage :func:`send_lock_usage` locked and read."""
    row = cursor.fetchone()
    pending.hot_row_taken(conn)  # a group commit ends its transaction here
    return {r: int(v) for r, v in zip(INSTANCE_RESOURCES, row)}


class InstanceQuota:
    """One create's quota check, in the transaction that inserts the records.

    Reads the project's usage and limits once; :meth:`allowed` says how many
    instances fit, :meth:`recheck` (after the insert) whether they still do."""

    def __init__(self, conn: sa.Connection | None, settings: Any, project_id: str,
                 flavor: dict[str, Any], sent: Cursor | None = None,
                 row: Any = None) -> None:
        """``sent``: the read of :meth:`send`, if it went ahead in a pipeline;
        ``row``: that read's row (or :func:`locked_gate`'s ``quota``), read
        already (``conn`` then unused)."""
        self.settings = settings
        self.project_id = project_id
        if row is None:
            assert conn is not None
            row = (sent or self.send(conn, project_id)).fetchone()
        self.used = {"instances": int(row[0]), "cores": int(row[1]), "ram": int(row[2])}
        self.limits = {res: int(getattr(settings, f"quota_{res}")) if own is None else own
                       for res, own in zip(INSTANCE_RESOURCES, row[3:])}
        self.per = {"instances": 1, "cores": flavor["vcpus"], "ram": flavor["memory_mb"]}

    @staticmethod
    def send(conn: sa.Connection, project_id: str) -> Cursor:
        """The read of the project's usage and limits, sent (not yet read)."""
        return _INSTANCE_QUOTA.execute(conn, w_project=project_id)

    def allowed(self, min_count: int, max_count: int) -> int:
        """How many of ``max_count`` fit (≥ ``min_count``), else TooManyInstances (403)."""
        lim, used, per = self.limits, self.used, self.per
        fit = max_count
        for res in INSTANCE_RESOURCES:
            if lim[res] < 0 or per[res] == 0:
                continue
            fit = min(fit, max(0, (lim[res] - used[res]) // per[res]))
        if fit >= min_count:
            return fit
        overs = [r for r in INSTANCE_RESOURCES
                 if lim[r] >= 0 and used[r] + per[r] * min_count > lim[r]]
        first = overs[0]
        raise TooManyInstances(overs=", ".join(overs), req=per[first] * min_count,
                               used=used[first], allowed=lim[first])

    def recheck(self, conn: sa.Connection, added: int, locked: Cursor | None = None) -> None:
        """After inserting ``added`` instances: still within limits? Raises
        TooManyInstances if not. The usage then is the usage before (SQLite:
        the first read, nothing can have changed it; PostgreSQL: read again
        with the row locked, see :func:`locked_usage`, or ``locked``: that
        read sent already by :func:`send_lock_usage`) plus what was added.
        On PostgreSQL call it as the transaction's last statement."""
        if conn.dialect.name != "postgresql":
            before = self.used
        else:
            before = locked_usage_of(conn, locked or send_lock_usage(conn, self.project_id))
        for res in INSTANCE_RESOURCES:
            lim, want = self.limits[res], self.per[res] * added
            if 0 <= lim < before[res] + want:  # as allowed() says it, for the same request
                raise TooManyInstances(overs=res, req=want, used=before[res], allowed=lim)


def allowed_instances(conn: sa.Connection, settings: Any, project_id: str, flavor: dict[str, Any],
                      min_count: int, max_count: int) -> int:
    """How many of ``max_count`` fit (≥ ``min_count``), else TooManyInstances (403)."""
    return InstanceQuota(conn, settings, project_id, flavor).allowed(min_count, max_count)


def _check_within(lim: dict[str, int], used: dict[str, int]) -> None:
    for res in INSTANCE_RESOURCES:
        if lim[res] >= 0 and used[res] > lim[res]:
            raise TooManyInstances(overs=res, req=used[res], used=used[res], allowed=lim[res])


def recount(conn: sa.Connection, settings: Any, project_id: str) -> None:
    """The slow path :meth:`InstanceQuota.recheck` stands for: limits and usage
    read again (the usage holds this transaction's instances on SQLite, not on
    PostgreSQL, whose counter changes at COMMIT). TooManyInstances if over."""
    _check_within(limits(conn, settings, project_id), instance_usage(conn, project_id))


def usage(conn: sa.Connection, project_id: str, user_id: str | None) -> dict[str, int]:
    """In-use counts of every compute quota resource."""
    out = {r: 0 for r in ALL_RESOURCES}
    out.update(instance_usage(conn, project_id))
    out["server_groups"] = conn.execute(sa.select(sa.func.count()).select_from(instance_groups).where(
        instance_groups.c.project_id == project_id)).scalar_one()
    if user_id:
        out["key_pairs"] = conn.execute(sa.select(sa.func.count()).select_from(key_pairs).where(
            key_pairs.c.user_id == user_id)).scalar_one()
    return out


def _store(conn: sa.Connection, table: sa.Table, owner: dict[str, str],
           values: dict[str, int]) -> None:
    """Each of ``values`` (resource → limit) as ``table``'s row of ``owner``."""
    for resource, limit in values.items():
        match = [table.c[column] == value for column, value in owner.items()]
        conn.execute(table.delete().where(*match, table.c.resource == resource))
        conn.execute(table.insert().values(**owner, resource=resource, hard_limit=limit,
                                           created_at=utcnow()))


def set_limits(conn: sa.Connection, project_id: str, values: dict[str, int]) -> None:
    """Per-project overrides of the default limits."""
    _store(conn, quota_limits, {"project_id": project_id}, values)


def set_class_limits(conn: sa.Connection, class_name: str, values: dict[str, int]) -> None:
    """The limits of a quota class (of every project's defaults, for "default")."""
    _store(conn, quota_classes, {"class_name": class_name}, values)


def reset_limits(conn: sa.Connection, project_id: str) -> None:
    conn.execute(quota_limits.delete().where(quota_limits.c.project_id == project_id))
