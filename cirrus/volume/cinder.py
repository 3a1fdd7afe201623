"""Compute's view of block storage: what Nova's ``nova/volume/cinder.py`` API
offers the compute service, as a protocol.

In Nova this is an HTTP client of Cinder; here, as with the network API, the
implementation calls the volume service's own functions on the shared
database (and the backend that owns the volume's data). The compute side
(block device mappings, attach/detach, boot from volume) is written against
:class:`VolumeAPI` alone, so it is tested with a fake and run with the real
service.

Attachments follow Cinder's attachments API (3.27/3.44), as Nova does since
Queens: ``attachment_create`` reserves the volume (``reserved``) for an
instance; ``attachment_update`` with the host's connector exports it and
returns the ``connection_info`` the virt driver plugs (``attaching``);
``attachment_complete`` marks it ``in-use``; ``attachment_delete`` detaches
(``available`` once no attachment is left).

``connection_info['driver_volume_type']`` names how the host reaches the
data: ``local`` (a file or block device at ``data['device_path']`` on the
host, ``data['format']`` ``raw`` or ``qcow2``; the file backend) or ``nbd``
(``data['host']``, ``data['port']``, ``data['name']``: an NBD export reachable
from other hosts).
"""
from __future__ import annotations

from typing import Literal, NotRequired, Protocol, TypedDict

from cirrus.context import RequestContext

VolumeStatus = Literal["creating", "available", "reserved", "attaching", "in-use",
                       "detaching", "deleting", "error", "error_deleting", "extending",
                       "error_extending", "downloading", "uploading", "retyping",
                       "maintenance", "backing-up", "restoring-backup", "error_restoring"]


class Connector(TypedDict, total=False):
    """The compute host, as os-brick's ``get_connector_properties`` describes it."""

    host: str
    ip: str
    initiator: str
    multipath: bool
    platform: str
    os_type: str


class ConnectionData(TypedDict, total=False):
    device_path: str  # local
    format: str       # local: raw | qcow2
    host: str         # nbd
    port: int         # nbd
    name: str         # nbd export
    access_mode: str  # rw | ro
    volume_id: str    # the volume's id (the guest's disk serial)


class ConnectionInfo(TypedDict):
    driver_volume_type: str  # local | nbd
    data: ConnectionData


class VolumeAttachmentRef(TypedDict):
    """One entry of a volume's ``attachments`` list."""

    id: str  # the attachment id
    attachment_id: str
    volume_id: str
    server_id: str
    host_name: str | None
    device: str | None
    attached_at: str | None


class Volume(TypedDict):
    id: str
    status: VolumeStatus
    size: int  # GiB
    name: str
    availability_zone: str
    bootable: bool
    multiattach: bool
    volume_type: str | None
    attachments: list[VolumeAttachmentRef]
    project_id: str
    volume_image_metadata: dict[str, str]
    # What Nova's os-volumes proxy shows besides (absent from a test fake's volumes).
    created_at: NotRequired[str]
    description: NotRequired[str | None]
    snapshot_id: NotRequired[str | None]
    metadata: NotRequired[dict[str, str]]
    encrypted: NotRequired[bool]  # of a type with encryption specs


class Attachment(TypedDict):
    id: str
    volume_id: str
    instance: str
    status: str  # reserved | attaching | attached | detached | error_attaching
    attach_mode: str
    connection_info: ConnectionInfo | None


class Snapshot(TypedDict):
    id: str
    volume_id: str
    status: str  # creating | available | deleting | error
    size: int
    name: str
    created_at: NotRequired[str]
    description: NotRequired[str | None]


class VolumeAPI(Protocol):
    """What compute asks of block storage (``nova.volume.cinder.API``). Each
    raises the volume service's typed exceptions (404 not found, 400/409 for a
    volume in the wrong state, 413 over quota: Cinder's OverQuota)."""

    async def get(self, ctx: RequestContext, volume_id: str) -> Volume: ...

    async def get_all(self, ctx: RequestContext) -> list[Volume]:
        """The caller's project's volumes, oldest first."""
        ...

    async def create(self, ctx: RequestContext, size: int, name: str, description: str,
                     snapshot_id: str | None = None, image_id: str | None = None,
                     volume_type: str | None = None,
                     availability_zone: str | None = None,
                     metadata: dict[str, str] | None = None) -> Volume:
        """Start a create; the volume is ``creating`` until ready (poll ``get``)."""
        ...

    async def delete(self, ctx: RequestContext, volume_id: str) -> None: ...

    async def attachment_create(self, ctx: RequestContext, volume_id: str,
                                instance_uuid: str, connector: Connector | None = None,
                                mountpoint: str | None = None) -> Attachment: ...

    async def attachment_update(self, ctx: RequestContext, attachment_id: str,
                                connector: Connector,
                                mountpoint: str | None = None) -> Attachment: ...

    async def attachment_complete(self, ctx: RequestContext, attachment_id: str) -> None: ...

    async def attachment_delete(self, ctx: RequestContext, attachment_id: str) -> None: ...

    async def create_snapshot_force(self, ctx: RequestContext, volume_id: str, name: str,
                                    description: str) -> Snapshot:
        """Snapshot a volume even while in use (volume-backed server snapshots)."""
        ...

    async def create_snapshot(self, ctx: RequestContext, volume_id: str, name: str,
                              description: str) -> Snapshot:
        """Snapshot an available volume (400 for one in use)."""
        ...

    async def get_snapshot(self, ctx: RequestContext, snapshot_id: str) -> Snapshot: ...

    async def get_all_snapshots(self, ctx: RequestContext) -> list[Snapshot]:
        """The caller's project's snapshots, oldest first."""
        ...

    async def delete_snapshot(self, ctx: RequestContext, snapshot_id: str) -> None: ...

    async def update_snapshot_status(self, ctx: RequestContext, snapshot_id: str, status: str,
                                     progress: str | None = None) -> None:
        """``os-update_snapshot_status``: a host's report on an assisted snapshot."""
        ...
