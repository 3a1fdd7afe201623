"""Policy in one place: which roles may do what, and whose things they see.

Two kinds of check, both decided here:

* **Route rules** (:class:`Rule`, tables in :mod:`cirrus.policies`): before a
  handler runs, the caller's roles and scope against the route's
  :class:`Level`. An unscoped token carries no project and no roles: it may
  only reach what is :attr:`Level.AUTHENTICATED` (identity's self-service).
* **Signed requests** (:attr:`Level.SIGNED`): the metadata service's, made by
  a metadata proxy for one instance and carrying no token at all.
* **Target rules** (:data:`RULES`, by name): in the service, with the row the
  caller asks about — members and readers act only on their own project's
  things; admins on everyone's.

Roles nest as OpenStack's secure-RBAC defaults: reader ⊂ member ⊂ admin.
"""
from __future__ import annotations

import enum
from typing import Any, Mapping, NamedTuple

from cirrus.context import RequestContext
from cirrus.exception import Forbidden


class Level(enum.IntEnum):
    """The least a caller needs, in increasing order."""

    PUBLIC = 0         # no token (version documents, token issue)
    AUTHENTICATED = 1  # any valid token, scoped or not (identity self-service)
    READER = 2         # admin, or reader/member of a project (project-scoped token)
    MEMBER = 3         # admin, or member of a project (project-scoped token)
    ADMIN = 4          # admin
    # No token reaches it, however high its roles: only a metadata request the
    # host's proxy signed for an instance (``X-Instance-ID-Signature``).
    SIGNED = 5


class Rule(NamedTuple):
    """A route's rule: OpenStack's name for it and the level it needs."""

    name: str
    level: Level


ADMIN, MEMBER, READER, ANY = "admin", "member", "reader", "any"

RULES: dict[str, str] = {
    # identity
    "identity:admin": ADMIN,
    # image
    "image:get": READER,
    "image:create": MEMBER,
    "image:modify": MEMBER,
    "image:publicize": ADMIN,
    "image:download": MEMBER,
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
    "compute:aggregates": ADMIN,
    "compute:flavor_access": ADMIN,
    "compute:usage:list": ADMIN,
    "compute:usage:show": READER,
    "compute:volume_attachments:swap": ADMIN,  # os-volumes-attachments:swap
    "compute:server:unshelve_to_host": ADMIN,  # os-shelve:unshelve_to_host (2.91)
    # network
    "network:get": READER,
    "network:create": MEMBER,
    "network:update": MEMBER,
    "network:delete": MEMBER,
    "network:admin": ADMIN,
}

WRITER_ROLES = frozenset({"admin", "member"})
READER_ROLES = frozenset({"admin", "member", "reader"})


def allows(ctx: RequestContext, level: Level) -> bool:
    """Whether ``ctx``'s roles and scope reach ``level`` (no target involved)."""
    if level is Level.SIGNED:
        return ctx.instance_id is not None
    if level <= Level.AUTHENTICATED or ctx.is_admin:
        return True
    if level is Level.ADMIN or ctx.project_id is None:
        return False
    return not (WRITER_ROLES if level is Level.MEMBER else READER_ROLES).isdisjoint(ctx.roles)


def enforce_route(ctx: RequestContext | None, rule: Rule) -> None:
    """Raise 403 :class:`Forbidden` unless ``ctx`` reaches ``rule``'s level."""
    if rule.level is Level.PUBLIC:
        return
    if rule.level is Level.SIGNED:
        if ctx is None or ctx.instance_id is None:
            raise Forbidden(action=rule.name)
        return
    if ctx is None or not allows(ctx, rule.level):
        raise Forbidden(action=rule.name)


def check(ctx: RequestContext, action: str, target: Mapping[str, Any] | None = None) -> bool:
    """Whether ``ctx`` may perform ``action`` on ``target`` (a dict with project_id).

    A caller without a project (an unscoped token) owns nothing: it passes only
    ``any`` rules, or as an admin.
    """
    rule = RULES[action]
    if ctx.is_admin:
        return True
    if rule == ADMIN:
        return False
    if rule == ANY:
        return True
    if ctx.project_id is None:
        return False
    needed = WRITER_ROLES if rule == MEMBER else READER_ROLES
    if needed.isdisjoint(ctx.roles):
        return False
    owner = (target or {}).get("project_id")
    return owner is None or owner == ctx.project_id


def enforce(ctx: RequestContext, action: str, target: Mapping[str, Any] | None = None) -> None:
    """Raise 403 :class:`Forbidden` unless :func:`check` allows it."""
    if not check(ctx, action, target):
        raise Forbidden(action=action)
