"""Compute errors. Each carries its HTTP status; the type also tells the
build path whether to reschedule (RescheduledException) or abort."""
from __future__ import annotations

from cirrus.exception import CirrusException, Conflict, Forbidden, Invalid, NotFound, QuotaExceeded


class InstanceNotFound(NotFound):
    msg_fmt = "Instance %(instance_id)s could not be found."


class UnexpectedTaskStateError(Conflict):
    msg_fmt = ("Conflict updating instance %(instance_uuid)s. Expected: %(expected)s. "
               "Actual: %(actual)s")


class UnexpectedDeletingTaskStateError(UnexpectedTaskStateError):
    pass


class InstanceInvalidState(Conflict):
    msg_fmt = ("Cannot '%(method)s' instance %(instance_uuid)s while it is in "
               "%(attr)s %(state)s")


class InstanceNotReady(Conflict):
    msg_fmt = "Instance %(instance_id)s is not ready"


class MetadataNotFound(NotFound):
    msg_fmt = "Metadata item %(key)s was not found"


class MetadataLimitExceeded(Forbidden):
    msg_fmt = "Maximum number of metadata items exceeds %(allowed)d"


class InstanceTagNotFound(NotFound):
    msg_fmt = "Server %(instance_id)s has no tag '%(tag)s'"


class TooManyTags(Invalid):
    msg_fmt = "The number of tags exceeded the per-server limit %(limit)d"


class FlavorExists(Conflict):
    msg_fmt = "Flavor with name %(name)s or ID %(flavor_id)s already exists."


class FlavorMissing(NotFound):
    msg_fmt = "Flavor %(flavor_id)s could not be found."


class FlavorExtraSpecNotFound(NotFound):
    msg_fmt = "Flavor %(flavor_id)s has no extra specs with key %(key)s."


class FlavorNotFound(Invalid):
    msg_fmt = "Flavor %(flavor_id)s could not be found."


class FlavorDisabled(Invalid):
    msg_fmt = "Flavor is disabled."


class ImageNotFound(Invalid):
    msg_fmt = "Can not find requested image"


class ImageNotActive(Invalid):
    msg_fmt = "Image %(image_id)s is not active."


class ImageUnacceptable(Invalid):
    msg_fmt = "Image %(image_id)s is unacceptable: %(reason)s"


class ServiceShuttingDown(CirrusException):
    """A stop was asked for: builds in flight finish, no new one starts."""

    code = 503
    msg_fmt = "cirrus is shutting down; no new builds are accepted. Try again when it is back."


class GlanceConnectionFailed(CirrusException):
    """The image service did not answer usefully: unreachable, refusing the
    host's service credentials, or failing."""

    code = 503
    msg_fmt = "Connection to glance host %(server)s failed: %(reason)s"


class ImageDownloadFailed(CirrusException):
    """The image's data did not reach this host (the image service was
    unreachable, answered with an error, or the stream broke): another host
    may fare better, so the build is rescheduled."""

    code = 500
    msg_fmt = "Failed to download image %(image_href)s: %(reason)s"


class ImageChecksumMismatch(ImageDownloadFailed):
    """The downloaded data is not what the image's record says it is: every
    host would get the same bytes, so the build is aborted."""

    # Digests cut to 12 digits: a fault message keeps 255 characters.
    msg_fmt = ("Image %(image_href)s is corrupt: the %(algorithm)s of the downloaded data "
               "does not match the image service's (got %(actual)s, expected %(expected)s)")


class FlavorDiskTooSmall(Invalid):
    msg_fmt = "Flavor's disk is too small for requested image."


class FlavorMemoryTooSmall(Invalid):
    msg_fmt = "Flavor's memory is too small for requested image."


class InvalidRequest(Invalid):
    msg_fmt = "%(reason)s"


class KeypairNotFound(Invalid):
    msg_fmt = "Invalid key_name provided."


class InstanceGroupNotFound(Invalid):
    msg_fmt = "Invalid server group %(group_uuid)s."


class InstanceGroupMissing(NotFound):
    msg_fmt = "Instance group %(group_uuid)s could not be found."


class KeyPairMissing(NotFound):
    msg_fmt = "Keypair %(name)s not found for user %(user_id)s"


class KeyPairExists(Conflict):
    msg_fmt = "Key pair '%(key_name)s' already exists."


class InvalidKeypair(Invalid):
    msg_fmt = "Keypair data is invalid: %(reason)s"


