"""Nova's marker and limit paging (``api/openstack/common.py``'s
``limited_by_marker``), shared by the compute listings that page in Python."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request

from cirrus.api.wsgi import query_int
from cirrus.exception import ValidationError


def paginate(request: Request, rows: list[dict[str, Any]], id_key: str
             ) -> tuple[list[dict[str, Any]], str | None]:
    """The rows after ``?marker=`` (400 when it names none of them), at most
    ``?limit=`` of them; and the marker of the next page when the limit cut
    some off (None for the last page, and for an empty one)."""
    marker = request.query_params.get("marker")
    if marker is not None:
        ids = [r[id_key] for r in rows]
        if marker not in ids:
            raise ValidationError(field="marker", reason=f"marker [{marker[:60]}] not found")
        rows = rows[ids.index(marker) + 1:]
    limit = query_int(request, "limit", None)
    if limit is None or len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, (str(rows[-1][id_key]) if rows else None)


def next_link(request: Request, next_marker: str) -> list[dict[str, str]]:
    """The ``…_links`` list pointing at the page after ``next_marker``: this
    request's public URL with the same limit."""
    base = str(request.app.state.settings.public_url).rstrip("/")
    limit = query_int(request, "limit", None)
    return [{"rel": "next",
             "href": f"{base}{request.url.path}?limit={limit}&marker={next_marker}"}]
