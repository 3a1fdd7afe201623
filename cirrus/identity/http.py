"""What every identity handler reads from a request: the caller checked as
an admin, ids from the path, filters from the query, settings, and the
``links`` of a listing."""
from __future__ import annotations

from typing import Any

from starlette.requests import Request

from cirrus import policy
from cirrus.api.wsgi import context
from cirrus.context import RequestContext
from cirrus.exception import ValidationError
from cirrus.identity import schema


def base(request: Request) -> str:
    """The identity v3 endpoint's URL, for ``links``."""
    return request.app.state.settings.public_url.rstrip("/") + "/identity/v3"


def lifetime(request: Request) -> float:
    """The longest a token lives (revocation events are kept that long)."""
    return float(request.app.state.settings.token_expiration)


def rounds(request: Request) -> int:
    return int(request.app.state.settings.password_hash_rounds)


def path_id(request: Request, key: str, missing: type[Exception], field: str) -> str:
    """A path parameter naming a row; one that cannot is not found, unread."""
    value = request.path_params[key]
    if not schema.is_plain(value):
        raise missing(**{field: "(invalid)"})
    return value


def query(request: Request, key: str, max_length: int = schema.ID_MAX) -> str | None:
    """A filter from the query string; 400 for one no row could match."""
    value = request.query_params.get(key)
    if value is not None and not schema.is_plain(value, max_length):
        raise ValidationError(field=key, reason="is not a valid filter value")
    return value


def query_list(request: Request, key: str) -> list[str]:
    """A comma-separated filter (``?tags=a,b``); empty when absent."""
    value = query(request, key, schema.NAME_MAX * 4)
    return [v for v in (value or "").split(",") if v]


def flag(request: Request, key: str) -> bool:
    """A boolean query parameter as Keystone reads one: present and not false."""
    value = request.query_params.get(key)
    return value is not None and value.lower() not in ("0", "false", "no")


def require_admin(request: Request) -> RequestContext:
    """The caller, if an admin (else 403)."""
    ctx = context(request)
    policy.enforce(ctx, "identity:admin")
    return ctx


def listing(request: Request, key: str, items: list[Any]) -> dict[str, Any]:
    """Keystone's collection body: the items and the listing's links."""
    return {key: items, "links": {"self": str(request.url), "next": None, "previous": None}}
