"""Image service errors (Glance's status codes)."""
from __future__ import annotations

from cirrus.exception import BodyTooLarge, CirrusException, Conflict, Forbidden, Invalid, NotFound


class ImageNotFound(NotFound):
    msg_fmt = "No image found with ID %(image_id)s"


class MemberNotFound(NotFound):
    msg_fmt = "Member %(member)s of image %(image_id)s not found"


class ImageDataNotFound(NotFound):
    msg_fmt = "Image %(image_id)s has no data."


class InvalidImage(Invalid):
    msg_fmt = "%(reason)s"


class ImageForbidden(Forbidden):
    msg_fmt = "%(reason)s"


class ImageConflict(Conflict):
    msg_fmt = "%(reason)s"


class ImageTooLarge(BodyTooLarge):
    msg_fmt = "Image exceeds the storage quota: the limit is %(limit)d bytes."


class ImageLimitExceeded(CirrusException):
    """One of Glance's per-image quotas (``image_*_quota``): 413 as Glance."""

    code = 413
    msg_fmt = ("The limit has been exceeded on the number of allowed image %(what)s. "
               "Attempted: %(attempted)d, Maximum: %(maximum)d")


class UnsupportedMediaType(CirrusException):
    code = 415
    msg_fmt = "%(reason)s"



class TaskNotFound(NotFound):
    msg_fmt = "Task with the given id %(task_id)s was not found"


class MultiStoreNotSupported(NotFound):
    """``GET /v2/info/stores`` of a single-store cloud (Glance: 404)."""

    msg_fmt = "Multi backend is not supported at this site."


class MetadefNotFound(NotFound):
    msg_fmt = "%(what)s %(name)s not found"