class InvalidAvailabilityZone(Invalid):
    msg_fmt = "The requested availability zone is not available"


class ComputeHostNotFound(Invalid):
    msg_fmt = "Compute host %(host)s could not be found."


class AmbiguousHostnameForMultipleInstances(Invalid):
    msg_fmt = "Unable to allocate a single hostname to multiple instances"


class SecurityGroupNotFoundForProject(Invalid):
    msg_fmt = "Security group %(security_group_id)s not found for project %(project_id)s."


class SecurityGroupNotUnique(Conflict):
    msg_fmt = ("Multiple security groups found matching '%(name)s'. Use an ID to be more "
               "specific.")


class ForcedHostForbidden(Forbidden):
    msg_fmt = "Policy doesn't allow %(action)s to be performed."


class ProjectScopeRequired(Forbidden):
    msg_fmt = ("This request needs a token scoped to a project: project resources are "
               "not available to unscoped or domain-scoped tokens.")


class TooManyInstances(QuotaExceeded):
    msg_fmt = ("Quota exceeded for %(overs)s: Requested %(req)s, but already used "
               "%(used)s of %(allowed)s %(overs)s")


class ServerGroupQuotaExceeded(QuotaExceeded):
    msg_fmt = "Quota exceeded, too many servers in group"


# -- the build path (seed 004) -------------------------------------------------
class BuildAbortException(CirrusException):
    """Stop the build; no reschedule. The instance goes to ERROR with a fault."""

    msg_fmt = "Build of instance %(instance_uuid)s aborted: %(reason)s"


class RescheduledException(CirrusException):
    """Try another host (if retries are left)."""

    msg_fmt = "Build of instance %(instance_uuid)s was re-scheduled: %(reason)s"


class ComputeServiceUnavailable(Invalid):
    msg_fmt = "Compute service of %(host)s is unavailable at this time."


class ComputeResourcesUnavailable(CirrusException):
    msg_fmt = "Insufficient compute resources: %(reason)s."


class VirtualInterfaceCreateException(CirrusException):
    msg_fmt = "Virtual Interface creation failed"


class MaxRetriesExceeded(CirrusException):
    msg_fmt = "%(reason)s"


