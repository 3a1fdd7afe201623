"""Whose resources a request may touch: the project its token is scoped to.

A token scoped to no project (an unscoped token, a domain-scoped one) has no
project resources at all. Code that builds a query from ``ctx.project_id``
asks :func:`require_project` first, so that "no project" can never be read as
"every project".
"""
from __future__ import annotations

from cirrus.compute.exception import ProjectScopeRequired
from cirrus.context import RequestContext


def require_project(ctx: RequestContext) -> str:
    """The caller's project id; :class:`ProjectScopeRequired` (403) if the
    token is not scoped to a project."""
    project_id = ctx.project_id
    if not project_id:
        raise ProjectScopeRequired()
    return project_id
