"""Listings of the v2.0 API: filters, sorting, paging and fields, as
Neutron's ``pagination``, ``sorting`` and ``fields`` extensions do them on a
listing's views."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from cirrus.api.wsgi import reply
from cirrus.network.common import select_fields


def filters(request: Request) -> dict[str, list[str]]:
    """The query's filters: every parameter but those of paging, sorting and fields."""
    return {k: request.query_params.getlist(k) for k in request.query_params
            if k not in ("fields", "limit", "marker", "page_reverse", "sort_key", "sort_dir")}


def _limit(raw: str | None) -> int:
    """``?limit=``: a positive number, else none (0)."""
    if raw and raw.isascii() and raw.isdigit() and len(raw) <= 9:
        return int(raw)
    return 0


def _sortable(value: Any) -> tuple[int, Any]:
    """A sort key for any view value: None first, then numbers, then text."""
    if value is None:
        return (0, 0)
    if isinstance(value, (bool, int, float)):
        return (1, value)
    return (2, str(value))


def _sorted(request: Request, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``?sort_key=a&sort_dir=desc&sort_key=b``: by each key in turn, each in
    its direction (ascending when not given)."""
    keys = request.query_params.getlist("sort_key")
    dirs = request.query_params.getlist("sort_dir")
    for i in reversed(range(len(keys))):
        desc = i < len(dirs) and dirs[i] == "desc"
        items = sorted(items, key=lambda item: _sortable(item.get(keys[i])), reverse=desc)
    return items


def page(request: Request, items: list[dict[str, Any]], collection: str) -> Response:
    """``items`` sorted, paged (``marker``, ``limit``, a ``next`` link) and cut
    to the asked ``fields``, as the answer of a listing of ``collection``."""
    items = _sorted(request, items)
    marker = request.query_params.get("marker")
    if marker:
        ids = [i["id"] for i in items]
        items = items[ids.index(marker) + 1:] if marker in ids else []
    body: dict[str, Any] = {}
    limit = _limit(request.query_params.get("limit"))
    if limit:
        more = len(items) > limit
        items = items[:limit]
        if more:
            body[f"{collection}_links"] = [{"rel": "next", "href": str(request.url.include_query_params(
                marker=items[-1]["id"]))}]
    fields = request.query_params.getlist("fields")
    body[collection] = [select_fields(i, fields) for i in items]
    return reply(body)
