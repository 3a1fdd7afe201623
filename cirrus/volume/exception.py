"""Block storage errors, with Cinder's status codes and messages."""
from __future__ import annotations

from cirrus.exception import CirrusException, Conflict, Invalid, NotFound


class VolumeNotFound(NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class SnapshotNotFound(NotFound):
    msg_fmt = "Snapshot %(snapshot_id)s could not be found."


class VolumeTypeNotFound(NotFound):
    msg_fmt = "Volume type %(volume_type_id)s could not be found."


class VolumeTypeNotFoundByName(NotFound):
    msg_fmt = "Volume type with name %(volume_type_name)s could not be found."


class VolumeTypeExtraSpecsNotFound(NotFound):
    msg_fmt = "Volume Type %(volume_type_id)s has no extra specs with key %(extra_specs_key)s."


class VolumeTypeAccessNotFound(NotFound):
    msg_fmt = "Volume type access not found for %(volume_type_id)s / %(project_id)s combination."


class AttachmentNotFound(NotFound):
    msg_fmt = "Volume attachment could not be found with filter: attachment_id = %(attachment_id)s."


class MetadataNotFound(NotFound):
    msg_fmt = "Metadata item was not found"


class MarkerNotFound(NotFound):
    msg_fmt = "Marker %(marker)s could not be found."


class MessageNotFound(NotFound):
    msg_fmt = "Message %(message_id)s could not be found."


class ImageNotFound(Invalid):
    msg_fmt = "Invalid image identifier or unable to access requested image."


class InvalidInput(Invalid):
    msg_fmt = "Invalid input received: %(reason)s"


class InvalidVolume(Invalid):
    msg_fmt = "Invalid volume: %(reason)s"


class InvalidSnapshot(Invalid):
    msg_fmt = "Invalid snapshot: %(reason)s"


class InvalidVolumeType(Invalid):
    msg_fmt = "Invalid volume type: %(reason)s"


class VolumeAttachmentInvalid(Invalid):
    msg_fmt = "Invalid volume: %(reason)s"


class VolumeTypeExists(Conflict):
    msg_fmt = "Volume Type %(name)s already exists."


class VolumeTypeInUse(Invalid):
    msg_fmt = "Volume Type %(volume_type_id)s deletion is not allowed with volumes present with the type."


class VolumeTypeAccessExists(Conflict):
    msg_fmt = "Volume type access for %(volume_type_id)s / %(project_id)s combination already exists."


class OverQuota(CirrusException):
    """Cinder's ``OverQuota`` family: 413, which clients read as OverLimit."""

    code = 413
    msg_fmt = ("VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed "
               "%(name)s quota. Requested %(requested)sG, quota is %(quota)sG and "
               "%(consumed)sG has been consumed.")


class VolumeLimitExceeded(OverQuota):
    msg_fmt = "Maximum number of volumes allowed (%(allowed)d) exceeded for quota '%(name)s'."


class SnapshotLimitExceeded(OverQuota):
    msg_fmt = "Maximum number of snapshots allowed (%(allowed)d) exceeded"


class QuotaBelowUsage(Invalid):
    msg_fmt = ("Quota %(resource)s limit must be equal or greater than existing resources. "
               "Current usage is %(used)d and the requested limit is %(limit)d.")


class BackendError(CirrusException):
    """The backend failed an operation; the volume goes to an error state."""

    code = 500
    msg_fmt = "Volume backend error: %(reason)s"


class VolumeTypeEncryptionExists(Invalid):
    msg_fmt = "Volume type encryption for type %(type_id)s already exists."


class VolumeTypeEncryptionNotFound(NotFound):
    msg_fmt = "Volume type encryption for type %(type_id)s does not exist."


class VolumeTypeEncryptionInUse(Invalid):
    msg_fmt = "Cannot %(action)s encryption specs. Volume type in use."
