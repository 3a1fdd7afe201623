"""Cinder's states, in one module, and which action each state accepts.

``VolumeStatus`` is the volume's ``status``; ``AttachStatus`` its
``attach_status`` and each attachment's; ``SnapshotStatus`` a snapshot's.
:data:`ACCEPTS` is the transition table the service guards every save with
(``UPDATE … WHERE status IN (…)``): an action on a volume in any other state
is refused with a 400 naming the state, as Cinder's ``InvalidVolume``.
"""
from __future__ import annotations

import enum


class VolumeStatus(str, enum.Enum):
    CREATING = "creating"
    AVAILABLE = "available"
    RESERVED = "reserved"
    ATTACHING = "attaching"
    IN_USE = "in-use"
    DETACHING = "detaching"
    DELETING = "deleting"
    ERROR = "error"
    ERROR_DELETING = "error_deleting"
    EXTENDING = "extending"
    ERROR_EXTENDING = "error_extending"
    RETYPING = "retyping"
    MAINTENANCE = "maintenance"
    AWAITING_TRANSFER = "awaiting-transfer"
    UPLOADING = "uploading"


class AttachStatus(str, enum.Enum):
    ATTACHED = "attached"
    ATTACHING = "attaching"
    DETACHED = "detached"
    RESERVED = "reserved"
    ERROR_ATTACHING = "error_attaching"
    ERROR_DETACHING = "error_detaching"
    DELETED = "deleted"


class SnapshotStatus(str, enum.Enum):
    CREATING = "creating"
    AVAILABLE = "available"
    DELETING = "deleting"
    ERROR = "error"
    ERROR_DELETING = "error_deleting"


V = VolumeStatus
S = SnapshotStatus

# action → the volume states it starts from (cinder/volume/api.py's checks).
ACCEPTS: dict[str, frozenset[VolumeStatus]] = {
    "delete": frozenset({V.AVAILABLE, V.ERROR, V.ERROR_EXTENDING, V.ERROR_DELETING}),
    "delete_cascade": frozenset({V.AVAILABLE, V.ERROR, V.ERROR_EXTENDING, V.ERROR_DELETING}),
    "force_delete": frozenset(V) - {V.DELETING},
    "update": frozenset(V) - {V.DELETING},
    "extend": frozenset({V.AVAILABLE}),
    "extend_in_use": frozenset({V.AVAILABLE, V.IN_USE}),  # 3.42
    "retype": frozenset({V.AVAILABLE, V.IN_USE}),
    "clone": frozenset({V.AVAILABLE, V.IN_USE}),
    "snapshot": frozenset({V.AVAILABLE}),
    "snapshot_force": frozenset({V.AVAILABLE, V.IN_USE}),
    "reserve": frozenset({V.AVAILABLE}),
    "reserve_multiattach": frozenset({V.AVAILABLE, V.IN_USE}),
    "unreserve": frozenset({V.RESERVED}),
    "attach": frozenset({V.RESERVED, V.ATTACHING, V.IN_USE, V.AVAILABLE}),
    "begin_detaching": frozenset({V.IN_USE}),
    "roll_detaching": frozenset({V.DETACHING}),
    # available: a detach of what is already detached changes nothing (Cinder).
    "detach": frozenset({V.IN_USE, V.DETACHING, V.ATTACHING, V.RESERVED, V.AVAILABLE}),
    "set_bootable": frozenset(V) - {V.DELETING, V.CREATING},
    "readonly": frozenset({V.AVAILABLE}),
    "metadata": frozenset(V) - {V.DELETING, V.MAINTENANCE},
    "upload_to_image": frozenset({V.AVAILABLE}),
    "upload_to_image_force": frozenset({V.AVAILABLE, V.IN_USE}),
    "transfer": frozenset({V.AVAILABLE}),
}

SNAPSHOT_ACCEPTS: dict[str, frozenset[SnapshotStatus]] = {
    "delete": frozenset({S.AVAILABLE, S.ERROR, S.ERROR_DELETING}),
    "update": frozenset(S) - {S.DELETING},
    "clone_from": frozenset({S.AVAILABLE}),
}

# Settled states: what a volume ends in once nothing is being done to it.
SETTLED = frozenset({V.AVAILABLE, V.IN_USE, V.ERROR, V.ERROR_DELETING, V.ERROR_EXTENDING})
# A process that dies mid-way leaves these; the sweep ends them.
TRANSIENT = frozenset({V.CREATING, V.DELETING, V.EXTENDING, V.RETYPING})


def accepts(action: str, status: str) -> bool:
    """Whether a volume in ``status`` may start ``action``."""
    return status in {s.value for s in ACCEPTS[action]}


def values(states: frozenset[VolumeStatus] | frozenset[SnapshotStatus]) -> list[str]:
    """The states as their stored strings, sorted (stable SQL)."""
    return sorted(s.value for s in states)
