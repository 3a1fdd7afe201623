"""Shared pieces of the network resources: visibility, ids, list filtering."""
from __future__ import annotations

import uuid
from typing import Any, Iterable

import sqlalchemy as sa

from cirrus.context import RequestContext
from cirrus.db.base import isotime


def new_id() -> str:
    return str(uuid.uuid4())


def owned(ctx: RequestContext, row: dict[str, Any]) -> bool:
    return ctx.is_admin or row.get("project_id") == ctx.project_id


def timestamps_view(row: dict[str, Any]) -> dict[str, Any]:
    return {"created_at": isotime(row.get("created_at")),
            "updated_at": isotime(row.get("updated_at") or row.get("created_at")),
            "revision_number": 0, "tags": []}


def apply_filters(q: Any, table: sa.Table, filters: dict[str, list[str]],
                  columns: dict[str, str]) -> Any:
    """Equality filters (``?name=a&name=b`` means either) on mapped columns."""
    for key, values in filters.items():
        column = columns.get(key)
        if column is None or not values:
            continue
        col = table.c[column]
        if isinstance(col.type, sa.Boolean):
            q = q.where(col.in_([v.lower() in ("true", "1") for v in values]))
        else:
            q = q.where(col.in_(values))
    return q


def select_fields(item: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    fields = list(fields)
    return {k: v for k, v in item.items() if k in fields} if fields else item
