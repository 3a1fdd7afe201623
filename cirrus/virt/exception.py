"""Errors raised by virt drivers."""
from __future__ import annotations

from cirrus.exception import CirrusException, NotFound


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


class NotSupportedByDriver(CirrusException):
    code = 400
    msg_fmt = "The hypervisor of this server does not support %(operation)s."


class SnapshotFailed(CirrusException):
    code = 500
    msg_fmt = "Failed to snapshot instance %(instance_uuid)s: %(reason)s"