# -- host aggregates (Nova's codes as its aggregates API maps them) --------------
class ComputeHostMissing(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


class AggregateNotFound(NotFound):
    msg_fmt = "Aggregate %(aggregate_id)s could not be found."


class AggregateNameExists(Conflict):
    msg_fmt = "Aggregate %(aggregate_name)s already exists."


class AggregateHostExists(Conflict):
    msg_fmt = "Aggregate %(aggregate_id)s already has host %(host)s."


class AggregateHostRemoveFailed(NotFound):
    msg_fmt = "Cannot remove host %(host)s in aggregate %(id)s"


class InvalidAggregateActionAdd(Conflict):
    msg_fmt = "Cannot add host to aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionRemoveHost(Conflict):
    msg_fmt = "Cannot remove host from aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionDelete(Invalid):
    msg_fmt = "Cannot remove host from aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionUpdate(Invalid):
    msg_fmt = "Cannot update aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionUpdateMeta(Invalid):
    msg_fmt = "Cannot update metadata of aggregate %(aggregate_id)s. Reason: %(reason)s."


# -- flavor access ---------------------------------------------------------------
class FlavorAccessExists(Conflict):
    msg_fmt = ("Flavor access already exists for flavor %(flavor_id)s and project "
               "%(project_id)s combination.")


class FlavorAccessNotFound(NotFound):
    msg_fmt = "Flavor access not found for %(flavor_id)s / %(project_id)s combination."


class FlavorAccessPublic(Conflict):
    msg_fmt = "Can not add access to a public flavor."


class FlavorAccessListPublic(NotFound):
    msg_fmt = "Access list not available for public flavors."

# -- lock, rescue, changePassword (issue #19) ----------------------------------
class InstanceIsLocked(InstanceInvalidState):
    msg_fmt = "Instance %(instance_uuid)s is locked"


class InstanceNotRescuable(Invalid):
    msg_fmt = "Instance %(instance_id)s cannot be rescued: %(reason)s"


class UnsupportedRescueImage(Invalid):
    msg_fmt = "Requested rescue image '%(image)s' is not supported"


class InstancePasswordSetFailed(Conflict):
    msg_fmt = "Failed to set admin password on %(instance)s because %(reason)s"


class SecurityGroupNotFound(NotFound):
    msg_fmt = "%(reason)s"


class SetAdminPasswordNotImplemented(CirrusException):
    code = 501
    msg_fmt = "Unable to set password on instance"
class UnshelveInstanceInvalidState(InstanceInvalidState):
    msg_fmt = ('Specifying an availability zone or a host when unshelving server '
               '"%(instance_uuid)s" with status "%(state)s" is not supported. The server '
               'status must be SHELVED_OFFLOADED.')


class ImageQuotaExceeded(Forbidden):
    msg_fmt = "Quota exceeded creating the image: %(reason)s"


class HostNotFound(NotFound):
    msg_fmt = "Compute host %(host)s could not be found."


class FeatureNotSupported(CirrusException):
    """What no cirrus driver does (Nova's libvirt answers the same): 501."""

    code = 501
    msg_fmt = "The requested functionality is not supported."


# -- block devices and volumes (issue 20; Nova's names and messages) -------------------
class InvalidBDM(Invalid):
    msg_fmt = "Block Device Mapping is Invalid."


class InvalidBDMFormat(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: %(details)s"


class InvalidBDMBootSequence(InvalidBDM):
    msg_fmt = ("Block Device Mapping is Invalid: Boot sequence for the instance and "
               "image/block device mapping combination is not valid.")


class InvalidBDMVolume(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: failed to get volume %(id)s."


class InvalidBDMSnapshot(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: failed to get snapshot %(id)s."


class InvalidBDMImage(InvalidBDM):
    msg_fmt = "Block Device Mapping is Invalid: failed to get image %(id)s."


class InvalidBDMDiskBus(InvalidBDM):
    msg_fmt = ("Block Device Mapping is invalid: The provided disk bus %(disk_bus)s "
               "is not valid.")


class InvalidBDMSwapSize(InvalidBDM):
    msg_fmt = "Swap drive requested is larger than instance type allows."


class InvalidBDMEphemeralSize(InvalidBDM):
    msg_fmt = ("Ephemeral disks requested are larger than the instance type allows. If no "
               "size is given in one block device mapping, flavor ephemeral size will be used.")


class VolumeSmallerThanMinDisk(FlavorDiskTooSmall):
    msg_fmt = ("Volume size %(volume_size)iGB is smaller than the minimum required by "
               "the image %(image_min_disk)iGB.")


class TooManyDiskDevices(Forbidden):
    msg_fmt = "The maximum allowed number of disk devices (%(maximum)d) to attach to a " \
              "single instance has been exceeded."


class InvalidVolume(Invalid):
    msg_fmt = "Invalid volume: %(reason)s"


class VolumeNotFound(NotFound):
    msg_fmt = "Volume %(volume_id)s could not be found."


class VolumeBDMNotFound(NotFound):
    """No attachment of the volume to the server (``os-volume_attachments``)."""
    msg_fmt = "Instance %(instance)s is not attached to volume %(volume_id)s."


class VolumeAttachmentExists(Conflict):
    msg_fmt = "The volume %(volume_id)s is attached to the server already."


class VolumeNotCreated(CirrusException):
    """A boot volume did not become available in time (Nova's ``VolumeNotCreated``)."""
    msg_fmt = ("Volume %(volume_id)s did not finish being created even after we waited "
               "%(seconds)i seconds or %(attempts)i attempts. And its status is "
               "%(volume_status)s.")


class InvalidBDMVolumeNotBootable(InvalidBDM):
    msg_fmt = "Block Device %(id)s is not bootable."


class DevicePathInUse(Conflict):
    msg_fmt = "The supplied device path (%(path)s) is in use."


# -- assisted volume snapshots (``os-assisted-volume-snapshots``): Nova answers
# every refusal of this API with a 400 (its api-ref; no microversion changed it).
class VolumeNotMapped(Invalid):
    msg_fmt = "No volume Block Device Mapping with id %(volume_id)s."


class VolumeBDMIsMultiAttach(Invalid):
    msg_fmt = ("Volume %(volume_id)s has multiple attachments. Please use the instance "
               "specific query.")


class SnapshotInstanceNotReady(Invalid):
    msg_fmt = "Cannot '%(method)s' instance %(instance_uuid)s while it is %(why)s."


class AutoDiskConfigDisabledByImage(Invalid):
    msg_fmt = "Requested image %(image)s has automatic disk resize disabled."


class UnshelveHostNotInAZ(Conflict):
    msg_fmt = "Host \"%(host)s\" is not in the availability zone \"%(availability_zone)s\"."
