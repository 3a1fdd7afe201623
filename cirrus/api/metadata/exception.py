"""The metadata API's errors, each with its HTTP code."""
from __future__ import annotations

from cirrus.exception import Conflict, Invalid, NotFound


class MetadataNotFound(NotFound):
    msg_fmt = "The metadata path %(path)s does not exist."


class MetadataInstanceNotFound(NotFound):
    # Also what another project's instance is: the proxy's tenant must own it.
    msg_fmt = "Instance %(instance_id)s could not be found."


class PasswordAlreadySet(Conflict):
    msg_fmt = "The instance's password is already set; the API must clear it first."


class PasswordInvalid(Invalid):
    msg_fmt = "Invalid password: %(reason)s"
