"""Image service errors (Glance's status codes)."""
from __future__ import annotations

from cirrus.exception import BodyTooLarge, Conflict, Forbidden, Invalid, NotFound


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
