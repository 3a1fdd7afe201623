"""Policy in one place: which roles may do what, and whose things they see.

A rule is one of:

* ``"admin"`` – only admins;
* ``"member"`` – admins, or members of the target's project;
* ``"reader"`` – admins, or members/readers of the target's project;
* ``"any"`` – any authenticated caller.

Members see and change only their own project's things; admin-only operations
are refused for others with 403.
"""
from __future__ import annotations

from typing import Any, Mapping

from cirrus.context import RequestContext
from cirrus.exception import Forbidden

ADMIN, MEMBER, READER, ANY = "admin", "member", "reader", "any"

RULES: dict[str, str] = {
    # identity
    "identity:admin": ADMIN,
    # image
    "image:get": READER,
    "image:create": MEMBER,
    "image:modify": MEMBER,
    "image:publicize": ADMIN,
    # compute
    "compute:flavor:manage": ADMIN,
    "compute:server:get": READER,
    "compute:server:create": MEMBER,
    "compute:server:action": MEMBER,
    "compute:server:delete": MEMBER,
    "compute:server:all_tenants": ADMIN,
    "compute:server:forced_host": ADMIN,
    "compute:server:requested_destination": ADMIN,
    "compute:server_groups:create": MEMBER,
    "compute:server_groups:delete": MEMBER,
    "compute:server:admin_attrs": ADMIN,
    "compute:external_events": ADMIN,
    "compute:services": ADMIN,
    "compute:hypervisors": ADMIN,
    "compute:quotas:update": ADMIN,
    # network
    "network:get": READER,
    "network:create": MEMBER,
    "network:admin": ADMIN,
}

WRITER_ROLES = frozenset({"admin", "member"})
READER_ROLES = frozenset({"admin", "member", "reader"})


def check(ctx: RequestContext, action: str, target: Mapping[str, Any] | None = None) -> bool:
    """Whether ``ctx`` may perform ``action`` on ``target`` (a dict with project_id)."""
    rule = RULES[action]
    if ctx.is_admin:
        return True
    if rule == ADMIN:
        return False
    if rule == ANY:
        return True
    roles = set(ctx.roles)
    needed = WRITER_ROLES if rule == MEMBER else READER_ROLES
    if not roles & needed:
        return False
    owner = (target or {}).get("project_id")
    return owner is None or owner == ctx.project_id


def enforce(ctx: RequestContext, action: str, target: Mapping[str, Any] | None = None) -> None:
    """Raise 403 :class:`Forbidden` unless :func:`check` allows it."""
    if not check(ctx, action, target):
        raise Forbidden(action=action)
