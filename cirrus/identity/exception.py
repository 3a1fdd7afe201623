"""Identity errors."""
from __future__ import annotations

from cirrus.exception import Conflict, NotAuthenticated, NotFound


class Unauthorized(NotAuthenticated):
    msg_fmt = "The request you have made requires authentication."


class TokenNotFound(NotFound):
    msg_fmt = "Could not find token: %(token)s."


class ProjectNotFound(NotFound):
    msg_fmt = "Could not find project: %(project_id)s."


class UserNotFound(NotFound):
    msg_fmt = "Could not find user: %(user_id)s."


class RoleNotFound(NotFound):
    msg_fmt = "Could not find role: %(role_id)s."


class DomainNotFound(NotFound):
    msg_fmt = "Could not find domain: %(domain_id)s."


class DuplicateEntry(Conflict):
    msg_fmt = "Conflict occurred attempting to store %(kind)s - Duplicate entry."
