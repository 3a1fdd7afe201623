"""Helpers every block storage handler uses: the service, query filters, paging."""
from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request

from cirrus.api.compute.parameters import bad, query_boolean
from cirrus.volume.exception import MarkerNotFound
from cirrus.volume.manager import BlockStorage

Row = dict[str, Any]
MAX_LIMIT = 1000


def bs(request: Request) -> BlockStorage:
    return request.app.state.volume


def all_tenants(request: Request) -> bool:
    raw = request.query_params.get("all_tenants")
    return raw is not None and (raw == "" or query_boolean(raw, "all_tenants"))


def filters(request: Request, keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in keys:
        raw = request.query_params.get(key)
        if raw is None:
            continue
        out[key] = query_boolean(raw, key) if key == "bootable" else raw
    if "display_name" in request.query_params:
        out["name"] = request.query_params["display_name"]
    return out


def _sort(request: Request) -> list[tuple[str, bool]]:
    """``sort=key:dir,…`` or ``sort_key``/``sort_dir`` → [(key, descending)]."""
    raw = request.query_params.get("sort")
    pairs = []
    if raw:
        for part in raw.split(","):
            key, _, direction = part.strip().partition(":")
            pairs.append((key, direction or "desc"))
    else:
        pairs.append((request.query_params.get("sort_key", "created_at"),
                      request.query_params.get("sort_dir", "desc")))
    out = []
    for key, direction in pairs:
        if direction not in ("asc", "desc"):
            raise bad("sort_dir", f"{direction[:20]!r} is not one of ['asc', 'desc']")
        if key == "name":
            key = "name"
        if key not in ("created_at", "updated_at", "id", "name", "size", "status",
                       "availability_zone", "display_name"):
            raise bad("sort_key", f"{key[:40]!r} is not a sort key")
        out.append(("name" if key == "display_name" else key, direction == "desc"))
    return out


def page(request: Request, rows: list[Row]) -> tuple[list[Row], bool]:
    """Sort, then the page after ``marker`` of at most ``limit`` rows; and
    whether rows are left after it."""
    for key, desc in reversed(_sort(request) + [("id", True)]):
        rows.sort(key=lambda r: (r[key] is None, r[key] if r[key] is not None else ""),
                  reverse=desc)
    marker = request.query_params.get("marker")
    if marker is not None:
        ids = [r["id"] for r in rows]
        if marker not in ids:
            raise MarkerNotFound(marker=marker[:64])
        rows = rows[ids.index(marker) + 1:]
    offset = _int(request, "offset", 0)
    rows = rows[offset:]
    limit = _int(request, "limit", MAX_LIMIT)
    # Cinder links the next page whenever a page is full (it does not look ahead).
    return rows[:limit], len(rows) >= limit and "limit" in request.query_params


def _int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or len(raw) > 9:
        raise bad(name, f"{raw[:20]!r} is not a non-negative integer")
    return int(raw)


def next_link(request: Request, collection: str, rows: list[Row]) -> list[dict[str, str]]:
    params = [(k, v) for k, v in request.query_params.multi_items() if k != "marker"]
    params.append(("marker", rows[-1]["id"]))
    return [{"rel": "next", "href": f"{request.url.scheme}://{request.url.netloc}"
                                    f"{request.url.path}?{urlencode(params)}"}]
