"""Identity errors."""
from __future__ import annotations

from cirrus.exception import CirrusException, Conflict, NotAuthenticated, NotFound


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


class GroupNotFound(NotFound):
    msg_fmt = "Could not find group: %(group_id)s."


class RegionNotFound(NotFound):
    msg_fmt = "Could not find region: %(region_id)s."


class ServiceNotFound(NotFound):
    msg_fmt = "Could not find service: %(service_id)s."


class EndpointNotFound(NotFound):
    msg_fmt = "Could not find endpoint: %(endpoint_id)s."


class CredentialNotFound(NotFound):
    msg_fmt = "Could not find credential: %(credential_id)s."


class ApplicationCredentialNotFound(NotFound):
    msg_fmt = "Could not find Application Credential: %(application_credential_id)s."


class PolicyNotFound(NotFound):
    msg_fmt = "Could not find policy: %(policy_id)s."


class ImpliedRoleNotFound(NotFound):
    msg_fmt = "%(prior_role_id)s does not imply %(implied_role_id)s."


class ProjectTagNotFound(NotFound):
    msg_fmt = "Could not find project tag: %(tag)s."


class DuplicateEntry(Conflict):
    msg_fmt = "Conflict occurred attempting to store %(kind)s - Duplicate entry."


class ForbiddenAction(CirrusException):
    """What no role may do (Keystone's ``ForbiddenAction``, 403)."""

    code = 403
    msg_fmt = "You are not authorized to perform the requested action: %(reason)s."
