"""Base of every typed cirrus error.

Each service has its own ``exception`` module with subclasses; each class carries
its HTTP status (``code``) and a message template. The HTTP layer maps them to
OpenStack's error bodies in one place (:mod:`cirrus.api.errors`).
"""
from __future__ import annotations

from typing import Any


class CirrusException(Exception):
    """An error with an HTTP status and a message a person can act on."""

    code: int = 500
    msg_fmt: str = "An unknown error occurred."
    # Neutron-style error type name; defaults to the class name.
    error_type: str | None = None

    def __init__(self, message: str | None = None, **kwargs: Any) -> None:
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError, ValueError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def format_message(self) -> str:
        return self.message

    @property
    def type_name(self) -> str:
        return self.error_type or type(self).__name__


class Invalid(CirrusException):
    code = 400
    msg_fmt = "Invalid input: %(reason)s"


class ValidationError(Invalid):
    msg_fmt = "Invalid input for field/attribute %(field)s: %(reason)s"


class NotAuthenticated(CirrusException):
    code = 401
    msg_fmt = "The request you have made requires authentication."


class Forbidden(CirrusException):
    code = 403
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


class NotFound(CirrusException):
    code = 404
    msg_fmt = "Resource could not be found."


class Conflict(CirrusException):
    code = 409
    msg_fmt = "There was a conflict when trying to complete your request."


class BodyTooLarge(CirrusException):
    code = 413
    msg_fmt = "Request is too large."


class UnsupportedMediaType(CirrusException):
    code = 415
    msg_fmt = "Unsupported Content-Type: %(content_type)s"


class QuotaExceeded(Forbidden):
    code = 403
    msg_fmt = "Quota exceeded for %(resource)s: Requested %(requested)s, but already used %(used)s of %(allowed)s %(resource)s"


class ConsoleTypeUnavailable(CirrusException):
    """The driver (or this deployment) offers no console of the type asked for."""

    code = 400
    msg_fmt = "Unavailable console type %(console_type)s."
