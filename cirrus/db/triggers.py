"""Row triggers for migrations, written once for SQLite and PostgreSQL.

The usage counters (migrations 0006 and 0008) are kept by ``AFTER … FOR EACH
ROW`` triggers whose action is one SQL statement. SQLite takes the statement
in the trigger's body; PostgreSQL wants a plpgsql function that runs it.
Migrations call these with ``op.execute`` (passed in, so this module does not
depend on alembic's context).
"""
from __future__ import annotations

from typing import Callable, NamedTuple


class Trigger(NamedTuple):
    name: str
    table: str
    event: str  # INSERT, DELETE, UPDATE OF col, …
    when: str | None  # a condition on NEW/OLD, or None
    action: str  # one SQL statement


def create(execute: Callable[[str], object], dialect: str, t: Trigger) -> None:
    """Create trigger ``t`` (and its function, on PostgreSQL)."""
    if dialect == "postgresql":
        execute(f"CREATE FUNCTION {t.name}() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$BEGIN {t.action}; RETURN NULL; END$$")
        _attach(execute, t, deferred=False)
    else:
        when = f" WHEN {t.when}" if t.when else ""
        execute(f"CREATE TRIGGER {t.name} AFTER {t.event} ON {t.table} FOR EACH ROW{when} "
                f"BEGIN {t.action}; END")


def _attach(execute: Callable[[str], object], t: Trigger, *, deferred: bool) -> None:
    """PostgreSQL: fire ``t``'s function after each row's change, or (``deferred``)
    at COMMIT, as a constraint trigger."""
    when = f" WHEN ({t.when})" if t.when else ""
    if deferred:
        execute(f"CREATE CONSTRAINT TRIGGER {t.name} AFTER {t.event} ON {t.table} "
                f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW{when} EXECUTE FUNCTION {t.name}()")
    else:
        execute(f"CREATE TRIGGER {t.name} AFTER {t.event} ON {t.table} FOR EACH ROW{when} "
                f"EXECUTE FUNCTION {t.name}()")


def defer(execute: Callable[[str], object], t: Trigger, deferred: bool = True) -> None:
    """PostgreSQL: make the existing trigger ``t`` fire at COMMIT (``deferred``)
    or again in the statement that changes the row. Its function stays."""
    execute(f"DROP TRIGGER {t.name} ON {t.table}")
    _attach(execute, t, deferred=deferred)


def drop(execute: Callable[[str], object], dialect: str, t: Trigger) -> None:
    """Drop trigger ``t`` (and its function, on PostgreSQL)."""
    if dialect == "postgresql":
        execute(f"DROP TRIGGER {t.name} ON {t.table}")
        execute(f"DROP FUNCTION {t.name}()")
    else:
        execute(f"DROP TRIGGER {t.name}")
