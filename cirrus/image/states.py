"""An image's and a task's states, and which actions each allows (Glance's)."""
from __future__ import annotations

import enum


class ImageStatus(str, enum.Enum):
    """Glance's image statuses (``glance.domain.Image.valid_state_targets``)."""

    QUEUED = "queued"            # a record without data
    SAVING = "saving"            # data being uploaded (``PUT …/file``)
    UPLOADING = "uploading"      # data staged (``PUT …/stage``), not imported yet
    IMPORTING = "importing"      # an import task is moving the staged data in
    ACTIVE = "active"
    DEACTIVATED = "deactivated"  # data kept, downloadable by admins only
    KILLED = "killed"
    DELETED = "deleted"


# Glance's deactivate/reactivate: each is idempotent, and only these statuses
# allow it (any other is a 400).
DEACTIVATE_FROM = (ImageStatus.ACTIVE, ImageStatus.DEACTIVATED)
REACTIVATE_FROM = (ImageStatus.DEACTIVATED, ImageStatus.ACTIVE)


class TaskStatus(str, enum.Enum):
    """Glance's task statuses (``glance.domain.Task``)."""

    PENDING = "pending"
    PROCESSING = "processing"
    SUCCESS = "success"
    FAILURE = "failure"
