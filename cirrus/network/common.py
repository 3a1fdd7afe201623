"""Shared pieces of the network resources: visibility, ids, list filtering."""
from __future__ import annotations

import uuid
from typing import Any, Iterable

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import isotime
from cirrus.network import exception as exc
from cirrus.network.validators import storable


def new_id() -> str:
    return str(uuid.uuid4())


def owned(ctx: RequestContext, row: dict[str, Any]) -> bool:
    return ctx.is_admin or row.get("project_id") == ctx.project_id


def timestamps_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"created_at": isotime(row.get("created_at")),
            "updated_at": isotime(row.get("updated_at") or row.get("created_at")),
            "revision_number": 0, "tags": list(row.get("tags") or [])}


MAX_FILTER_VALUES = 500  # over all filters of a request: bounds the statement's parameters


def own_rows_clause(ctx: RequestContext, table: sa.Table) -> Any:
    """The rows of ``table`` a caller may list: an admin's every row (None),
    anyone else's their project's only — and nothing without a project."""
    if ctx.is_admin:
        return None
    if not ctx.project_id:
        return sa.false()
    return table.c.project_id == ctx.project_id


def _filter_value(col: sa.Column, value: str) -> Any:
    """``value`` as ``col`` holds it, or None if the column cannot hold it
    (then it matches nothing: a junk filter finds nothing, it is no error)."""
    if isinstance(col.type, sa.Boolean):
        return value.lower() in ("true", "1")
    if isinstance(col.type, sa.Integer):
        digits = value[1:] if value.startswith("-") else value
        return int(value) if digits.isascii() and digits.isdigit() and len(digits) <= 9 else None
    return value if len(value) <= 255 and not storable(value) else None


def apply_filters(q: Any, table: sa.Table, filters: dict[str, list[str]],
                  columns: dict[str, str]) -> Any:
    """Equality filters (``?name=a&name=b`` means either) on mapped columns."""
    if sum(len(values) for values in filters.values()) > MAX_FILTER_VALUES:
        raise exc.BadRequest(reason=f"Too many filter values (at most {MAX_FILTER_VALUES})")
    for key, values in filters.items():
        column = columns.get(key)
        if column is None or not values:
            continue
        col = table.c[column]
        wanted = [v for v in (_filter_value(col, value) for value in values) if v is not None]
        q = q.where(col.in_(wanted) if wanted else sa.false())
    return q


def select_fields(item: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    fields = list(fields)
    return {k: v for k, v in item.items() if k in fields} if fields else item
