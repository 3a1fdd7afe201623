"""Errors raised by virt drivers."""
from __future__ import annotations

from cirrus.exception import CirrusException, ConsoleTypeUnavailable, NotFound

__all__ = ["ConsoleTypeUnavailable"]  # raised by drivers; defined beside the API's errors


class HypervisorUnavailable(CirrusException):
    code = 503
    msg_fmt = "Connection to the hypervisor is broken on host %(host)s: %(reason)s"


class InstanceNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s could not be found."


class InstanceSpawnError(CirrusException):
    """A spawn failed in a way another host might not: reschedulable."""

    code = 500
    msg_fmt = "Failed to spawn instance %(instance_uuid)s: %(reason)s"


class InstancePowerOffFailure(CirrusException):
    code = 500
    msg_fmt = "Failed to power off instance: %(reason)s"


class InstanceRebootFailure(CirrusException):
    code = 500
    msg_fmt = "Failed to reboot instance: %(reason)s"


class MoveNotSupported(CirrusException):
    """The driver cannot move guests (resize, migrate, live-migrate)."""

    code = 400
    msg_fmt = "The %(driver)s driver does not support %(operation)s."


class MigrationError(CirrusException):
    code = 500
    msg_fmt = "Migration error: %(reason)s"


class LiveMigrationAborted(CirrusException):
    """An admin aborted the live migration; the guest stays on its source."""

    code = 409
    msg_fmt = "Live migration of %(instance_uuid)s was aborted."
