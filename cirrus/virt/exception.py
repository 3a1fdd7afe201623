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


# -- pause, suspend, rescue, changePassword (issue #19) ---------------------------
class DriverNotImplemented(CirrusException):
    """The driver (or the guest) cannot do this at all: Nova's NotImplementedError,
    which the API answers with 501."""

    code = 501
    msg_fmt = "%(operation)s is not implemented by this driver or guest instance."


class InstanceAgentNotEnabled(CirrusException):
    code = 409
    msg_fmt = "Guest agent is not enabled for the instance"


class QemuGuestAgentNotEnabled(InstanceAgentNotEnabled):
    msg_fmt = "QEMU guest agent is not enabled"


class InstanceStateChangeFailure(CirrusException):
    """A pause, suspend, resume, rescue or unrescue the hypervisor refused."""

    code = 500
    msg_fmt = "Failed to %(operation)s instance %(instance_uuid)s: %(reason)s"
class NotSupportedByDriver(CirrusException):
    code = 400
    msg_fmt = "The hypervisor of this server does not support %(operation)s."


class SnapshotFailed(CirrusException):
    code = 500
    msg_fmt = "Failed to snapshot instance %(instance_uuid)s: %(reason)s"


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


class VolumeAttachFailed(CirrusException):
    """The guest did not take the volume (issue 20); nothing of it is left plugged."""
    msg_fmt = "Volume %(volume_id)s could not be attached. Reason: %(reason)s"


class VolumeSnapshotFailed(CirrusException):
    """An assisted volume snapshot could not be made or merged; the disk is unchanged."""
    msg_fmt = "Volume %(volume_id)s snapshot failed. Reason: %(reason)s"


class DeviceDetachFailed(CirrusException):
    """The guest did not let the device go within the wait."""
    msg_fmt = "Device detach failed for %(device)s: %(reason)s"
